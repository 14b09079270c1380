package engine

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"unsafe"

	"github.com/asyncsteps/asyncsteps/reactor"
)

// keptResult is a flow's result kept past its root's Release: the Promise,
// the *Args its Wait returned, and what they must keep reading.
type keptResult struct {
	p    *Promise
	args *Args
	n    int64
	s    string
}

// resultStep ends its flow with (n, s): s is a fresh heap string, so a
// kept *Args that lost its slab's reachability would read freed memory.
func resultStep(n int64) func(as *Steps) {
	return func(as *Steps) {
		as.Success(Int(n), Str(strings.Repeat(fmt.Sprint(n%10), 40)+fmt.Sprint(n)))
	}
}

func (k keptResult) check(t *testing.T, when string) {
	t.Helper()
	if k.args.Len() != 2 || k.args.At(0).Int() != k.n || k.args.At(1).Str() != k.s {
		t.Fatalf("%s: kept *Args of flow %d reads (%d values) %d %q", when, k.n, k.args.Len(), k.args.At(0).Int(), k.args.At(1).Str())
	}
	a, err := k.p.Wait()
	if err != nil || a != k.args {
		t.Fatalf("%s: kept Promise of flow %d: Wait gives %p %v, want %p", when, k.n, a, err, k.args)
	}
}

// A Promise and the *Args its Wait returned stay the holder's after the
// root's Release, through many reuses of the pooled roots and several
// slabs, and across GCs: `a, err := p.Wait(); root.Release(); use(a)`
// reads its own flow's result, never a later owner's. No slot is handed
// out twice.
func TestPromiseSlabKeptAfterRelease(t *testing.T) {
	r := reactor.NewManual()
	var kept []keptResult
	seen := map[*Promise]bool{}
	for i := range 10 * promiseSlabN {
		n := int64(1000 + i)
		root := New(r)
		root.Add(resultStep(n))
		p := root.Promise()
		if seen[p] {
			t.Fatalf("flow %d got a Promise already handed out", n)
		}
		seen[p] = true
		r.RunUntilIdle()
		a, err := p.Wait()
		if err != nil {
			t.Fatal(err)
		}
		root.Release()
		k := keptResult{p: p, args: a, n: n, s: a.At(1).Str()}
		k.check(t, "right after Release")
		if i%3 == 0 {
			kept = append(kept, k) // the others are dropped: their slabs stay only for the kept ones
		}
		if i%promiseSlabN == 0 {
			runtime.GC()
		}
	}
	runtime.GC()
	runtime.GC()
	for _, k := range kept {
		k.check(t, "after later flows and GCs")
	}
}

// A rerun of a root without Release, and a Release at the end, each keep
// the first Promise's result (the second run gets a Promise of its own).
func TestPromiseSlabRerunKeepsFirst(t *testing.T) {
	r := reactor.NewManual()
	root := New(r)
	root.Add(resultStep(1))
	p1 := root.Promise()
	r.RunUntilIdle()
	a1, err := p1.Wait()
	if err != nil {
		t.Fatal(err)
	}
	k1 := keptResult{p: p1, args: a1, n: 1, s: a1.At(1).Str()}
	root.Add(resultStep(2))
	p2 := root.Promise()
	if p2 == p1 {
		t.Fatal("the rerun got the first run's Promise")
	}
	r.RunUntilIdle()
	a2, err := p2.Wait()
	if err != nil || a2.At(0).Int() != 2 {
		t.Fatalf("rerun: %v %v", a2, err)
	}
	root.Release()
	for range 3 * promiseSlabN {
		root := New(r)
		root.Add(resultStep(3))
		root.Promise()
		root.ReleaseAtEnd() // running until the drive: released at its end
		r.RunUntilIdle()
	}
	k1.check(t, "after a rerun and later flows")
}

// FanOut's shape on two manual reactors: each round starts
// 4 x promiseSlabN flows over both (two slabs' worth a reactor: exactly
// two slabs each, wherever the round begins in them), waits for all,
// releases all. Exactly 4 allocations a round, where a Promise per flow
// made one a flow.
func TestAllocPromiseSlabFanOut(t *testing.T) {
	SkipIfDebug(t) // released roots are never reused there
	rs := []*reactor.Reactor{reactor.NewManual(), reactor.NewManual()}
	roots := make([]*Steps, 4*promiseSlabN)
	ps := make([]*Promise, len(roots))
	step := func(as *Steps) { as.Success(Int(1)) }
	round := func() {
		for i := range roots {
			roots[i] = New(rs[i%2])
			roots[i].Add(step)
			ps[i] = roots[i].Promise()
		}
		rs[0].RunUntilIdle()
		rs[1].RunUntilIdle()
		for i := range roots {
			if args, err := ps[i].Wait(); err != nil || args.At(0).Int() != 1 {
				t.Fatalf("%v %v", args, err)
			}
			roots[i].Release()
			ps[i] = nil
		}
	}
	round()
	round()
	if n := exactAllocs(40, round); n != 4*40 {
		t.Fatalf("%v allocations over 40 rounds of %d flows, want %d (two slabs of %d a reactor a round)", n, len(roots), 4*40, promiseSlabN)
	}
}

// A Promise that could not start its flow (not a root, a running root)
// ends at once with InternalError and takes no slot of a slab.
func TestPromiseSlabFailedPromise(t *testing.T) {
	r := reactor.NewManual()
	root := New(r)
	root.Add(func(as *Steps) { as.Success() })
	p := root.Promise()
	before := rootOf(root).e.promises.cur.Load().next.Load()
	bad := root.Promise() // executing
	if _, err := bad.Wait(); err == nil || err.(*Error).Code != InternalError {
		t.Fatalf("Promise of a running root: %v", err)
	}
	if after := rootOf(root).e.promises.cur.Load().next.Load(); after != before {
		t.Fatalf("a failed Promise took a slot: %d -> %d", before, after)
	}
	r.RunUntilIdle()
	if _, err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	root.Release()
}

// The Promise is 144 bytes and a slab fills the runtime's 2,048-byte size
// class (2,024 used): a larger Promise, or a slab that spills into the
// next class, costs GC work on every flow (promise_slab.go).
func TestPromiseSlabLayout(t *testing.T) {
	if n := unsafe.Sizeof(Promise{}); n != 144 {
		t.Errorf("Promise is %d bytes, want 144", n)
	}
	if n := unsafe.Sizeof(promiseSlab{}); n != 2024 {
		t.Errorf("promiseSlab is %d bytes, want 2024 (of the 2,048-byte class)", n)
	}
}

// A failed flow's error lies in its Promise's values (failErr); the
// Promise reports it, with no values, through Done and Wait, and keeps it
// after Release and later flows from the same slab.
func TestPromiseSlabFailedKept(t *testing.T) {
	r := reactor.NewManual()
	type kept struct {
		p    *Promise
		code string
	}
	var ks []kept
	for i := range 3 * promiseSlabN {
		root := New(r)
		code := fmt.Sprintf("Code%d", i)
		if i%2 == 0 {
			root.Add(func(as *Steps) { as.Error(code, "info") })
		} else {
			root.Add(resultStep(int64(i)))
			code = ""
		}
		p := root.Promise()
		if i%3 == 0 {
			select {
			case <-p.Done():
				t.Fatal("Done closed before the flow ran")
			default:
			}
		}
		r.RunUntilIdle()
		<-p.Done()
		root.Release()
		ks = append(ks, kept{p, code})
	}
	runtime.GC()
	for i, k := range ks {
		a, err := k.p.Wait()
		if k.code == "" {
			if err != nil || a.At(0).Int() != int64(i) {
				t.Fatalf("flow %d: %v %v", i, a, err)
			}
			continue
		}
		if e, ok := err.(*Error); !ok || e.Code != k.code || e.Info != "info" || a != nil || a.Len() != 0 {
			t.Fatalf("flow %d: %v %v, want %s", i, a, err, k.code)
		}
	}
}

// claimKept has goroutines goroutines start flows flows each at once, the
// i-th of goroutine g on on(g, i), each ending with resultStep's result:
// a goroutine waits as wait says (false: it failed the test and stops),
// checks the result, releases the root and keeps its Promise and *Args.
// done is closed when every goroutine has stopped; kept is theirs until
// then.
func claimKept(t *testing.T, goroutines, flows int, on func(g, i int) *reactor.Reactor, wait func(p *Promise, i int, n int64) bool) (kept [][]keptResult, done <-chan struct{}) {
	kept = make([][]keptResult, goroutines)
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range flows {
				n := int64(g*1000 + i)
				root := New(on(g, i))
				root.Add(resultStep(n))
				p := root.Promise()
				if !wait(p, i, n) {
					return
				}
				a, err := p.Wait()
				if err != nil || a.At(0).Int() != n {
					t.Errorf("goroutine %d flow %d: %v %v", g, n, a, err)
					return
				}
				root.Release()
				kept[g] = append(kept[g], keptResult{p: p, args: a, n: n, s: a.At(1).Str()})
			}
		}()
	}
	all := make(chan struct{})
	go func() { wg.Wait(); close(all) }()
	return kept, all
}

// checkKept checks that no Promise of kept was handed out twice and that
// each still reads its own result; it returns how many there are.
func checkKept(t *testing.T, kept [][]keptResult, when string) int {
	t.Helper()
	seen := map[*Promise]bool{}
	for _, ks := range kept {
		for _, k := range ks {
			if seen[k.p] {
				t.Fatalf("flow %d: a Promise handed out twice", k.n)
			}
			seen[k.p] = true
			k.check(t, when)
		}
	}
	return len(seen)
}
