package reactor_test

import (
	"testing"

	"github.com/asyncsteps/asyncsteps/reactor"
)

// Two layers attach with their own keys: neither sees or replaces the
// other's value, and the loop runs both hooks and closes both.
func TestExtKeysAreSeparate(t *testing.T) {
	r := reactor.NewManual()
	a, b := reactor.NewExtKey("a"), reactor.NewExtKey("b")
	var ranA, ranB, closedA, closedB int
	pendingB := true
	va := r.ExtOrInit(a, func() reactor.Ext {
		return reactor.Ext{Value: "A", Run: func() bool { ranA++; return false }, Close: func() { closedA++ }}
	})
	vb := r.ExtOrInit(b, func() reactor.Ext {
		return reactor.Ext{Value: "B", Run: func() bool { ranB++; pendingB = false; return false }, Close: func() { closedB++ }, Pending: &pendingB}
	})
	again := r.ExtOrInit(a, func() reactor.Ext { t.Fatal("init ran twice for one key"); return reactor.Ext{} })
	if va != "A" || vb != "B" || again != "A" || r.Ext(a) != "A" || r.Ext(b) != "B" {
		t.Fatalf("values: %v %v %v %v %v, want A B A A B", va, vb, again, r.Ext(a), r.Ext(b))
	}
	if v := r.Ext(reactor.NewExtKey("a")); v != nil {
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
