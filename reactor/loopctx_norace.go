//go:build !race && !asyncsteps_debug

package reactor

// held reports whether the goroutine that made l holds its reactor's loop
// word within the stretch that made l (loopGen unchanged: see Loop): two
// loads and two compares. Whether the caller is that goroutine is the
// Loop's contract, not checked here (see Loop); loopctx_race.go checks it
// (-race, -tags asyncsteps_debug). From a goroutine that does not hold the
// word the read of loopGen races with the holder's writes by design: it
// comes after loopG's load, so it reads a value at least as new as the
// holder's take of the word, and a hold that may have run a callback
// moves loopGen before it gives the word up.
func (l Loop) held() bool { return l.r.loopG.Load() == l.g && l.r.loopGen == l.gen }
