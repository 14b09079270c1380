package engine

// checkReleased panics with op's name when as is a released root, in the
// asyncsteps_debug build only. In the default build debugReleased is a
// false constant: the body folds away and the call inlines to nothing, so
// the entry points that call it cost what they cost without it.
//
// A released root's memory is the pool's: the default build keeps it from
// New for a while (rootQuarantine), then hands it to the next owner, after
// which a kept pointer's calls act on that owner's root. The debug build
// never pools a released root (release), so its memory stays released for
// as long as anyone holds it, and the first call through a kept pointer
// says where the bug is.
func checkReleased(as *Steps, op string) {
	if debugReleased && as != nil && as.kind == kRoot && rootOf(as).isReleased() {
		panic("engine: " + op + " on a released root")
	}
}
