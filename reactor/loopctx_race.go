//go:build race || asyncsteps_debug

package reactor

import "github.com/asyncsteps/asyncsteps/internal/goid"

// held, under -race or -tags asyncsteps_debug: the goroutine that made l holds the loop word and
// the caller is that goroutine (the full identity test that the build
// without -race leaves out: see Loop).
//
// The caller's identity first: loopGen is loop-owned, and is read only
// once the caller is known to hold the loop word.
func (l Loop) held() bool {
	return goid.Current() == l.g && l.r.loopG.Load() == l.g && l.r.loopGen == l.gen
}
