//go:build !race && !asyncsteps_debug

package reactor

// held reports whether the goroutine that made l holds its reactor's loop
// word within the outermost iteration that made l: two loads and
// two compares. Whether the caller is that goroutine is the Loop's
// contract, not checked here (see Loop); loopctx_race.go checks it (-race, -tags
// asyncsteps_debug).
func (l Loop) held() bool { return l.r.loopG.Load() == l.g && l.r.loopGen == l.gen }
