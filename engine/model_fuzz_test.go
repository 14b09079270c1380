package engine_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/asyncsteps/asyncsteps/engine"
	"github.com/asyncsteps/asyncsteps/internal/refsteps"
	"github.com/asyncsteps/asyncsteps/reactor"
	"github.com/asyncsteps/asyncsteps/syncprim"
)

// runOnEngine runs p on a manual reactor and returns each root's log, in
// the interpreter's format, and what the engine's pools hold at the end.
func runOnEngine(t testing.TB, p *refsteps.Program) [][]string {
	return runOnEngineWith(t, p, nil)
}

// runOnEngineWith is runOnEngine with a fault injector: inject is called
// at the start of every step callback with the root's index and the
// number of callbacks that root ran before; it returns true to cancel that
// root from inside the callback.
func runOnEngineWith(t testing.TB, p *refsteps.Program, inject func(root, n int) bool) [][]string {
	r := reactor.NewManual()
	execs := make([]int, len(p.Roots))
	var roots []*engine.Steps
	start := r.Now()
	now := func() int { return int(r.Now().Sub(start) / time.Millisecond) }
	logs := make([][]string, len(p.Roots))
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	var objects []engine.Sync
	for _, n := range p.Mutexes {
		objects = append(objects, syncprim.NewMutex(n, syncprim.Unlimited))
	}
	for _, th := range p.Throttles {
		objects = append(objects, syncprim.NewThrottle(r, th.Max, ms(th.Period), syncprim.Unlimited))
	}
	// Each root logs into the log its state names, so that a clone (which
	// copies the state) is pointed at its own.
	logOf := func(as *engine.Steps) *[]string { return as.Get("log").(*[]string) }
	argsOf := func(as *engine.Steps) []int {
		var a []int
		for i := 0; i < as.Args().Len(); i++ {
			a = append(a, int(as.Arg(i).Int()))
		}
		return a
	}
	var add func(as *engine.Steps, s *refsteps.Step)
	var handler func(s *refsteps.Step) engine.ErrorFunc
	exec := func(s *refsteps.Step) engine.ExecFunc {
		return func(as *engine.Steps) {
			log := logOf(as)
			*log = append(*log, refsteps.ExecLine(s.ID, argsOf(as), now()))
			if inject != nil {
				i := -1
				for k := range logs {
					if &logs[k] == log {
						i = k
					}
				}
				if inject(i, execs[i]) {
					roots[i].Cancel()
				}
				execs[i]++
			}
			if s.Cancel {
				as.SetCancel(func(*engine.Steps) { *log = append(*log, refsteps.CancelLine(s.ID, now())) })
			}
			if s.ID%3 == 0 {
				// Stack memory on some steps: the arena must get it all back.
				p := engine.Stack[[4]int64](as)
				p[0] = int64(s.ID)
			}
			if s.Timeout > 0 {
				as.SetTimeout(ms(s.Timeout))
			}
			switch s.Act {
			case refsteps.Succeed:
				as.Success(engine.Int(int64(s.Value)))
			case refsteps.Fail:
				as.Error(s.Code)
			case refsteps.Wait:
				x := as.External()
				r.Deferred(ms(s.After), func() {
					if s.OK {
						x.Success(engine.Int(int64(s.Value)))
					} else {
						x.Error(s.Code)
					}
				})
				if s.Stale > 0 {
					r.Deferred(ms(s.After+s.Stale), func() {
						if x.Success(engine.Int(999)) {
							*log = append(*log, "STALE EXTERNAL ACCEPTED")
						}
					})
				}
			case refsteps.Subs:
				for _, c := range s.Subs {
					add(as, c)
				}
			case refsteps.Brk:
				if s.Target != "" {
					as.Break(s.Target)
				}
				as.Break()
			case refsteps.Cont:
				if s.Target != "" {
					as.Continue(s.Target)
				}
				as.Continue()
			}
		}
	}
	handler = func(s *refsteps.Step) engine.ErrorFunc {
		h := s.Handler
		if h == nil {
			return nil
		}
		return func(as *engine.Steps, code string) {
			log := logOf(as)
			*log = append(*log, refsteps.ErrorLine(s.ID, code, now()))
			switch h.Kind {
			case refsteps.Recover:
				if s.Kind == refsteps.Par {
					as.Success()
				} else {
					as.Success(engine.Int(int64(h.Value)))
				}
			case refsteps.Rethrow:
				as.Error(h.Code)
			case refsteps.AddSteps:
				for _, c := range h.Steps {
					add(as, c)
				}
			}
		}
	}
	add = func(as *engine.Steps, s *refsteps.Step) {
		eh := handler(s)
		var ehs []engine.ErrorFunc
		if eh != nil {
			ehs = append(ehs, eh)
		}
		switch s.Kind {
		case refsteps.Par:
			par := as.Parallel(ehs...)
			for _, b := range s.Subs {
				if beh := handler(b); beh != nil {
					par.Add(exec(b), beh)
				} else {
					par.Add(exec(b))
				}
			}
		case refsteps.Loop:
			body := exec(s.Body)
			var label []string
			if s.Label != "" {
				label = append(label, s.Label)
			}
			as.Repeat(s.N, func(as *engine.Steps, i int) { body(as) }, label...)
		case refsteps.Sync:
			as.Sync(objects[s.Mutex], exec(s.Body), eh)
		default:
			as.Add(exec(s), ehs...)
		}
	}
	var promises []*engine.Promise
	for i, rs := range p.Roots {
		var root *engine.Steps
		if rs.CloneOf >= 0 {
			root = roots[rs.CloneOf].Clone()
		} else {
			root = engine.New(r)
			for _, s := range rs.Steps[:rs.Own] {
				add(root, s) // the rest come from CopyFrom below
			}
		}
		root.Set("log", &logs[i])
		if rs.CopyFrom >= 0 {
			root.CopyFrom(roots[rs.CopyFrom])
		}
		if rs.CancelAt > 0 {
			r.Deferred(ms(rs.CancelAt), root.Cancel)
		}
		roots = append(roots, root)
	}
	for _, root := range roots {
		promises = append(promises, root.Promise())
	}
	r.RunUntilIdle()
	r.Advance(ms(p.End))
	for _, root := range roots {
		root.Cancel()
	}
	r.RunUntilIdle()
	for i, pr := range promises {
		select {
		case <-pr.Done():
		default:
			t.Fatalf("root %d: the flow did not end after its cancel", i)
		}
		args, err := pr.Wait()
		switch e, _ := err.(*engine.Error); {
		case err == nil:
			var a []int
			for j := 0; j < args.Len(); j++ {
				a = append(a, int(args.At(j).Int()))
			}
			logs[i] = append(logs[i], refsteps.EndOK(a))
		case e != nil && e.Code == engine.Canceled:
			logs[i] = append(logs[i], refsteps.EndCanceled())
		case e != nil:
			logs[i] = append(logs[i], refsteps.EndErr(e.Code))
		default:
			t.Fatalf("root %d: error %v of type %T", i, err, err)
		}
	}
	if st := engine.StatsOf(r); st.FramesLive != 0 || st.FlowsLive != 0 {
		t.Fatalf("after every flow ended: %+v, want no live frame or flow", st)
	}
	for _, root := range roots {
		root.Release()
	}
	if st := engine.StatsOf(r); st.RootsLive != 0 {
		t.Fatalf("after Release: %+v, want no live root", st)
	}
	if a := engine.ArenaStats(r); a.ObjectsInUse != 0 {
		t.Fatalf("arena holds %d objects", a.ObjectsInUse)
	}
	return logs
}

// describe prints a program for a failure message.
func describe(p *refsteps.Program) string {
	var b strings.Builder
	var step func(s *refsteps.Step, indent string)
	step = func(s *refsteps.Step, indent string) {
		fmt.Fprintf(&b, "%s#%d %+v\n", indent, s.ID, *s)
		for _, c := range s.Subs {
			step(c, indent+"  ")
		}
		if s.Body != nil {
			step(s.Body, indent+"  body ")
		}
		if s.Handler != nil {
			for _, c := range s.Handler.Steps {
				step(c, indent+"  h ")
			}
		}
	}
	fmt.Fprintf(&b, "mutexes %v throttles %v\n", p.Mutexes, p.Throttles)
	for i, r := range p.Roots {
		fmt.Fprintf(&b, "root %d (cancel at %d, clone of %d, copy from %d)\n", i, r.CancelAt, r.CloneOf, r.CopyFrom)
		if r.CloneOf >= 0 {
			continue
		}
		for _, s := range r.Steps {
			step(s, "  ")
		}
	}
	return b.String()
}

// FuzzModel decodes a random step program, runs it on the engine and on
// the reference interpreter, and requires the same per-root event log and
// result, with every frame, flow and root given back.
func FuzzModel(f *testing.F) {
	for _, seed := range [][]byte{
		{},
		{0, 0, 0, 1},
		{1, 2, 3, 4, 5, 6, 7, 8, 9, 10},
		[]byte("parallel branches fail and cancel"),
		[]byte("\x00\x03\x00\x04\x03\x03\x05\x07\x00\x03\x02\x01"),
		[]byte("\x02\x01\x02\x00\x04\x06\x03\x10\x00\x02\x02\x00\x03\x40\x01\x01\x07\x02\x05"),
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p := refsteps.Decode(data)
		want := refsteps.Run(p)
		if want.Ambiguous {
			return // two events on one millisecond: their order is not specified
		}
		got := runOnEngine(t, p)
		for i := range p.Roots {
			if !slices.Equal(got[i], want.Logs[i]) {
				t.Fatalf("root %d differs\nengine: %q\nmodel:  %q\nprogram:\n%s", i, got[i], want.Logs[i], describe(p))
			}
		}
	})
}
