package engine_test

// Tests of WaitBound (synckit_lock.go): Lock.Wait with the step rebound to
// a waiter the object owns and its cancel handler set, in one call.

import (
	"testing"

	"github.com/asyncsteps/asyncsteps/engine"
	"github.com/asyncsteps/asyncsteps/reactor"
)

// boundObj lets one flow in; the others wait on nodes it owns (no Stack
// record), handed over in FIFO order by its Leave.
type boundObj struct {
	lock    engine.Lock[boundObj]
	inside  bool
	q       []*boundNode
	nilBind bool // Slow passes a nil binding (misuse)
	log     []string
}

type boundNode struct {
	g      *boundObj
	ext    engine.External
	name   string
	queued bool
}

func newBoundObj() *boundObj {
	g := &boundObj{}
	g.lock.Init(g, func(_ *engine.Steps, g *boundObj) bool {
		if g.inside {
			return false
		}
		g.inside = true
		return true
	}, func(_ *engine.Steps, g *boundObj) {
		g.log = append(g.log, "leave")
		if len(g.q) == 0 {
			g.inside = false
			return
		}
		n := g.q[0]
		g.q = g.q[1:]
		n.queued = false
		n.ext.Pass()
	}, boundSlow)
	return g
}

func (g *boundObj) Sync(as *engine.Steps, f engine.ExecFunc, onerror engine.ErrorFunc) {
	engine.AddLocked(as, &g.lock, f, onerror)
}

func boundSlow(as *engine.Steps, g *boundObj, f engine.ExecFunc) {
	n := &boundNode{g: g, queued: true, name: "n" + string(rune('0'+len(g.q)))}
	if g.nilBind {
		n = nil
	}
	ext := engine.WaitBound(as, &g.lock, f, n, func(as *engine.Steps) {
		b := engine.Bound[boundNode](as)
		b.g.log = append(b.g.log, "cancel "+b.name)
		for i, x := range b.g.q {
			if x == b {
				b.g.q = append(b.g.q[:i], b.g.q[i+1:]...)
			}
		}
	})
	n.ext = ext
	g.q = append(g.q, n)
}

func TestWaitBound(t *testing.T) {
	r := reactor.NewManual()
	g := newBoundObj()
	var holder engine.External
	a := engine.New(r)
	a.Sync(g, func(as *engine.Steps) { holder = as.External() }, nil)
	pa := a.Promise()
	r.RunUntilIdle()

	// b waits and is canceled: its handler sees its node.
	b := engine.New(r)
	b.Sync(g, func(*engine.Steps) { g.log = append(g.log, "b section") }, nil)
	pb := b.Promise()
	// c waits, is let in, and sees Holds; Bound there is no longer the node.
	c := engine.New(r)
	c.Sync(g, func(as *engine.Steps) {
		g.log = append(g.log, "c section")
		if !as.Holds(g) {
			t.Error("c: section without Holds")
		}
	}, nil)
	pc := c.Promise()
	r.RunUntilIdle()
	if len(g.q) != 2 {
		t.Fatalf("%d waiting, want 2", len(g.q))
	}
	b.Cancel()
	r.RunUntilIdle()
	holder.Pass()
	r.RunUntilIdle()
	for _, p := range []*engine.Promise{pa, pc} {
		if _, err := p.Wait(); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := pb.Wait(); err == nil || err.(*engine.Error).Code != engine.Canceled {
		t.Fatalf("b: %v, want Canceled", err)
	}
	want := []string{"cancel n0", "leave", "c section", "leave"}
	if len(g.log) != len(want) {
		t.Fatalf("log %q, want %q", g.log, want)
	}
	for i := range want {
		if g.log[i] != want[i] {
			t.Fatalf("log %q, want %q", g.log, want)
		}
	}
	if g.inside || len(g.q) != 0 {
		t.Fatalf("inside %v, %d waiting after all", g.inside, len(g.q))
	}
}

func TestWaitBoundNilBinding(t *testing.T) {
	r := reactor.NewManual()
	g := newBoundObj()
	a := engine.New(r)
	a.Sync(g, func(as *engine.Steps) { as.WaitExternal() }, nil)
	a.Execute()
	r.RunUntilIdle()
	g.nilBind = true
	b := engine.New(r)
	b.Sync(g, func(*engine.Steps) { t.Error("section ran") }, nil)
	pb := b.Promise()
	r.RunUntilIdle()
	if _, err := pb.Wait(); err == nil || err.(*engine.Error).Code != engine.InternalError {
		t.Fatalf("b: %v, want InternalError", err)
	}
	a.Cancel()
	r.RunUntilIdle()
}
