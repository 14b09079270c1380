package refsteps

import "slices"

// Result is what Run (or the engine harness) reports: each root's log,
// its last line being how the root ended.
type Result struct {
	Logs      [][]string
	Ambiguous bool // two events fell on the same millisecond: skip the program
}

// outcome is what wakes a blocked flow.
type okind uint8

const (
	oGo      okind = iota // run on (a requeued flow)
	oSuccess              // the awaited External succeeded
	oError                // the awaited External failed
	oTimeout              // a timeout of frame fr fired (fr is this step or an ancestor)
	oCancel               // the flow is canceled; pend is what had been delivered and not yet run
	oParDone              // every branch succeeded
	oParFail              // a branch failed with code
)

type outcome struct {
	kind okind
	args []int
	code string
	fr   *frame
	pend *outcome
}

// rkind is how a step (or a sequence) ended, as its caller sees it.
type rkind uint8

const (
	rOK      rkind = iota
	rErr           // an error unwinds
	rTimeout       // the timeout of fr: unwinding (as a cancel) up to fr
	rCancel        // the flow is canceled
	rBreak         // Break(code as the label) unwinds to its loop
	rCont          // Continue(code as the label) unwinds to its loop
)

type res struct {
	kind rkind
	args []int
	code string
	fr   *frame
}

type frame struct {
	s          *Step
	fl         *flow
	onEnd      func() // a Sync step's: leave the mutex (its finally handler)
	live       bool   // not ended
	timed      bool   // its timeout is set and not stopped
	armed      bool   // its External may still complete it
	cancelDone bool
}

type parState struct {
	fl       *flow // the flow waiting on the branches
	branches []*flow
	left     int
}

type flow struct {
	sim     *sim
	root    int
	wake    chan outcome
	yielded chan struct{}
	pending *outcome
	started bool
	ended   bool
	par     *parState // a branch's parallel step
	top     *Step     // a branch's step; nil for a root flow
	held    map[*mutex]bool
}

// mutex is a syncprim.Mutex with an unlimited queue.
type mutex struct {
	max, count int
	queue      []*waiter
}

type waiter struct {
	fl      *flow
	granted bool
}

type timer struct {
	at   int
	seq  int
	fire func()
}

type sim struct {
	now       int
	seq       int
	ready     []*flow
	timers    []*timer
	deadlines map[[2]int]bool // {root, ms} of every event scheduled
	logs      [][]string
	ambiguous bool
	roots     []*flow
	// canceled[i]: root i's Cancel was asked. From then on, no outcome
	// queued for its flows is run: drain cancels the root instead (as the
	// engine's runner does), and the cancel itself runs once the ready
	// queue is empty (the engine's posted cancelRoot), whichever event of
	// the same instant came first.
	canceled  []bool
	mutexes   []*mutex
	throttles []*throttle
}

// throttle is a syncprim.Throttle with an unlimited queue: max entries per
// period; a period starts with the first entry after an idle one.
type throttle struct {
	m                  *sim
	max, period, count int
	armed              bool
	queue              []*waiter
}

func (t *throttle) arm() {
	t.armed = true
	t.m.after(0, t.period, t.tick)
}

// tick ends a period: the next waiters, up to max, are let in and count
// for the new one; with none, the throttle goes idle.
func (t *throttle) tick() {
	n := min(t.max, len(t.queue))
	granted := t.queue[:n:n]
	t.queue = t.queue[n:]
	t.count = n
	if n > 0 {
		t.arm()
	} else {
		t.armed = false
	}
	for _, w := range granted {
		w.granted = true
		w.fl.deliver(outcome{kind: oGo})
	}
}

func (m *sim) log(root int, line string) { m.logs[root] = append(m.logs[root], line) }

// after schedules fire at now+d, for root (whose events must not share a
// millisecond; with mutexes, the roots interact, and no two events may).
func (m *sim) after(root, d int, fire func()) {
	at := m.now + d
	if len(m.mutexes) > 0 || len(m.throttles) > 0 {
		root = 0
	}
	key := [2]int{root, at}
	if m.deadlines[key] {
		m.ambiguous = true
	}
	m.deadlines[key] = true
	m.at(at, fire)
}

// at schedules fire at time at, with no ambiguity check: a root's cancel,
// which wins over every other event of its instant in any order (spec:
// a canceled flow runs nothing but its cancel handlers).
func (m *sim) at(at int, fire func()) {
	m.seq++
	m.timers = append(m.timers, &timer{at: at, seq: m.seq, fire: fire})
}

// next is the index of the timer to fire next (the earliest due by end, the
// first scheduled among equals), or -1.
func (m *sim) next(end int) int {
	i := -1
	for j, t := range m.timers {
		if t.at <= end && (i < 0 || t.at < m.timers[i].at || t.at == m.timers[i].at && t.seq < m.timers[i].seq) {
			i = j
		}
	}
	return i
}

// Run interprets p and returns each root's log.
func Run(p *Program) Result {
	m := &sim{deadlines: map[[2]int]bool{}, logs: make([][]string, len(p.Roots)), canceled: make([]bool, len(p.Roots))}
	for i := range p.Roots {
		m.deadlines[[2]int{i, p.End}] = true
	}
	for _, n := range p.Mutexes {
		m.mutexes = append(m.mutexes, &mutex{max: n})
	}
	for _, th := range p.Throttles {
		m.throttles = append(m.throttles, &throttle{m: m, max: th.Max, period: th.Period})
	}
	for i, rs := range p.Roots {
		fl := m.newFlow(i)
		m.roots = append(m.roots, fl)
		steps := rs.Steps
		go fl.main(func() {
			r := fl.seq(steps, nil)
			switch r.kind {
			case rOK:
				m.log(fl.root, EndOK(r.args))
			case rErr:
				m.log(fl.root, EndErr(r.code))
			default:
				m.log(fl.root, EndCanceled())
			}
		})
		m.ready = append(m.ready, fl)
		fl.pending = &outcome{kind: oGo}
		if rs.CancelAt > 0 {
			m.at(rs.CancelAt, func() { m.canceled[i] = true })
		}
	}
	for {
		m.drain()
		if m.ambiguous {
			break
		}
		i := m.next(p.End)
		if i < 0 {
			break
		}
		// Every timer due at this instant fires, in the order they were
		// set, before any flow runs (one reactor iteration).
		m.now = m.timers[i].at
		for ; i >= 0 && m.timers[i].at == m.now; i = m.next(p.End) {
			t := m.timers[i]
			m.timers = slices.Delete(m.timers, i, i+1)
			t.fire()
		}
	}
	// The harness cancels every root from outside the loop: those cancels
	// all run before the flows they ready.
	m.now = p.End
	for _, fl := range m.roots {
		fl.cancel()
	}
	m.drain()
	// Nothing may be left blocked: end every goroutine (a program the
	// fuzzer marks ambiguous may stop early).
	for _, fl := range m.all() {
		fl.cancel()
	}
	return Result{Logs: m.logs, Ambiguous: m.ambiguous}
}

func (m *sim) all() []*flow { return m.roots } // branches end with their roots

// drain runs the ready flows, in FIFO order, until none is left; a flow of
// a root whose Cancel was asked cancels that root instead of running what
// it was queued for. Then the roots whose Cancel was asked are canceled
// (those whose flows were waiting), and what that readies runs.
func (m *sim) drain() {
	for {
		for len(m.ready) > 0 {
			fl := m.ready[0]
			m.ready = m.ready[1:]
			if fl.ended || fl.pending == nil {
				continue
			}
			if m.canceled[fl.root] {
				m.roots[fl.root].cancel()
				continue
			}
			o := *fl.pending
			fl.pending = nil
			fl.resume(o)
		}
		for i, c := range m.canceled {
			if c {
				m.roots[i].cancel()
			}
		}
		if len(m.ready) == 0 {
			return
		}
	}
}

func (m *sim) newFlow(root int) *flow {
	return &flow{sim: m, root: root, wake: make(chan outcome), yielded: make(chan struct{}), held: map[*mutex]bool{}}
}

// main is a flow's goroutine: it waits to be started, runs body, ends.
func (fl *flow) main(body func()) {
	o := <-fl.wake
	if o.kind == oCancel {
		fl.ended = true
		fl.yielded <- struct{}{}
		return
	}
	body()
	fl.ended = true
	fl.yielded <- struct{}{}
}

// resume hands control to fl until it blocks again or ends.
func (fl *flow) resume(o outcome) {
	fl.started = true
	fl.wake <- o
	<-fl.yielded
}

// block gives control back and waits for an outcome.
func (fl *flow) block() outcome {
	fl.yielded <- struct{}{}
	return <-fl.wake
}

// deliver readies a blocked flow with o (an event woke it).
func (fl *flow) deliver(o outcome) {
	if fl.ended || fl.pending != nil {
		return
	}
	fl.pending = &o
	fl.sim.ready = append(fl.sim.ready, fl)
}

// requeue puts the running flow at the back of the ready queue.
func (fl *flow) requeue() outcome {
	fl.pending = &outcome{kind: oGo}
	fl.sim.ready = append(fl.sim.ready, fl)
	return fl.block()
}

// cancel cancels fl at once: its cancel handlers run, innermost first,
// before cancel returns. A flow that never started just ends.
func (fl *flow) cancel() {
	if fl.ended {
		return
	}
	if !fl.started {
		fl.ended = true
		fl.pending = nil
		// Its goroutine waits for a start: tell it to go.
		fl.started = true
		fl.wake <- outcome{kind: oCancel}
		<-fl.yielded
		return
	}
	o := outcome{kind: oCancel, pend: fl.pending}
	fl.pending = nil
	fl.resume(o)
}

// seq runs steps in order, each given the previous one's values.
func (fl *flow) seq(steps []*Step, args []int) res {
	for _, s := range steps {
		r := fl.exec(s, args)
		if r.kind != rOK {
			return r
		}
		args = r.args
	}
	return res{kind: rOK, args: args}
}

// exec runs one step with its arguments.
func (fl *flow) exec(s *Step, args []int) res {
	f := &frame{s: s, fl: fl, live: true}
	switch s.Kind {
	case Par:
		return fl.parallel(f)
	case Loop:
		return fl.loop(f)
	case Sync:
		return fl.sync(f, args)
	}
	m := fl.sim
	m.log(fl.root, ExecLine(s.ID, args, m.now))
	if s.Timeout > 0 {
		f.timed = true
		m.after(fl.root, s.Timeout, func() {
			if f.timed && !fl.ended {
				f.timed = false
				fl.resume(outcome{kind: oTimeout, fr: f}) // the flow is blocked at or below f
			}
		})
	}
	var r res
	switch s.Act {
	case Succeed:
		r = res{kind: rOK, args: []int{s.Value}}
	case Fail:
		r = res{kind: rErr, code: s.Code}
	case Wait:
		f.armed = true
		m.after(fl.root, s.After, func() {
			if f.armed && !fl.ended {
				f.armed = false
				if s.OK {
					fl.deliver(outcome{kind: oSuccess, args: []int{s.Value}})
				} else {
					fl.deliver(outcome{kind: oError, code: s.Code})
				}
			}
		})
		if s.Stale > 0 {
			m.after(fl.root, s.After+s.Stale, func() {}) // a stale completion: nothing happens
		}
		r = fl.wait()
		f.armed = false
	case Subs:
		r = fl.seq(s.Subs, nil)
	case Brk:
		r = res{kind: rBreak, code: s.Target}
	case Cont:
		r = res{kind: rCont, code: s.Target}
	default:
		if s.Cancel || s.Timeout > 0 {
			r = fl.wait() // implicit success is off: only a timeout or a cancel ends it
		} else {
			r = res{kind: rOK}
		}
	}
	return fl.finish(f, r)
}

// wait blocks the flow in its innermost step until something ends the wait.
func (fl *flow) wait() res {
	o := fl.block()
	switch o.kind {
	case oSuccess:
		return res{kind: rOK, args: o.args}
	case oError:
		return res{kind: rErr, code: o.code}
	case oTimeout:
		return res{kind: rTimeout, fr: o.fr}
	}
	// Canceled: its cancel handler runs, even when its External had
	// succeeded (delivered, not yet run): the cancel wins.
	return res{kind: rCancel}
}

// finish decides how step f ends, given how its callback and sub-steps
// ended (r).
func (fl *flow) finish(f *frame, r res) res {
	f.timed = false // however it ends, its timer is stopped (an error handler runs without it)
	switch r.kind {
	case rOK:
		f.done()
		return r
	case rErr:
		return fl.unwind(f, r.code)
	case rTimeout:
		if r.fr != f {
			fl.runCancel(f) // canceled by an ancestor's timeout
			f.done()
			return r
		}
		// f's own timeout: its descendants are canceled (done, on the way
		// here); f fails with Timeout when its flow runs again.
		if o := fl.requeue(); o.kind == oCancel {
			fl.runCancel(f)
			f.done()
			return res{kind: rCancel}
		}
		return fl.unwind(f, "Timeout")
	case rBreak, rCont:
		fl.runCancel(f) // a step between Break/Continue and its loop is canceled
		f.done()
		return r
	default: // rCancel
		fl.runCancel(f)
		f.done()
		return res{kind: rCancel}
	}
}

// done ends f; a Sync step leaves its mutex then.
func (f *frame) done() {
	if f.live {
		f.live = false
		if f.onEnd != nil {
			f.onEnd()
		}
	}
}

func (fl *flow) runCancel(f *frame) {
	if f.s.Kind == Plain && f.s.Cancel && !f.cancelDone {
		f.cancelDone = true
		fl.sim.log(fl.root, CancelLine(f.s.ID, fl.sim.now))
	}
}

// unwind handles an error of code raised in f or below it (spec 1.2): f's
// cancel handler, then its error handler.
func (fl *flow) unwind(f *frame, code string) res {
	f.timed, f.armed = false, false
	fl.runCancel(f)
	h := f.s.Handler
	if h == nil {
		f.done()
		return res{kind: rErr, code: code}
	}
	fl.sim.log(fl.root, ErrorLine(f.s.ID, code, fl.sim.now))
	switch h.Kind {
	case Recover:
		f.done()
		if f.s.Kind == Par {
			return res{kind: rOK}
		}
		return res{kind: rOK, args: []int{h.Value}}
	case Rethrow:
		f.done()
		return res{kind: rErr, code: h.Code}
	case AddSteps:
		if len(h.Steps) == 0 {
			break
		}
		f.s = withoutHandler(f.s) // a handler runs at most once
		r := fl.seq(h.Steps, nil)
		switch r.kind {
		case rOK:
			f.done()
			return r
		case rErr:
			return fl.unwind(f, r.code) // its cancel handler has run; no handler now
		case rCancel:
			return fl.finish(f, res{kind: rCancel})
		default:
			return fl.finish(f, r)
		}
	}
	f.done()
	return res{kind: rErr, code: code}
}

// withoutHandler returns a copy of s with no error handler.
func withoutHandler(s *Step) *Step {
	c := *s
	c.Handler = nil
	return &c
}

// parallel runs a parallel step: its branches become flows, started in
// order behind the flows already ready; this flow waits for them.
func (fl *flow) parallel(f *frame) res {
	s := f.s
	if len(s.Subs) == 0 {
		f.done()
		return res{kind: rOK}
	}
	m := fl.sim
	ps := &parState{fl: fl, left: len(s.Subs)}
	for _, b := range s.Subs {
		bf := m.newFlow(fl.root)
		bf.par, bf.top = ps, b
		ps.branches = append(ps.branches, bf)
		go bf.main(func() { bf.branch() })
		bf.pending = &outcome{kind: oGo}
		m.ready = append(m.ready, bf)
	}
	o := fl.block()
	switch o.kind {
	case oParDone:
		return fl.finish(f, res{kind: rOK})
	case oParFail:
		return fl.finish(f, res{kind: rErr, code: o.code})
	case oTimeout:
		ps.cancelAll()
		return fl.finish(f, res{kind: rTimeout, fr: o.fr})
	}
	ps.cancelAll()
	return fl.finish(f, res{kind: rCancel})
}

func (ps *parState) cancelAll() {
	for _, bf := range ps.branches {
		bf.cancel()
	}
}

// branch runs a branch flow's step and reports to the parallel step.
func (bf *flow) branch() {
	r := bf.exec(bf.top, nil)
	ps := bf.par
	switch r.kind {
	case rOK:
		ps.left--
		bf.ended = true
		if ps.left == 0 {
			ps.fl.deliver(outcome{kind: oParDone})
		}
	case rErr:
		bf.ended = true
		ps.left = 0
		ps.cancelAll() // siblings, in order, innermost first
		ps.fl.deliver(outcome{kind: oParFail, code: r.code})
	}
	// Canceled: the parallel step's flow is canceling its branches.
}

// loop runs a Repeat step: its body N times, each with no arguments.
func (fl *flow) loop(f *frame) res {
	s := f.s
	for i := 0; i < s.N; i++ {
		r := fl.exec(s.Body, nil)
		switch {
		case r.kind == rOK:
		case (r.kind == rBreak || r.kind == rCont) && (r.code == "" || r.code == s.Label):
			if r.kind == rBreak {
				f.done()
				return res{kind: rOK}
			}
		default:
			return fl.finish(f, r)
		}
	}
	f.done()
	return res{kind: rOK}
}

// sync runs a Sync step: its body inside the mutex, given the step's
// arguments; the body's values flow out. The mutex is left when the step
// ends, after its error handler (and the steps that handler adds).
func (fl *flow) sync(f *frame, args []int) res {
	if f.s.Mutex >= len(fl.sim.mutexes) {
		return fl.throttled(f, args, fl.sim.throttles[f.s.Mutex-len(fl.sim.mutexes)])
	}
	m := fl.sim.mutexes[f.s.Mutex]
	if fl.held[m] {
		return fl.finish(f, fl.exec(f.s.Body, args)) // reentrance: passes through
	}
	fl.held[m] = true
	if m.count < m.max && len(m.queue) == 0 {
		m.count++
		f.onEnd = func() { delete(fl.held, m); m.release() }
		return fl.finish(f, fl.exec(f.s.Body, args))
	}
	w := &waiter{fl: fl}
	m.queue = append(m.queue, w)
	f.onEnd = func() {
		delete(fl.held, m)
		if w.granted {
			m.release()
		} else {
			m.queue = slices.DeleteFunc(m.queue, func(x *waiter) bool { return x == w })
		}
	}
	o := fl.block()
	switch o.kind {
	case oGo: // let in
		return fl.finish(f, fl.exec(f.s.Body, args))
	case oTimeout:
		return fl.finish(f, res{kind: rTimeout, fr: o.fr})
	}
	return fl.finish(f, res{kind: rCancel})
}

// release gives up a slot: handed to the first waiter if there is one.
func (m *mutex) release() {
	if len(m.queue) == 0 {
		m.count--
		return
	}
	w := m.queue[0]
	m.queue = m.queue[1:]
	w.granted = true
	w.fl.deliver(outcome{kind: oGo})
}

// throttled runs a Sync step on a throttle: its body once the throttle lets
// the flow in. An entry spends the period's budget; nothing is given back.
func (fl *flow) throttled(f *frame, args []int, t *throttle) res {
	if t.count < t.max && len(t.queue) == 0 {
		t.count++
		if !t.armed {
			t.arm()
		}
		return fl.finish(f, fl.exec(f.s.Body, args))
	}
	w := &waiter{fl: fl}
	t.queue = append(t.queue, w)
	f.onEnd = func() { t.queue = slices.DeleteFunc(t.queue, func(x *waiter) bool { return x == w }) }
	o := fl.block()
	switch o.kind {
	case oGo:
		return fl.finish(f, fl.exec(f.s.Body, args))
	case oTimeout:
		return fl.finish(f, res{kind: rTimeout, fr: o.fr})
	}
	return fl.finish(f, res{kind: rCancel})
}
