//go:build linux

package reactor

import "testing"

// A nil callback given to PostRun on a parked loop runs directly
// (directTurn), and one given to PostLazy goes through the ring: both
// reach the panic handler with the nil Post's name, as on the local
// queue, and the reactor goes on.
func TestNilPostNamedThroughPostRunAndPostLazy(t *testing.T) {
	panics := make(chan any, 4)
	r := startLoop(t, Options{CPU: -1, PanicHandler: func(v any) { panics <- v }})
	for _, tc := range []struct {
		name string
		post func() bool
	}{
		{"PostRun", func() bool { return X.PostRun(r, nil, nil, 0) }},
		{"PostLazy", func() bool {
			ok := X.PostLazy(r, nil, nil, 0)
			X.Wake(r)
			return ok
		}},
	} {
		waitParked(t, r)
		if !tc.post() {
			t.Fatalf("%s(nil) reported false on an open reactor", tc.name)
		}
		if v := <-panics; v != "reactor: Post with a nil callback" {
			t.Fatalf("%s(nil): panic %v, want one naming the nil Post", tc.name, v)
		}
	}
}
