package syncprim

// A queued Mutex waiter waits on a node the Mutex owns (takeNode): the
// release that pops it frees the node at once, so by the time the waiter's
// cancel handler runs its node may be free or another waiter's. The
// handler must then give m on, never take the other waiter out of the
// queue.

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asyncsteps/asyncsteps/engine"
	"github.com/asyncsteps/asyncsteps/reactor"
)

func TestCanceledWaiterWhoseNodeWasReused(t *testing.T) {
	r1, r2 := reactor.NewManual(), reactor.NewManual()
	m := NewMutex(1, 0)
	var log []string
	section := func(name string) engine.ExecFunc {
		return func(as *engine.Steps) {
			if !as.Holds(m) {
				t.Errorf("%s: section without Holds(m)", name)
			}
			log = append(log, name)
		}
	}
	// a holds m on r2 until its External is passed.
	var extA engine.External
	a := engine.New(r2)
	a.Sync(m, func(as *engine.Steps) { extA = as.External() }, nil)
	pa := a.Promise()
	r2.RunUntilIdle()
	// b queues on r1.
	b := engine.New(r1)
	b.Sync(m, section("b"), nil)
	pb := b.Promise()
	r1.RunUntilIdle()
	if st := m.Stats(); st.Holders != 1 || st.Queued != 1 {
		t.Fatalf("a holds, b queued: %+v", st)
	}
	nodeB := m.q.head
	// b's cancel, posted to r1 ahead of the pass a's release will post.
	b.Cancel()
	// a leaves on r2: m is handed to b (its node freed, its pass posted
	// to r1, which does not run yet).
	extA.Pass()
	r2.RunUntilIdle()
	if _, err := pa.Wait(); err != nil {
		t.Fatalf("a: %v", err)
	}
	if m.q.head != nil || m.free != nodeB {
		t.Fatalf("after the hand-over: queue head %p, free %p, want nil and b's node %p", m.q.head, m.free, nodeB)
	}
	// c queues on r2 and takes b's node.
	c := engine.New(r2)
	c.Sync(m, section("c"), nil)
	pc := c.Promise()
	r2.RunUntilIdle()
	if m.q.head != nodeB || nodeB.owner == nil {
		t.Fatalf("c did not reuse b's node")
	}
	// r1: b's cancel runs before its pass: its handler finds its node
	// another step's, and hands m on to c.
	r1.RunUntilIdle()
	if st := m.Stats(); st.Holders != 1 || st.Queued != 0 {
		t.Fatalf("after b's cancel: %+v, want c holding, nobody queued", st)
	}
	r2.RunUntilIdle()
	if got := strings.Join(log, ","); got != "c" {
		t.Fatalf("sections %q, want only c's", got)
	}
	if _, err := pb.Wait(); err == nil || err.(*engine.Error).Code != engine.Canceled {
		t.Fatalf("b ended with %v, want Canceled", err)
	}
	if _, err := pc.Wait(); err != nil {
		t.Fatalf("c: %v", err)
	}
	if st := m.Stats(); st != (Stats{}) {
		t.Fatalf("after: %+v, want zero", st)
	}
}

// TestFreeNodesBounded: a queue that grew in a burst keeps at most
// maxFreeNodes nodes once drained, and reuses them.
func TestFreeNodesBounded(t *testing.T) {
	r := reactor.NewManual()
	m := NewMutex(1, 0)
	var ext engine.External
	a := engine.New(r)
	a.Sync(m, func(as *engine.Steps) { ext = as.External() }, nil)
	a.Execute()
	r.RunUntilIdle()
	const n = 3 * maxFreeNodes
	entered := 0
	for range n {
		w := engine.New(r)
		w.Sync(m, func(*engine.Steps) { entered++ }, nil)
		w.Execute()
	}
	r.RunUntilIdle()
	if st := m.Stats(); st.Queued != n {
		t.Fatalf("%+v, want %d queued", st, n)
	}
	ext.Pass()
	r.RunUntilIdle()
	if entered != n || m.nfree != maxFreeNodes {
		t.Fatalf("%d entered, %d free nodes; want %d and %d", entered, m.nfree, n, maxFreeNodes)
	}
	k := 0
	for w := m.free; w != nil; w = w.next {
		if w.owner != nil || w.state != idle || w.ext != (engine.External{}) || w.m != m {
			t.Fatalf("free node %d not reset: %+v", k, *w)
		}
		k++
	}
	if k != maxFreeNodes {
		t.Fatalf("%d nodes on the free list, nfree %d", k, m.nfree)
	}
}

// TestMutexWaitersAcrossCloseEnd: flows of two real reactors queue on one
// Mutex on nodes it owns while the group closes under them. Every flow
// ends, the section is never entered twice at once, and the Mutex ends
// empty: a waiter ended by the shutdown leaves the queue, or passes on a
// slot it was handed, whichever reactor closed first.
func TestMutexWaitersAcrossCloseEnd(t *testing.T) {
	for round := range 5 {
		g, err := reactor.NewGroup(2, reactor.Options{CPU: -1})
		if err != nil {
			t.Skipf("no real reactor here: %v", err)
		}
		g.Start()
		m := NewMutex(1, 0)
		var inside, entries atomic.Int64
		const flows = 64
		ps := make([]*engine.Promise, flows)
		roots := make([]*engine.Steps, flows)
		for i := range roots {
			wait := func(as *engine.Steps) {
				ext := as.External()
				if i%2 == 0 {
					go ext.Success()
				} else {
					as.Reactor().Immediate(func() { ext.Success() })
				}
			}
			leave := func(*engine.Steps) { inside.Add(-1) }
			section := func(as *engine.Steps) {
				if inside.Add(1) != 1 {
					t.Error("two flows inside the Mutex")
				}
				entries.Add(1)
				as.SetCancel(leave)
				as.Add(wait)
				as.Add(leave)
			}
			root := engine.New(g.Next())
			root.Loop(func(as *engine.Steps) { as.Sync(m, section, nil) })
			roots[i], ps[i] = root, root.Promise()
		}
		for entries.Load() < int64(50*(round+1)) {
			time.Sleep(100 * time.Microsecond)
		}
		if err := g.Close(); err != nil {
			t.Fatalf("close: %v", err)
		}
		for i, p := range ps {
			select {
			case <-p.Done():
			case <-time.After(30 * time.Second):
				t.Fatalf("round %d: flow %d still running after Close", round, i)
			}
		}
		if !eventually(func() bool { return m.Stats() == Stats{} }) {
			t.Fatalf("round %d: %+v after Close, want zero", round, m.Stats())
		}
		for _, root := range roots {
			root.Release()
		}
	}
}
