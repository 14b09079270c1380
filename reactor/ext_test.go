package reactor_test

import (
	"testing"

	"github.com/asyncsteps/asyncsteps/reactor"
)

// Two layers attach with their own keys: neither sees or replaces the
// other's value, and the loop runs both hooks and closes both.
func TestExtKeysAreSeparate(t *testing.T) {
	r := reactor.NewManual()
	a, b := reactor.X.NewExtKey("a"), reactor.X.NewExtKey("b")
	var ranA, ranB, closedA, closedB int
	pendingB := true
	va := reactor.X.ExtOrInit(r, a, func() reactor.Ext {
		return reactor.Ext{Value: "A", Run: func() bool { ranA++; return false }, Close: func() { closedA++ }}
	})
	vb := reactor.X.ExtOrInit(r, b, func() reactor.Ext {
		return reactor.Ext{Value: "B", Run: func() bool { ranB++; pendingB = false; return false }, Close: func() { closedB++ }, Pending: &pendingB}
	})
	again := reactor.X.ExtOrInit(r, a, func() reactor.Ext { t.Fatal("init ran twice for one key"); return reactor.Ext{} })
	if va != "A" || vb != "B" || again != "A" || reactor.X.Ext(r, a) != "A" || reactor.X.Ext(r, b) != "B" {
		t.Fatalf("values: %v %v %v %v %v, want A B A A B", va, vb, again, reactor.X.Ext(r, a), reactor.X.Ext(r, b))
	}
	if v := reactor.X.Ext(r, reactor.X.NewExtKey("a")); v != nil {
		t.Fatalf("a new key with the same name read %v, want nil", v)
	}
	r.Immediate(func() {})
	r.RunUntilIdle()
	r.Immediate(func() {})
	r.RunUntilIdle()
	if ranA < 2 || ranB != 1 {
		t.Fatalf("hooks ran a=%d b=%d, want a>=2 (no Pending flag) and b=1 (Pending cleared)", ranA, ranB)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if closedA != 1 || closedB != 1 {
		t.Fatalf("Close hooks ran a=%d b=%d, want 1 each", closedA, closedB)
	}
}
