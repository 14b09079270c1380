package timerwheel

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"unsafe"
)

// checkInvariants verifies the invariants listed in doc.go by walking every
// list. It is O(slots + nodes), so tests call it between operations, never
// benchmarks.
func checkInvariants(t testing.TB, w *Wheel) {
	t.Helper()
	now := w.now
	linked := 0
	var levels uint16
	for idx := range w.slots {
		sl := &w.slots[idx]
		lvl, s := uint(idx)>>slotBits, uint(idx)&slotMask
		isReady := idx == whereReady
		var start uint64
		if !isReady {
			start = now&^spanMask[lvl] | uint64(s)<<(lvl*slotBits)
			bit := w.occupied[lvl]&(1<<s) != 0
			if bit != (sl.head != 0) {
				t.Fatalf("slot %d: occupancy bit %v, list empty %v", idx, bit, sl.head == 0)
			}
			if bit {
				levels |= 1 << lvl
				if start <= now {
					t.Fatalf("slot %d: start %d not after now %d", idx, start, now)
				}
				if sl.min < start {
					t.Fatalf("slot %d: min %d before slot start %d", idx, sl.min, start)
				}
			}
		}
		var prev uint32
		for i := sl.head; i != 0; i = w.pool.at(i).next {
			n := w.pool.at(i)
			linked++
			if linked > w.pool.capacity() {
				t.Fatalf("slot %d: list has a cycle", idx)
			}
			if n.prev != prev {
				t.Fatalf("slot %d node %d: prev %d, want %d", idx, i, n.prev, prev)
			}
			if int(n.where) != idx {
				t.Fatalf("slot %d node %d: where %d", idx, i, n.where)
			}
			if n.entry.Fn == nil && n.entry.Cb == nil {
				t.Fatalf("slot %d node %d: pending node without a callback", idx, i)
			}
			if isReady {
				if n.deadline != now {
					t.Fatalf("ready node %d: deadline %d, now %d", i, n.deadline, now)
				}
			} else {
				if n.deadline <= now {
					t.Fatalf("slot %d node %d: deadline %d not after now %d", idx, i, n.deadline, now)
				}
				wl := uint(63-bitsLeading(n.deadline^now)) / slotBits
				ws := uint(n.deadline>>(wl*slotBits)) & slotMask
				if wl<<slotBits|ws != uint(idx) {
					t.Fatalf("node %d deadline %d now %d: in slot %d, belongs in %d", i, n.deadline, now, idx, wl<<slotBits|ws)
				}
				if n.deadline < sl.min {
					t.Fatalf("slot %d node %d: deadline %d below slot min %d", idx, i, n.deadline, sl.min)
				}
			}
			prev = i
		}
		if sl.tail != prev {
			t.Fatalf("slot %d: tail %d, last node %d", idx, sl.tail, prev)
		}
	}
	if levels != w.levels {
		t.Fatalf("level summary %b, occupancy says %b", w.levels, levels)
	}
	if linked != w.pending {
		t.Fatalf("%d nodes linked, pending %d", linked, w.pending)
	}
	free := 0
	for i := w.pool.free; i != 0; i = w.pool.at(i).next {
		n := w.pool.at(i)
		free++
		if free > w.pool.capacity() {
			t.Fatal("free list has a cycle")
		}
		if n.where != whereFree {
			t.Fatalf("free node %d: where %d", i, n.where)
		}
		if n.entry.Fn != nil || n.entry.Cb != nil || n.entry.Arg != nil || n.entry.Aux != 0 {
			t.Fatalf("free node %d retains its Entry", i)
		}
	}
	if free+w.pending != w.pool.capacity() {
		t.Fatalf("free %d + pending %d != capacity %d", free, w.pending, w.pool.capacity())
	}
	if w.pool.at(0).where != whereFree {
		t.Fatal("dummy node 0 is linked")
	}
}

// bitsLeading is a test-local leading-zero count, written independently of
// math/bits so the placement check does not reuse the code it checks.
func bitsLeading(x uint64) int {
	n := 0
	for m := uint64(1) << 63; m != 0 && x&m == 0; m >>= 1 {
		n++
	}
	return n
}

// --- differential test against a naive reference -------------------------

type timerState uint8

const (
	statePending timerState = iota
	stateFired
	stateCanceled
)

// refTimer is the reference model of one timer: the wheel must return
// pending timers in (deadline, seq) order, where deadline is max(at, Now()
// at Add time).
type refTimer struct {
	id       int
	deadline uint64
	seq      int
	h        Handle
	state    timerState
}

type diffHarness struct {
	t       *testing.T
	rng     *rand.Rand
	w       *Wheel
	now     uint64 // the reference's Now()
	timers  []*refTimer
	pending []*refTimer
	handles map[Handle]int

	draining bool
	target   uint64 // the effective Poll tick while draining
	fired    int

	// Per-seed profile, so that some seeds pile up hundreds of timers
	// and others keep the wheel nearly empty and jump far.
	addPct     int
	jumpBits   uint
	maxPending int
}

func newDiffHarness(t *testing.T, seed uint64) *diffHarness {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	var start uint64
	switch rng.IntN(5) {
	case 0:
	case 1:
		start = rng.Uint64N(1 << 20)
	case 2:
		start = rng.Uint64N(1 << 50)
	case 3:
		start = 1<<36 - 3 // a few ticks below a level-6 boundary
	case 4:
		start = 1<<62 + rng.Uint64N(1<<40)
	}
	return &diffHarness{
		t: t, rng: rng, w: New(start), now: start, handles: map[Handle]int{},
		addPct:   []int{35, 50, 65, 80}[rng.IntN(4)],
		jumpBits: []uint{16, 28, 41}[rng.IntN(3)],
	}
}

func cbFire(arg unsafe.Pointer, aux uint64) { (*diffHarness)(arg).onFire(int(aux)) }

// entry alternates closures and Cb entries so both shapes travel through
// the wheel.
func (d *diffHarness) entry(id int) Entry {
	if id%2 == 0 {
		return Entry{Fn: func() { d.onFire(id) }}
	}
	return Entry{Cb: cbFire, Arg: unsafe.Pointer(d), Aux: uint64(id)}
}

func (d *diffHarness) run(e Entry) {
	switch {
	case e.Fn != nil && e.Cb == nil && e.Arg == nil && e.Aux == 0:
		e.Fn()
	case e.Fn == nil && e.Cb != nil && e.Arg == unsafe.Pointer(d):
		e.Cb(e.Arg, e.Aux)
	default:
		d.t.Fatalf("Poll returned a malformed Entry %+v", e)
	}
}

func (d *diffHarness) add(at uint64) {
	id := len(d.timers)
	deadline := max(at, d.now)
	h := d.w.Add(at, d.entry(id))
	if h.IsZero() {
		d.t.Fatal("Add returned the zero Handle")
	}
	if prev, dup := d.handles[h]; dup {
		d.t.Fatalf("Add returned handle %+v again (first for timer %d)", h, prev)
	}
	d.handles[h] = id
	if !d.w.Valid(h) {
		d.t.Fatalf("fresh handle of timer %d is not Valid", id)
	}
	rt := &refTimer{id: id, deadline: deadline, seq: id, h: h}
	d.timers = append(d.timers, rt)
	d.pending = append(d.pending, rt)
}

func (d *diffHarness) remove(rt *refTimer, state timerState) {
	i := slices.Index(d.pending, rt)
	d.pending = slices.Delete(d.pending, i, i+1)
	rt.state = state
}

func (d *diffHarness) cancel(rt *refTimer) {
	want := rt.state == statePending
	if got := d.w.Cancel(rt.h); got != want {
		d.t.Fatalf("Cancel(timer %d, state %d) = %v, want %v", rt.id, rt.state, got, want)
	}
	if want {
		d.remove(rt, stateCanceled)
	}
	if d.w.Valid(rt.h) {
		d.t.Fatalf("timer %d Valid after Cancel", rt.id)
	}
}

func (d *diffHarness) earliest() *refTimer {
	var best *refTimer
	for _, rt := range d.pending {
		if best == nil || rt.deadline < best.deadline || rt.deadline == best.deadline && rt.seq < best.seq {
			best = rt
		}
	}
	return best
}

func (d *diffHarness) onFire(id int) {
	if !d.draining {
		d.t.Fatalf("timer %d ran outside a Poll loop", id)
	}
	rt := d.timers[id]
	want := d.earliest()
	switch {
	case rt.state != statePending:
		d.t.Fatalf("timer %d fired in state %d", id, rt.state)
	case want != rt:
		d.t.Fatalf("timer %d (deadline %d) fired, want timer %d (deadline %d)", id, rt.deadline, want.id, want.deadline)
	case rt.deadline > d.target:
		d.t.Fatalf("timer %d fired early: deadline %d, Poll(%d)", id, rt.deadline, d.target)
	case d.w.Now() != rt.deadline:
		d.t.Fatalf("timer %d fired with Now() %d, deadline %d", id, d.w.Now(), rt.deadline)
	case d.w.Valid(rt.h) || d.w.Cancel(rt.h):
		d.t.Fatalf("timer %d still pending after Poll returned it", id)
	}
	d.remove(rt, stateFired)
	d.now = rt.deadline
	d.fired++
	// Callbacks add and cancel timers, including ones due before the
	// loop's target, which the same loop must then return in order.
	// One add per three fires keeps the population from exploding: each
	// fire spawns a third of a timer on average.
	if d.rng.IntN(3) == 0 {
		switch d.rng.IntN(4) {
		case 0:
			d.add(d.now)
		case 1:
			d.add(d.now - min(d.now, d.rng.Uint64N(50)))
		case 2:
			d.add(d.now + d.rng.Uint64N(d.target-d.now+2))
		default:
			d.add(d.randomAt())
		}
	}
	if d.rng.IntN(4) == 0 {
		d.cancel(d.timers[d.rng.IntN(len(d.timers))])
	}
}

// drain is the caller's loop: Poll(target) until it reports false.
func (d *diffHarness) drain(target uint64) {
	d.draining = true
	d.target = max(target, d.now)
	for {
		e, ok := d.w.Poll(target)
		if !ok {
			break
		}
		d.run(e)
	}
	d.draining = false
	if rt := d.earliest(); rt != nil && rt.deadline <= d.target {
		d.t.Fatalf("Poll(%d) stopped with timer %d (deadline %d) still due", target, rt.id, rt.deadline)
	}
	d.now = d.target
	if d.w.Now() != d.now {
		d.t.Fatalf("after Poll(%d): Now() = %d, want %d", target, d.w.Now(), d.now)
	}
}

// stepTo polls at every NextDeadline up to target, as a reactor that
// sleeps until the next deadline would, checking the bound NextDeadline
// promises and that each such Poll makes progress.
func (d *diffHarness) stepTo(target uint64) {
	last, haveLast := uint64(0), false
	for {
		nd, ok := d.w.NextDeadline()
		want := d.earliest()
		if ok != (want != nil) {
			d.t.Fatalf("NextDeadline ok = %v with %d pending", ok, len(d.pending))
		}
		if !ok {
			break
		}
		if nd < d.w.Now() || nd > want.deadline {
			d.t.Fatalf("NextDeadline = %d, want in [Now() %d, earliest %d]", nd, d.w.Now(), want.deadline)
		}
		if haveLast && nd <= last {
			d.t.Fatalf("NextDeadline = %d after Poll(%d): no progress", nd, last)
		}
		if nd > target {
			break
		}
		d.drain(nd)
		last, haveLast = nd, true
	}
	d.drain(target)
}

func (d *diffHarness) randomPending() *refTimer {
	if len(d.pending) == 0 {
		return nil
	}
	return d.pending[d.rng.IntN(len(d.pending))]
}

// randomAt draws deadlines from every level, exact level boundaries, the
// past, and ties with pending timers.
func (d *diffHarness) randomAt() uint64 {
	now := d.now
	switch d.rng.IntN(11) {
	case 0:
		return now - min(now, d.rng.Uint64N(100))
	case 1:
		return now
	case 2, 3:
		return now + 1 + d.rng.Uint64N(64)
	case 4:
		return now + d.rng.Uint64N(1<<18)
	case 5:
		return now + d.rng.Uint64N(1<<30)
	case 6:
		return now + 1 + d.rng.Uint64N(1<<40)
	case 7:
		return now + 1<<40
	case 8:
		l := d.rng.UintN(8) * slotBits
		b := now | (1<<l - 1) + 1 // the next level-l boundary
		return b - 1 + d.rng.Uint64N(3)
	default:
		if rt := d.randomPending(); rt != nil {
			return rt.deadline
		}
		return now + 5
	}
}

func (d *diffHarness) randomTarget() uint64 {
	now := d.now
	switch d.rng.IntN(7) {
	case 0:
		return now + d.rng.Uint64N(4)
	case 1:
		return now + d.rng.Uint64N(100)
	case 2:
		return now + d.rng.Uint64N(1<<14)
	case 3:
		return now + d.rng.Uint64N(1<<26)
	case 4:
		return now + d.rng.Uint64N(1<<d.jumpBits) // big jumps across levels
	case 5:
		if rt := d.randomPending(); rt != nil {
			return rt.deadline - 1 + d.rng.Uint64N(3)
		}
		return now + 1
	default:
		return now - min(now, d.rng.Uint64N(10)) // behind Now(): a no-op advance
	}
}

func (d *diffHarness) check() {
	if got, want := d.w.Len(), len(d.pending); got != want {
		d.t.Fatalf("Len() = %d, want %d", got, want)
	}
	if d.w.Now() != d.now {
		d.t.Fatalf("Now() = %d, want %d", d.w.Now(), d.now)
	}
}

func TestDifferential(t *testing.T) {
	seeds, ops := 300, 3000
	if raceEnabled || testing.Short() {
		seeds, ops = 40, 1500
	}
	var adds, fires, cancels, cascades uint64
	maxPending := 0
	for seed := range uint64(seeds) {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			d := newDiffHarness(t, seed)
			for op := range ops {
				r := d.rng.IntN(100)
				switch {
				case r < d.addPct:
					d.add(d.randomAt())
				case r < d.addPct+5:
					if rt := d.randomPending(); rt != nil {
						d.cancel(rt)
					}
				case r < d.addPct+8:
					if len(d.timers) > 0 { // mostly stale by now
						d.cancel(d.timers[d.rng.IntN(len(d.timers))])
					}
				case r < d.addPct+10:
					if len(d.timers) > 0 {
						rt := d.timers[d.rng.IntN(len(d.timers))]
						if got, want := d.w.Valid(rt.h), rt.state == statePending; got != want {
							t.Fatalf("Valid(timer %d) = %v, want %v", rt.id, got, want)
						}
					}
				case r < d.addPct+(100-d.addPct)/2:
					d.drain(d.randomTarget())
				default:
					d.stepTo(d.randomTarget())
				}
				d.check()
				d.maxPending = max(d.maxPending, len(d.pending))
				if op%8 == 0 {
					checkInvariants(t, d.w)
				}
			}
			// Callbacks keep adding while this drains, so repeat until
			// nothing is left.
			for round := 0; len(d.pending) > 0 && round < 100; round++ {
				last := uint64(0)
				for _, rt := range d.pending {
					last = max(last, rt.deadline)
				}
				d.stepTo(last)
			}
			d.check()
			checkInvariants(t, d.w)
			if len(d.pending) != 0 {
				t.Fatalf("%d timers pending after stepping to the last deadline", len(d.pending))
			}
			st := d.w.Stats()
			if st.Adds != uint64(len(d.timers)) || st.Fires != uint64(d.fired) || st.Fires+st.Cancels != st.Adds || st.Pending != 0 {
				t.Fatalf("Stats %+v after %d adds, %d fires", st, len(d.timers), d.fired)
			}
			adds, fires, cancels, cascades = adds+st.Adds, fires+st.Fires, cancels+st.Cancels, cascades+st.Cascades
			maxPending = max(maxPending, d.maxPending)
		})
	}
	t.Logf("%d seeds: %d adds, %d fires, %d cancels, %d cascades, up to %d pending", seeds, adds, fires, cancels, cascades, maxPending)
}

// --- deterministic behaviour -------------------------------------------------

// recorder collects (name, Now()) pairs as a caller's Poll loop runs them.
type recorder struct {
	w   *Wheel
	got []string
}

func (r *recorder) fn(name string) Entry {
	return Entry{Fn: func() { r.got = append(r.got, fmt.Sprintf("%s@%d", name, r.w.Now())) }}
}

func (r *recorder) drain(t uint64) {
	for {
		e, ok := r.w.Poll(t)
		if !ok {
			return
		}
		e.Fn()
	}
}

func TestFiringOrder(t *testing.T) {
	const max64 = math.MaxUint64
	type op struct {
		add  string // name of a timer to add at tick at; empty for a Poll
		at   uint64
		poll uint64
	}
	tests := []struct {
		name  string
		start uint64
		ops   []op
		want  []string
	}{{
		name: "equal deadlines keep Add order across a cascade",
		ops: []op{
			{add: "a", at: 100}, // level 1 from now 0
			{poll: 50},
			{add: "b", at: 100}, // still level 1, same slot as a
			{poll: 64},          // cascades a and b to level 0
			{add: "c", at: 100}, // level 0, behind a and b
			{add: "d", at: 99},
			{poll: 100},
		},
		want: []string{"d@99", "a@100", "b@100", "c@100"},
	}, {
		name: "delays of 2^40 fire exactly",
		ops: []op{
			{add: "a", at: 1 << 40},
			{poll: 1<<40 - 5},
			{add: "b", at: 1 << 40},
			{add: "c", at: 1<<40 - 1},
			{poll: 1<<40 - 2},
			{poll: 1 << 40},
		},
		want: []string{"c@1099511627775", "a@1099511627776", "b@1099511627776"},
	}, {
		name:  "past deadlines are due now, in Add order",
		start: 1000,
		ops: []op{
			{add: "a", at: 5},
			{add: "b", at: 1000},
			{add: "c", at: 0},
			{add: "d", at: 1001},
			{poll: 999}, // behind Now(): still returns what is due at 1000
		},
		want: []string{"a@1000", "b@1000", "c@1000"},
	}, {
		name:  "deadlines at the end of uint64",
		start: max64 - 70,
		ops: []op{
			{add: "a", at: max64},
			{add: "b", at: max64 - 1},
			{add: "c", at: max64 - 64},
			{poll: max64},
		},
		want: []string{"c@18446744073709551551", "b@18446744073709551614", "a@18446744073709551615"},
	}, {
		name: "a huge jump fires everything in order",
		ops: []op{
			{add: "e", at: 1 << 60},
			{add: "a", at: 1},
			{add: "d", at: 1 << 40},
			{add: "b", at: 64},
			{add: "c", at: 4096},
			{poll: max64},
		},
		want: []string{"a@1", "b@64", "c@4096", "d@1099511627776", "e@1152921504606846976"},
	}, {
		name: "nothing fires a tick early",
		ops: []op{
			{add: "a", at: 4096},
			{add: "b", at: 4097},
			{poll: 4095},
			{poll: 4096},
		},
		want: []string{"a@4096"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &recorder{w: New(tt.start)}
			for _, o := range tt.ops {
				if o.add != "" {
					r.w.Add(o.at, r.fn(o.add))
				} else {
					r.drain(o.poll)
				}
				checkInvariants(t, r.w)
			}
			if !slices.Equal(r.got, tt.want) {
				t.Fatalf("fired %v, want %v", r.got, tt.want)
			}
		})
	}
}

func TestAddFromCallback(t *testing.T) {
	w := New(0)
	var got []uint64
	var tick func()
	tick = func() {
		got = append(got, w.Now())
		if w.Now() < 100 {
			w.Add(w.Now()+10, Entry{Fn: tick}) // re-arm relative to the deadline
		}
	}
	w.Add(10, Entry{Fn: tick})
	var order []string
	w.Add(50, Entry{Fn: func() {
		order = append(order, "x")
		// Due now: must run in this loop, after what is already due at 50.
		w.Add(0, Entry{Fn: func() { order = append(order, "late") }})
	}})
	w.Add(50, Entry{Fn: func() { order = append(order, "y") }})
	n := 0
	for {
		e, ok := w.Poll(1000) // one Poll loop jumping far past every deadline
		if !ok {
			break
		}
		e.Fn()
		n++
	}
	if want := []uint64{10, 20, 30, 40, 50, 60, 70, 80, 90, 100}; !slices.Equal(got, want) {
		t.Errorf("periodic timer fired at %v, want %v", got, want)
	}
	if want := []string{"x", "y", "late"}; !slices.Equal(order, want) {
		t.Errorf("order %v, want %v", order, want)
	}
	if n != 13 || w.Len() != 0 || w.Now() != 1000 {
		t.Errorf("fired %d, Len %d, Now %d; want 13, 0, 1000", n, w.Len(), w.Now())
	}
}

func TestStaleHandles(t *testing.T) {
	e := Entry{Fn: func() {}}
	tests := []struct {
		name string
		run  func(t *testing.T, w *Wheel)
	}{{
		name: "zero handle",
		run: func(t *testing.T, w *Wheel) {
			var h Handle
			if !h.IsZero() || w.Valid(h) || w.Cancel(h) {
				t.Fatal("the zero Handle matched a timer")
			}
		},
	}, {
		name: "cancel twice",
		run: func(t *testing.T, w *Wheel) {
			h := w.Add(10, e)
			if !w.Cancel(h) {
				t.Fatal("first Cancel = false")
			}
			if w.Cancel(h) || w.Valid(h) {
				t.Fatal("second Cancel matched")
			}
		},
	}, {
		name: "cancel after fire",
		run: func(t *testing.T, w *Wheel) {
			h := w.Add(10, e)
			if _, ok := w.Poll(10); !ok {
				t.Fatal("timer did not fire")
			}
			if w.Valid(h) || w.Cancel(h) {
				t.Fatal("fired handle still matches")
			}
		},
	}, {
		name: "handle of a reused node",
		run: func(t *testing.T, w *Wheel) {
			old := w.Add(10, e)
			w.Cancel(old)
			fresh := w.Add(20, e)
			if fresh.idx != old.idx {
				t.Fatalf("node not reused: %d then %d", old.idx, fresh.idx)
			}
			if fresh == old || w.Valid(old) || w.Cancel(old) {
				t.Fatal("old handle matches the reused node")
			}
			if !w.Valid(fresh) || w.Len() != 1 || !w.Cancel(fresh) {
				t.Fatal("new handle does not match its own timer")
			}
		},
	}, {
		name: "handle beyond the pool",
		run: func(t *testing.T, w *Wheel) {
			h := Handle{idx: 1 << 30}
			if w.Valid(h) || w.Cancel(h) {
				t.Fatal("out-of-range handle matched")
			}
		},
	}, {
		name: "never-issued generation of a free node",
		run: func(t *testing.T, w *Wheel) {
			h := Handle{idx: 7} // gen 0 of a node still on the free list
			if w.Valid(h) || w.Cancel(h) {
				t.Fatal("handle of a free node matched")
			}
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := New(0)
			tt.run(t, w)
			checkInvariants(t, w)
			if st := w.Stats(); st.Pending != w.Len() || st.Cancels+st.Fires+uint64(st.Pending) != st.Adds {
				t.Fatalf("inconsistent Stats %+v", st)
			}
		})
	}
}

func TestNextDeadline(t *testing.T) {
	e := Entry{Fn: func() {}}
	tests := []struct {
		name   string
		setup  func(w *Wheel)
		want   uint64
		wantOK bool
	}{
		{"empty", func(w *Wheel) {}, 0, false},
		{"level 0 is exact", func(w *Wheel) { w.Add(30, e); w.Add(20, e) }, 20, true},
		{"higher level is exact without cancels", func(w *Wheel) { w.Add(5000, e); w.Add(4200, e) }, 4200, true},
		{"far future", func(w *Wheel) { w.Add(1<<40+3, e) }, 1<<40 + 3, true},
		{"due now", func(w *Wheel) { w.Add(0, e); w.Add(7, e) }, 0, true},
		{"cancel leaves a lower bound", func(w *Wheel) { h := w.Add(4200, e); w.Add(5000, e); w.Cancel(h) }, 4200, true},
		{"cancel of the last timer empties", func(w *Wheel) { w.Cancel(w.Add(4200, e)) }, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := New(0)
			tt.setup(w)
			got, ok := w.NextDeadline()
			if got != tt.want || ok != tt.wantOK {
				t.Fatalf("NextDeadline() = %d, %v; want %d, %v", got, ok, tt.want, tt.wantOK)
			}
		})
	}

	// After a Poll at a stale lower bound, the bound becomes exact.
	w := New(0)
	h := w.Add(4200, e)
	w.Add(5000, e)
	w.Cancel(h)
	if _, ok := w.Poll(4200); ok {
		t.Fatal("Poll at a stale bound fired")
	}
	if got, _ := w.NextDeadline(); got != 5000 {
		t.Fatalf("NextDeadline() after re-poll = %d, want 5000", got)
	}
}

func TestBigJumpsAreCheap(t *testing.T) {
	w := New(3)
	deadlines := []uint64{1 << 20, 1<<40 + 1, 1 << 50, 1<<62 + 12345, 7}
	for _, d := range deadlines {
		w.Add(d, Entry{Fn: func() {}})
	}
	// An implementation that walked empty ticks would never finish this.
	fired := 0
	for {
		if _, ok := w.Poll(1 << 63); !ok {
			break
		}
		fired++
	}
	st := w.Stats()
	if fired != len(deadlines) || w.Now() != 1<<63 {
		t.Fatalf("fired %d of %d, Now %d", fired, len(deadlines), w.Now())
	}
	if limit := uint64(len(deadlines) * numLevels); st.Cascades > limit {
		t.Fatalf("%d cascades for %d timers, want <= %d", st.Cascades, len(deadlines), limit)
	}
	// Idle polls move time without touching any slot.
	for i := range uint64(1000) {
		if _, ok := w.Poll(1<<63 + i*1e9); ok {
			t.Fatal("an empty wheel fired")
		}
	}
	if w.Stats().Cascades != st.Cascades || w.Now() != 1<<63+999e9 {
		t.Fatalf("idle polls cascaded or lost time: %+v, Now %d", w.Stats(), w.Now())
	}
}

func TestPoolGrowthAndRelease(t *testing.T) {
	w := New(0)
	const n = 5*chunkLen + 17
	var hs []Handle
	for i := range n {
		hs = append(hs, w.Add(uint64(1+i%700), Entry{Fn: func() {}, Aux: 1}))
	}
	if st := w.Stats(); st.NodesAllocated < n || st.Pending != n {
		t.Fatalf("Stats %+v after %d adds", st, n)
	}
	for i := 0; i < n; i += 2 {
		if !w.Cancel(hs[i]) {
			t.Fatalf("Cancel(%d) = false", i)
		}
	}
	checkInvariants(t, w)
	fired := 0
	for {
		if _, ok := w.Poll(1000); !ok {
			break
		}
		fired++
	}
	if fired != n/2 || w.Len() != 0 {
		t.Fatalf("fired %d, Len %d; want %d, 0", fired, w.Len(), n/2)
	}
	// checkInvariants also asserts every free node has a zero Entry: the
	// wheel must not keep callbacks reachable after fire or cancel.
	checkInvariants(t, w)
}

func TestReserve(t *testing.T) {
	w := New(0)
	const n = 3000
	w.Reserve(n)
	st := w.Stats()
	if st.NodesAllocated < n {
		t.Fatalf("NodesAllocated %d after Reserve(%d)", st.NodesAllocated, n)
	}
	e := Entry{Fn: func() {}}
	i := uint64(0)
	// AllocsPerRun calls f twice: once to warm up, once measured.
	allocs := testing.AllocsPerRun(1, func() {
		for range n / 2 {
			i++
			w.Add(i, e)
		}
	})
	if allocs != 0 || w.Stats().NodesAllocated != st.NodesAllocated {
		t.Fatalf("%v allocs adding reserved timers; pool %d -> %d", allocs, st.NodesAllocated, w.Stats().NodesAllocated)
	}
}

func TestZeroAllocs(t *testing.T) {
	e := Entry{Fn: func() {}}
	for _, bg := range []int{0, 100_000} {
		t.Run(fmt.Sprint("background=", bg), func(t *testing.T) {
			w := New(0)
			rng := rand.New(rand.NewPCG(1, 2))
			for range bg {
				w.Add(1<<30+rng.Uint64N(1<<30), e)
			}
			now := w.Now()
			w.Cancel(w.Add(now+1000, e)) // warm
			if a := testing.AllocsPerRun(1000, func() {
				h := w.Add(now+1000, e)
				if !w.Cancel(h) {
					t.Fatal("Cancel failed")
				}
			}); a != 0 {
				t.Errorf("Add+Cancel: %v allocs/op, want 0", a)
			}
			if a := testing.AllocsPerRun(1000, func() {
				now++
				w.Add(now, e)
				if _, ok := w.Poll(now); !ok {
					t.Fatal("timer did not fire")
				}
			}); a != 0 {
				t.Errorf("Add+Poll: %v allocs/op, want 0", a)
			}
			if a := testing.AllocsPerRun(1000, func() {
				now += 1000
				if _, ok := w.Poll(now); ok {
					t.Fatal("idle wheel fired")
				}
			}); a != 0 {
				t.Errorf("idle Poll: %v allocs/op, want 0", a)
			}
			if w.Len() != bg {
				t.Fatalf("Len %d, want %d", w.Len(), bg)
			}
		})
	}
}

func TestAddRejectsEmptyEntry(t *testing.T) {
	w := New(0)
	defer func() {
		if recover() == nil {
			t.Fatal("Add(Entry{}) did not panic")
		}
		if w.Len() != 0 {
			t.Fatalf("Len %d after a rejected Add", w.Len())
		}
	}()
	w.Add(5, Entry{Arg: unsafe.Pointer(w)})
}

// A node is exactly one cache line and chunks are large enough to be
// allocated page-aligned without a malloc header, so touching a node never
// pulls in a second line.
func TestNodeLayout(t *testing.T) {
	if got := unsafe.Sizeof(node{}); got != 64 {
		t.Fatalf("node is %d bytes, want 64", got)
	}
	if got := unsafe.Sizeof(Handle{}); got != 16 {
		t.Fatalf("Handle is %d bytes, want 16", got)
	}
	w := New(0)
	w.Reserve(4 * chunkLen)
	for i, c := range w.pool.chunks {
		if p := uintptr(unsafe.Pointer(c)); p%64 != 0 {
			t.Fatalf("chunk %d at %#x is not 64-byte aligned", i, p)
		}
	}
}

func TestZeroWheel(t *testing.T) {
	var w Wheel
	if _, ok := w.NextDeadline(); ok || w.Len() != 0 || w.Valid(Handle{idx: 1}) {
		t.Fatal("zero Wheel is not empty")
	}
	r := &recorder{w: &w}
	w.Add(3, r.fn("a"))
	w.Add(1, r.fn("b"))
	r.drain(10)
	if want := []string{"b@1", "a@3"}; !slices.Equal(r.got, want) {
		t.Fatalf("fired %v, want %v", r.got, want)
	}
	checkInvariants(t, &w)
}
