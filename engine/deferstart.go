package engine

// DeferStart sets whether an Execute of root on its loop always queues the
// flow for the loop's pass over its ready flows (on), or may run it at once
// (off, the default): see Execute. It is for a loop callback that starts
// several flows and then runs them itself with RunReady, and must do its
// own bookkeeping between those Executes and the run (a server that starts
// a flow per read, then splits it, then writes what its flows left, as
// stepsd does). Kept from run to run; Release clears it. Set it while the
// root is not executing, from the goroutine that holds the root. A nil or
// non-root root panics: this is the caller's bug, outside any flow.
func (internals) DeferStart(root *Steps, on bool) {
	if root == nil || root.kind != kRoot {
		panic("engine: X.DeferStart: not a root (New's Steps)")
	}
	rt := rootOf(root)
	if x := rt.more.Load(); x != nil || on {
		rt.extra().deferStart = on
	}
}
