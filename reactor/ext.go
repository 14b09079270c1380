package reactor

// Ext is what the layer above (the engine) attaches to a reactor.
type Ext struct {
	Value any         // the layer's per-reactor state
	Run   Runner      // called by the loop on every iteration
	Ready func() bool // reports, without running anything, whether Run has work
	Close func()      // called on the loop when it shuts down, after accepted tasks ran
	// Pending, when set, is a flag the layer keeps on the loop: true
	// whenever Run may have work (set when it queues work, cleared only
	// when its queue is empty). The loop then calls Run only while it is
	// true, so an iteration with only reactor work skips the call.
	Pending *bool
}

type extSlot struct {
	v       any
	run     Runner
	ready   func() bool
	close   func()
	pending *bool // Ext.Pending; read on the loop only
}

// Ext returns the value attached by ExtOrInit, or nil. Safe from any goroutine.
func (r *Reactor) Ext() any {
	if s := r.ext.Load(); s != nil {
		return s.v
	}
	return nil
}

// ExtOrInit returns the value attached to the reactor for the layer above
// (the engine keeps its per-reactor pools there), attaching init()'s Ext the
// first time. Safe from any goroutine; init runs at most once per reactor.
func (r *Reactor) ExtOrInit(init func() Ext) any {
	if s := r.ext.Load(); s != nil {
		return s.v
	}
	r.extMu.Lock()
	defer r.extMu.Unlock()
	if s := r.ext.Load(); s != nil {
		return s.v
	}
	x := init()
	r.ext.Store(&extSlot{v: x.Value, run: x.Run, ready: x.Ready, close: x.Close, pending: x.Pending})
	return x.Value
}
