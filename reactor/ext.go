package reactor

import "sync/atomic"

// Ext is what a layer above (the engine) attaches to a reactor.
type Ext struct {
	Value any         // the layer's per-reactor state
	Run   runner      // called by the loop on every iteration
	Ready func() bool // reports, without running anything, whether Run has work
	Close func()      // called on the loop when it shuts down, after accepted tasks ran
	// Pending, when set, is a flag the layer keeps on the loop: true
	// whenever Run may have work (set when it queues work, cleared only
	// when its queue is empty). The loop then calls Run only while it is
	// true, so an iteration with only reactor work skips the call.
	Pending *bool
}

// ExtKey names one layer's attachment: only code that holds the key reads
// or makes it, so no other caller can take or replace the engine's.
type ExtKey struct{ name string }

// xNewExtKey returns a new key; name is for messages only. Make one per
// layer, in a package variable.
func xNewExtKey(name string) *ExtKey { return &ExtKey{name: name} }

// String returns the name given to NewExtKey.
func (k *ExtKey) String() string { return k.name }

// extSlot is one attachment. The slots form a list that only grows: a slot
// is immutable once published except for next, which is set once.
type extSlot struct {
	key     *ExtKey
	v       any
	run     runner
	ready   func() bool
	close   func()
	pending *bool // Ext.Pending; read on the loop only
	next    atomic.Pointer[extSlot]
}

// xExt returns the value attached with key by ExtOrInit, or nil. Safe from
// any goroutine.
func (r *Reactor) xExt(key *ExtKey) any {
	for s := r.ext.Load(); s != nil; s = s.next.Load() {
		if s.key == key {
			return s.v
		}
	}
	return nil
}

// xExtOrInit returns the value attached to the reactor with key (the engine
// keeps its per-reactor pools there), attaching init()'s Ext the first
// time. Safe from any goroutine; init runs at most once per reactor and
// key. Each key has its own attachment: the loop runs every attachment's
// hooks, in the order they were made.
func (r *Reactor) xExtOrInit(key *ExtKey, init func() Ext) any {
	if v := r.xExt(key); v != nil {
		return v
	}
	r.extMu.Lock()
	defer r.extMu.Unlock()
	var last *extSlot
	for s := r.ext.Load(); s != nil; s = s.next.Load() {
		if s.key == key {
			return s.v
		}
		last = s
	}
	x := init()
	s := &extSlot{key: key, v: x.Value, run: x.Run, ready: x.Ready, close: x.Close, pending: x.Pending}
	if last == nil {
		r.ext.Store(s)
	} else {
		last.next.Store(s)
	}
	return x.Value
}

// runMoreExt runs the hooks of the attachments after first that may have
// work (iterate runs first's itself); it reports whether any still has
// some. Loop only.
func (r *Reactor) runMoreExt(first *extSlot) bool {
	more := false
	for s := first.next.Load(); s != nil; s = s.next.Load() {
		if s.run != nil && (s.pending == nil || *s.pending) && s.run() {
			more = true
		}
	}
	return more
}

// extReady reports whether an attachment has work, running nothing.
func (r *Reactor) extReady() bool {
	for s := r.ext.Load(); s != nil; s = s.next.Load() {
		if s.ready != nil && s.ready() {
			return true
		}
	}
	return false
}

// closeExt calls every attachment's Close, on the loop at shutdown.
func (r *Reactor) closeExt() {
	for s := r.ext.Load(); s != nil; s = s.next.Load() {
		if s.close != nil {
			r.safeCall(s.close)
		}
	}
}
