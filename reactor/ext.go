package reactor

// Ext is what a layer above (the engine) attaches to a reactor.
type Ext struct {
	Value any    // the layer's per-reactor state
	Run   runner // called by the loop on every iteration
	// Runner, when set, is called instead of Run: a method value such as
	// e.RunReady is a call of a wrapper that then calls the method, ~10
	// instructions of every iteration that runs flows (the on-loop engine
	// rows); an interface calls the method itself.
	Runner interface{ RunReady() bool }
	Ready  func() bool // reports, without running anything, whether Run has work
	Close  func()      // called on the loop when it shuts down, after accepted tasks ran
	// Pending, when set, is a flag the layer keeps on the loop: true
	// whenever Run may have work (set when it queues work, cleared only
	// when its queue is empty). The loop then calls Run only while it is
	// true, so an iteration with only reactor work skips the call.
	Pending *bool
}

// extRunner is Ext.Runner's type: RunReady does what Ext.Run does.
type extRunner = interface{ RunReady() bool }

// runFunc is an Ext.Run as an extRunner (a func is pointer-shaped: no
// allocation to put one in an interface).
type runFunc func() bool

func (f runFunc) RunReady() bool { return f() }

// ExtKey names one layer's attachment: only code that holds the key reads
// or makes it, so no other caller can take or replace the engine's.
type ExtKey struct{ name string }

// xNewExtKey returns a new key; name is for messages only. Make one per
// layer, in a package variable.
func xNewExtKey(name string) *ExtKey { return &ExtKey{name: name} }

// String returns the name given to NewExtKey.
func (k *ExtKey) String() string { return k.name }

// extSlot is what the loop calls: one attachment, or, once a second layer
// attaches, a combined slot whose hooks call every attachment's in turn
// (all lists them). A slot is immutable once published: a new attachment
// publishes a new combined slot, so the loop's turn checks one slot, as
// it did when only the engine could attach.
type extSlot struct {
	key     *ExtKey
	v       any
	run     extRunner // Ext.Runner, or Ext.Run as a runFunc; nil for neither
	ready   func() bool
	close   func()
	pending *bool      // Ext.Pending; read on the loop only
	all     []*extSlot // a combined slot's attachments, in the order made; nil otherwise
}

// xExt returns the value attached with key by ExtOrInit, or nil. Safe from
// any goroutine.
func (r *Reactor) xExt(key *ExtKey) any {
	s := r.ext.Load()
	if s == nil {
		return nil
	}
	if s.key == key {
		return s.v
	}
	return s.find(key)
}

// find looks key up among a combined slot's attachments.
func (s *extSlot) find(key *ExtKey) any {
	for _, o := range s.all {
		if o.key == key {
			return o.v
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
	if v := r.xExt(key); v != nil {
		return v
	}
	x := init()
	n := &extSlot{key: key, v: x.Value, run: x.Runner, ready: x.Ready, close: x.Close, pending: x.Pending}
	if n.run == nil && x.Run != nil {
		n.run = runFunc(x.Run)
	}
	head := r.ext.Load()
	if head == nil {
		r.ext.Store(n)
		r.setExtMay(n.mayRun())
		return x.Value
	}
	list := head.all
	if list == nil {
		list = []*extSlot{head}
	}
	list = append(list[:len(list):len(list)], n) // a new array: the published slot's stays as it was
	c := r.combined(list)
	r.ext.Store(c)
	r.setExtMay(c.mayRun())
	return x.Value
}

// setExtMay publishes the flag the full pass asks before it calls the
// attachments' run. A flag other than the word's ext (workWord) is one
// the idle shortcut cannot see: the word's foreign flag is then set, on
// the loop, so that the shortcut never skips the run again.
func (r *Reactor) setExtMay(may *bool) {
	r.extMay.Store(may)
	if may != &noRun && may != &r.work.ext {
		r.markForeign()
	}
}

// markForeign sets the word's foreign flag on the loop, which owns the
// word: at once when the caller is the loop, otherwise through a task in
// the ring (the one allocation, once per reactor at most). Until the task
// runs the ring is not empty, so the shortcut does not skip the full pass
// in the meantime either. After Close the push fails: a closed reactor
// starts no new work for a layer to find.
func (r *Reactor) markForeign() {
	if r.IsSameThread() {
		r.work.foreign = true
		return
	}
	r.push(task{fn: func() { r.work.foreign = true }, kind: taskImmediate})
}

// xPendingFlag returns the flag a layer should give as its Ext.Pending:
// the reactor's own, kept in the loop's pending-work word (workWord), so
// that the idle iteration reads it with the loop's other sources in one
// load. Loop only, like any Ext.Pending.
func (r *Reactor) xPendingFlag() *bool { return &r.work.ext }

// noRun and mayRun are the flags Reactor.extMay points at when no
// attachment keeps one: never written.
var noRun, mayRun = false, true

// mayRun returns the flag that is true whenever the slot's run may have
// work (Reactor.extMay): the attachment's Pending flag, or a constant one
// when it has no run (false) or keeps no flag (true).
func (s *extSlot) mayRun() *bool {
	switch {
	case s.run == nil:
		return &noRun
	case s.pending == nil:
		return &mayRun
	}
	return s.pending
}

// combined is the slot of several attachments: the first one's key and
// value (a lookup checks them first), and hooks that call each one's.
func (r *Reactor) combined(list []*extSlot) *extSlot {
	return &extSlot{
		key: list[0].key, v: list[0].v, all: list,
		run: runFunc(func() bool {
			more := false
			for _, s := range list {
				if s.run != nil && (s.pending == nil || *s.pending) && s.run.RunReady() {
					more = true
				}
			}
			return more
		}),
		ready: func() bool {
			for _, s := range list {
				if s.ready != nil && s.ready() {
					return true
				}
			}
			return false
		},
		close: func() {
			for _, s := range list {
				if s.close != nil {
					r.safeCall(s.close)
				}
			}
		},
	}
}
