package engine

// State is the per-flow state of FTN12 (spec 1.7 and 2.2.1's state()): one
// *State per root, seen by the root, every step, every parallel branch and
// every handler. Keyed values live behind Get, Set, Exists and Unset.
type State struct {
	ErrorInfo     string    // error_info: the info of the last Error, "" if none
	LastException error     // last_exception: the last *Error or recovered panic
	AsyncStack    []uintptr // async_stack: entry PCs of the step functions, root first, where the last error was raised
	User          any       // the owner's own typed context: the spec's "derived class" extension point

	vals map[string]any
}

// Get returns the value stored under key, or nil.
func (s *State) Get(key string) any { return s.vals[key] }

// Set stores v under key.
func (s *State) Set(key string, v any) {
	if s.vals == nil {
		s.vals = make(map[string]any)
	}
	s.vals[key] = v
}

// Exists reports whether a value is stored under key.
func (s *State) Exists(key string) bool {
	_, ok := s.vals[key]
	return ok
}

// Unset removes key.
func (s *State) Unset(key string) { delete(s.vals, key) }

// Keys calls fn for every stored key, in no particular order.
func (s *State) Keys(fn func(key string)) {
	for k := range s.vals {
		fn(k)
	}
}

// reset empties the state but keeps the map's and AsyncStack's storage.
func (s *State) reset() {
	// The nil test first: most flows never Set, and len of a nil map is
	// a test, a zero and a second test (3 instructions more per reset;
	// New and Release both reset).
	//lint:ignore S1009 the nil test is the point: it is cheaper than len's
	if s.vals != nil && len(s.vals) != 0 {
		clear(s.vals)
	}
	s.ErrorInfo, s.LastException, s.User = "", nil, nil
	s.AsyncStack = s.AsyncStack[:0]
}

// copyMissing copies into s the keyed values of m that s lacks (spec 1.5).
func (s *State) copyMissing(m *State) {
	for k, v := range m.vals {
		if !s.Exists(k) {
			s.Set(k, v)
		}
	}
	if s.User == nil {
		s.User = m.User
	}
}
