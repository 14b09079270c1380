package engine

// Holds reports whether as's flow (its root, or its parallel branch) holds
// key, as recorded by Hold, or as an AddLocked section over key that the
// flow is inside. Sync objects use it for reentrance: a nested
// Sync on an object the flow holds passes through. Loop only.
func (as *Steps) Holds(key any) bool {
	if as.Holding() {
		return as.holds(key)
	}
	return false
}

// Holding reports whether as's flow holds anything at all: a key recorded
// by Hold, or an AddLocked section it is inside. False means Holds is
// false for every key; a Sync object's Enter that checks for reentrance
// on several keys can ask this first (one test instead of a walk per key:
// syncprim's Limiter). Loop only.
func (as *Steps) Holding() bool {
	return as != nil && as.fl != nil && (as.fl.locked != 0 || len(as.fl.held) != 0)
}

// holds is Holds for a flow that holds something: its Holds and its
// entered sections are searched for key. Out of line, so that Holds
// inlines into its callers.
//
//go:noinline
func (as *Steps) holds(key any) bool {
	for _, k := range as.fl.held {
		if k == key {
			return true
		}
	}
	return as.lockedBy(key)
}

// Hold records that as's flow holds key; Unhold forgets it. Parallel
// branches are flows of their own and inherit nothing. Loop only, including
// cancel handlers. On a foreign accessor (a flow another engine drives)
// they are a misuse: such a flow has no record here, and Holds reports
// false for it.
func (as *Steps) Hold(key any) {
	if as != nil && as.fl != nil {
		as.fl.held = append(as.fl.held, key)
		as.fl.holding = true
	} else if as.isForeign() {
		foreignMisuse(as, "Hold")
	}
}

// Unhold forgets the most recent Hold of key by as's flow.
func (as *Steps) Unhold(key any) {
	if as == nil || as.fl == nil {
		if as.isForeign() {
			foreignMisuse(as, "Unhold")
		}
		return
	}
	h := as.fl.held
	for i := len(h) - 1; i >= 0; i-- {
		if h[i] == key {
			copy(h[i:], h[i+1:])
			h[len(h)-1] = nil
			as.fl.held = h[:len(h)-1]
			as.fl.holding = len(h) > 1
			return
		}
	}
}
