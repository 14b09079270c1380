package engine_test

import (
	"strings"
	"testing"

	"github.com/asyncsteps/asyncsteps/engine"
)

// New(nil) is a mistake outside any flow: it panics with a message that
// names the call and what to pass, not with a nil dereference inside.
func TestNewNilReactorPanicsNamingIt(t *testing.T) {
	defer func() {
		msg, _ := recover().(string)
		if !strings.Contains(msg, "engine: New(nil)") {
			t.Fatalf("New(nil) panicked with %q, want a message naming New(nil)", msg)
		}
	}()
	engine.New(nil)
	t.Fatal("New(nil) returned")
}
