//go:build race

package reactor

import "github.com/asyncsteps/asyncsteps/internal/goid"

// held, under -race: the goroutine that made l holds the loop word and
// the caller is that goroutine (the full identity test that the build
// without -race leaves out: see Loop).
func (l Loop) held() bool { return l.r.loopG.Load() == l.g && goid.Current() == l.g }
