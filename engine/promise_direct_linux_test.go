//go:build linux

package engine

import (
	"runtime"
	"testing"
	"time"
	"unsafe"
	"weak"

	"github.com/asyncsteps/asyncsteps/internal/goid"
	"github.com/asyncsteps/asyncsteps/internal/reactortest"
	"github.com/asyncsteps/asyncsteps/reactor"
)

// waitParked waits up to d for r's loop to park (the direct start's
// condition) and reports whether it did.
func waitParked(r *reactor.Reactor, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for !reactor.X.Parked(r) {
		if time.Now().After(deadline) {
			return false
		}
		runtime.Gosched()
	}
	return true
}

// Promise's direct start (startPromiseNow, reactor.X.RunParkedP): a flow
// that ends in Promise's own direct start leaves its Promise ended (Wait's
// one load, Done a closed channel, the values its own), whatever the flow
// did: ended there, ended with an error there, or waited and ended later
// on the loop, where the end closes the channel a Done made meanwhile.
// The steps see the loop (IsSameThread, IsLoopGoroutine) on the caller.
func TestPromiseDirectStartEnd(t *testing.T) {
	r := reactortest.Start(t, reactor.Options{CPU: -1, Spin: reactor.NoSpin})
	if !waitParked(r, 2*time.Second) {
		t.Skip("the loop never parks (the Polling fallback): Promise never runs a turn")
	}
	direct := 0
	for i := range 60 {
		waitParked(r, reactortest.Hang)
		me := goid.Current()
		var onCaller, loopSeen bool
		var x External
		var slab *promiseSlab // the loop's own slab while the step ran
		root := New(r)
		kind := i % 3
		root.Add(func(as *Steps) {
			onCaller = goid.Current() == me
			loopSeen = as.Reactor().IsSameThread() && as.Reactor().IsLoopGoroutine()
			slab = as.e.loopSlab // under the loop word: the loop's field
			switch kind {
			case 0:
				as.Success(Int(int64(i)), Str("v"))
			case 1:
				as.Error("Quiet", "failed")
			case 2:
				x = as.External() // ends later, from another goroutine
			}
		})
		p := root.Promise()
		if !onCaller && kind != 2 {
			// The loop was awake (another wake-up): the start went
			// through the ring; the end is end's, checked below too.
			_, _ = p.Wait()
			root.Release()
			continue
		}
		if onCaller {
			direct++
			if !loopSeen {
				t.Fatalf("flow %d: a step run on the caller did not see the loop", i)
			}
			// Made under the word, from the loop's own slab
			// (startPromiseNow), not the shared one.
			if slab == nil || uintptr(unsafe.Pointer(p)) < uintptr(unsafe.Pointer(&slab.p[0])) ||
				uintptr(unsafe.Pointer(p)) > uintptr(unsafe.Pointer(&slab.p[promiseSlabN-1])) {
				t.Fatalf("flow %d: a Promise started directly is not a slot of the loop's slab", i)
			}
		}
		switch kind {
		case 0:
			if onCaller && p.st.Load() != promiseEnded {
				t.Fatalf("flow %d: ended in Promise's direct start, state %p, want promiseEnded", i, p.st.Load())
			}
			select {
			case <-p.Done():
			default:
				t.Fatalf("flow %d: Done not closed after an end in the direct start", i)
			}
			a, err := p.Wait()
			if err != nil || a.Len() != 2 || a.At(0).Int() != int64(i) || a.At(1).Str() != "v" {
				t.Fatalf("flow %d: Wait = %v, %v", i, a, err)
			}
		case 1:
			if onCaller && p.st.Load() != promiseFailed {
				t.Fatalf("flow %d: failed in Promise's direct start, state %p, want promiseFailed", i, p.st.Load())
			}
			if _, err := p.Wait(); err == nil || err.(*Error).Code != "Quiet" {
				t.Fatalf("flow %d: Wait's error %v, want Quiet", i, err)
			}
		case 2:
			if p.ended() {
				t.Fatalf("flow %d: ended before its External was completed", i)
			}
			ch := p.Done() // made before the end: the end must close it
			go x.Success(Int(7))
			select {
			case <-ch:
			case <-time.After(reactortest.Hang):
				t.Fatalf("flow %d: Done's channel, made before the end, never closed", i)
			}
			if a, err := p.Wait(); err != nil || a.At(0).Int() != 7 {
				t.Fatalf("flow %d: Wait = %v, %v", i, a, err)
			}
		}
		root.Release()
	}
	if direct == 0 {
		t.Fatal("no Promise found its loop parked: the direct start was never taken")
	}
}

// A dropped Promise made under the loop word (startPromiseNow, from the
// loop's own slab) keeps nothing either: the trim tick lets go of the
// loop's slab as of the shared one, so the dropped result is collected
// (TestPromiseDroppedKeepsNoValues for the shared slab).
func TestPromiseLoopSlabDroppedKeepsNoValues(t *testing.T) {
	r := reactortest.Start(t, reactor.Options{CPU: -1, Spin: reactor.NoSpin})
	if !waitParked(r, 2*time.Second) {
		t.Skip("the loop never parks (the Polling fallback): Promise never runs a turn")
	}
	var w weak.Pointer[bigResult]
	direct := false
	for range 20 { // until one start finds the loop parked
		waitParked(r, reactortest.Hang)
		obj := &bigResult{}
		w = weak.Make(obj)
		me := goid.Current()
		root := New(r)
		root.Add(func(as *Steps) {
			direct = goid.Current() == me
			as.Success(Obj(obj))
		})
		a, err := root.Promise().Wait()
		if err != nil || a.At(0).Obj() != any(obj) {
			t.Fatalf("Wait: %v %v", a, err)
		}
		root.Release()
		if direct {
			break
		}
	}
	if !direct {
		t.Skip("no start found the loop parked")
	}
	// Until the trim tick has let go of the loop's slab (about trimEvery).
	deadline := time.Now().Add(3*trimEvery + reactortest.Hang)
	for {
		held := make(chan bool, 1)
		r.Immediate(func() { held <- engineOf(r).loopSlab != nil })
		if !<-held {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the trim tick never let go of the loop's Promise slab")
		}
		time.Sleep(50 * time.Millisecond)
	}
	for range 3 {
		runtime.GC()
	}
	if w.Value() != nil {
		t.Error("a dropped Promise's result made under the loop word is still reachable after the trim tick and GCs")
	}
	runtime.KeepAlive(r)
}
