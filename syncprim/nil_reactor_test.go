package syncprim_test

import (
	"strings"
	"testing"
	"time"

	"github.com/asyncsteps/asyncsteps/syncprim"
)

// A Throttle or Limiter keeps its period timer on the reactor it is made
// with: a nil one is refused when it is made, with a panic that names the
// constructor, instead of failing some later flow with a nil dereference.
func TestNilReactorRefused(t *testing.T) {
	cases := []struct {
		name string
		make func()
	}{
		{"NewThrottle", func() { syncprim.NewThrottle(nil, 1, time.Second, 0) }},
		{"NewLimiter", func() { syncprim.NewLimiter(nil, syncprim.LimiterOptions{}) }},
	}
	for _, c := range cases {
		msg := func() (msg string) {
			defer func() { msg, _ = recover().(string) }()
			c.make()
			return ""
		}()
		if !strings.Contains(msg, c.name+" with a nil reactor") {
			t.Errorf("%s(nil, ...): panic %q, want one naming the mistake", c.name, msg)
		}
	}
}
