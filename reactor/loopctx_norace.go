//go:build !race

package reactor

// held reports whether the goroutine that made l holds its reactor's loop
// word: a load and a compare. Whether the caller is that goroutine is the
// Loop's contract, not checked here (see Loop); loopctx_race.go checks it.
func (l Loop) held() bool { return l.r.loopG.Load() == l.g }
