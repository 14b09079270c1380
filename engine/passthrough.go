package engine

// ForwardArgs makes the running step's first sub-step receive the values
// this step received, instead of none: a wrapper step (a critical section,
// a retry) can then stand between two steps without changing what flows
// from one to the other. On a foreign accessor it is a misuse: the spec's
// interface cannot say it.
func (as *Steps) ForwardArgs() {
	if as.current("ForwardArgs") {
		as.flags |= fForward
	} else if as.isForeign() {
		foreignMisuse(as, "ForwardArgs")
	}
}

// Pass completes the running step successfully, passing on the values it
// received unchanged (Success would replace them).
func (as *Steps) Pass() {
	if !as.current("Pass") {
		if as.isForeign() {
			a := as.foreign().Args()
			as.foreign().Success(a.v[:a.Len()])
		}
		return
	}
	switch {
	case as.flags&fSucceeded != 0:
		misuse(as, "Pass: called after Success")
	case as.qlast != nil:
		misuse(as, "Pass: called after sub-steps were added")
	}
	as.flags |= fSucceeded
}
