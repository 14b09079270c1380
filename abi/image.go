package abi

/*
#include <stdlib.h>
#include <string.h>
#include "bridge.h"
*/
import "C"

import (
	"runtime"
	"runtime/cgo"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/asyncsteps/asyncsteps/engine"
	"github.com/asyncsteps/asyncsteps/reactor"
)

// Images. A step's C image (asx_bsi, bridge.h) is what C code holds as its
// FutoInAsyncSteps*. Images live in C memory, allocated in chunks that are
// never freed, and are only ever reused as images: a pointer C kept too long
// always points at an image, whose mode and table entry say it is stale.
//
// C memory holds no Go pointer: an image names its step by its index (id)
// in the table below, whose Go side holds the *engine.Steps.

const chunkBits = 8
const chunkSize = 1 << chunkBits

// chunk is chunkSize images and their Go side.
type chunk struct {
	mem *[chunkSize]C.asx_bsi // C memory
	go_ [chunkSize]imageGo
}

// imageGo is the Go side of one image. Loop-owned except ext, which
// External completions from other threads read.
type imageGo struct {
	steps *engine.Steps                   // the step (or root) the image is bound to; nil when free
	pool  *pool                           // the pool it returns to; nil: the shared list
	r     atomic.Pointer[reactor.Reactor] // the step's reactor, for calls from any thread
	ext   atomic.Pointer[engine.External] // a waiting step's, for completions from any thread
	// Roots only.
	root *rootExtra
}

// rootExtra is what a root's image keeps across runs.
type rootExtra struct {
	unhandled C.FutoInAsyncSteps_error_callback
	data      unsafe.Pointer
	vars      []stateVar
	errInfo   *C.char // the last "error_info" handed out: valid until the flow's next error
	errInfoS  string  // what errInfo holds
	owned     bool    // made by asyncsteps_new: api->free releases it
}

type stateVar struct {
	name    string
	value   unsafe.Pointer
	data    unsafe.Pointer
	cleanup unsafe.Pointer // void (*)(void* data, void* value)
}

var table struct {
	mu     sync.Mutex
	chunks atomic.Pointer[[]*chunk]
	free   *C.asx_bsi // images released off the loop, for any taker; under mu
}

// pool is a reactor's free images, loop-owned: taken and given back without
// a lock. A released image goes through quarantine, a FIFO, before it is
// reused, so that a pointer C kept past its step meets a stale image (and
// the misuse is reported) until quarantineLen more images were released.
type pool struct {
	free    *C.asx_bsi
	nfree   int                       // images on free
	q       [quarantineLen]*C.asx_bsi // ring: q[qhead] is the oldest
	qhead   int
	qlen    int
	pinner  runtime.Pinner // pins Go payloads while a C callback reads them
	pinned  bool
	handles []cgo.Handle // Obj values handed to the running C callback

	// scratch is C memory lent to the image whose callback is recording
	// (recorder): its arguments, its success values, and ASX_ADDS adds
	// (one crossing back into Go per ASX_ADDS adds). scratch[d] serves a
	// callback d levels inside another's.
	scratch  []*C.asx_scratch
	recorder *C.asx_bsi

	// The chain (chain.go): the ring of images its steps run on, and while
	// asx_chain runs, the step whose adds it runs (chainAs, on image
	// chainB, whose record began with chainPrev as recorder), and once Go
	// entered the chain's current step, that step and its image.
	ring       *C.asx_ring
	chaining   bool
	chainAs    *engine.Steps
	chainB     *C.asx_bsi
	chainPrev  *C.asx_bsi
	chainStep  *engine.Steps
	chainImg   *C.asx_bsi
	chainN     int    // arguments the entered step was given
	chains     uint64 // chains run, for tests
	chainSteps uint64 // callbacks run by chains (the entered ones included), for tests
}

// record lends the scratch to b, whose C callback is about to run, and
// returns what to give back to end. A recorder it interrupts (a callback
// run from inside another, on a manual reactor driven from a callback)
// hands its adds to the engine first.
func (p *pool) record(b *C.asx_bsi) (prev *C.asx_bsi) {
	prev = p.recorder
	d := 0
	if prev != nil && prev.mode == C.ASX_RECORD {
		d = int(prev.depth) + 1
		if prev.nadd > 0 {
			safeFlush(entry(prev).steps, prev) // its adds first, in order
		}
	} else {
		prev = nil // left by a callback whose record unwound (an Error): done
	}
	p.recorder = b
	if d < len(p.scratch) {
		b.s = p.scratch[d]
	} else {
		b.s = p.scratchAt(d)
	}
	b.depth = C.uint32_t(d)
	b.mode = C.ASX_RECORD
	return prev
}

// scratchAt returns the scratch of depth d, allocating the missing ones.
func (p *pool) scratchAt(d int) *C.asx_scratch {
	for d >= len(p.scratch) {
		s := (*C.asx_scratch)(C.calloc(1, C.size_t(unsafe.Sizeof(C.asx_scratch{}))))
		if s == nil {
			panic("abi: out of C memory for a recording scratch")
		}
		p.scratch = append(p.scratch, s)
	}
	return p.scratch[d]
}

// end takes the scratch back from b once its record was applied.
func (p *pool) end(b, prev *C.asx_bsi) {
	b.mode = C.ASX_IDLE
	b.s = nil
	p.recorder = prev
}

// quarantineLen is how many images are released after one before it is
// reused: the window in which a kept pointer is recognised as stale.
// Measured in profiles/README.md: the FIFO costs less than the noise of the
// C-step benchmark against LIFO reuse at this length.
const quarantineLen = 256

// quarantine puts b at the end of the FIFO, and the oldest image, once the
// FIFO is full, on the free list.
func (p *pool) quarantine(b *C.asx_bsi) {
	if p.qlen < quarantineLen {
		p.q[(p.qhead+p.qlen)%quarantineLen] = b
		p.qlen++
		return
	}
	old := p.q[p.qhead]
	p.q[p.qhead] = b
	p.qhead = (p.qhead + 1) % quarantineLen
	old.next_free = p.free
	p.free = old
	p.nfree++
	if p.nfree > shareAbove {
		p.share()
	}
}

// shareAbove is how many free images a pool keeps before it shares: a
// flow that adds a thousand steps at once reuses its images without a
// lock (measured: a lower mark took the shared list's mutex every round).
const shareAbove = 8 * chunkSize

// share gives chunkSize free images to the shared list. Roots built off
// the loop take their steps' images there, and the loop gets them all
// back when the steps end: without this the pool grew by every off-loop
// build and the shared list was refilled by new chunks.
func (p *pool) share() {
	first := p.free
	last := first
	for i := 1; i < chunkSize; i++ {
		last = last.next_free
	}
	p.free = last.next_free
	p.nfree -= chunkSize
	table.mu.Lock()
	last.next_free = table.free
	table.free = first
	table.mu.Unlock()
}

func entry(b *C.asx_bsi) *imageGo {
	id := uint32(b.id)
	cs := *table.chunks.Load()
	return &cs[id>>chunkBits].go_[id&(chunkSize-1)]
}

// grow adds a chunk and returns its images as a free list. Under table.mu.
func grow() *C.asx_bsi {
	mem := (*[chunkSize]C.asx_bsi)(C.calloc(chunkSize, C.size_t(unsafe.Sizeof(C.asx_bsi{}))))
	if mem == nil {
		panic("abi: out of C memory for step images")
	}
	var cs []*chunk
	if p := table.chunks.Load(); p != nil {
		cs = *p
	}
	id := uint32(len(cs)) << chunkBits
	c := &chunk{mem: mem}
	ncs := make([]*chunk, len(cs)+1)
	copy(ncs, cs)
	ncs[len(cs)] = c
	for i := range mem {
		b := &mem[i]
		*(**C.FutoInAsyncStepsAPI)(unsafe.Pointer(&b.base)) = &C.asx_api
		b.id = C.uint32_t(id + uint32(i))
		b.mode = C.ASX_STALE
		if i+1 < chunkSize {
			b.next_free = &mem[i+1]
		}
	}
	table.chunks.Store(&ncs)
	return &mem[0]
}

// poolOf returns the pool of as's reactor. Loop only.
func poolOf(as *engine.Steps) *pool {
	slot := engine.X.BridgeData(as)
	if *slot == nil {
		*slot = unsafe.Pointer(&pool{})
	}
	return (*pool)(*slot)
}

// newImage takes an image for as in mode, from as's reactor's pool on the
// loop, or from the shared list off it.
func newImage(as *engine.Steps, mode C.uint32_t) *C.asx_bsi {
	if as.Reactor().IsSameThread() {
		return newImageOn(as, poolOf(as), mode)
	}
	table.mu.Lock()
	b := table.free
	if b == nil {
		b = grow()
	}
	table.free = b.next_free
	table.mu.Unlock()
	return bindImage(b, as, nil, mode)
}

// newImageOn is newImage on the loop, p being as's reactor's pool.
func newImageOn(as *engine.Steps, p *pool, mode C.uint32_t) *C.asx_bsi {
	return bindImage(p.take(), as, p, mode)
}

// take returns a free image of p, unbound. Loop only.
func (p *pool) take() *C.asx_bsi {
	b := p.free
	if b == nil {
		table.mu.Lock()
		if b = table.free; b != nil {
			table.free = nil // take the whole shared list
		} else {
			b = grow()
		}
		table.mu.Unlock()
		for x := b; x != nil; x = x.next_free {
			p.nfree++
		}
	}
	p.free = b.next_free
	p.nfree--
	return b
}

// builtRoot is asx_bsi.built for a root's own image (imageOf); 1: an
// image bound by a root's holder, or off the loop, while the root is built.
const builtRoot = 2

// bindImage makes the free image b as's, in mode; p is the pool it came
// from (nil: the shared list).
func bindImage(b *C.asx_bsi, as *engine.Steps, p *pool, mode C.uint32_t) *C.asx_bsi {
	b.next_free = nil
	b.mode = mode
	if p == nil || engine.X.IsRoot(as) {
		b.built = 1
	}
	g := entry(b)
	g.steps = as
	g.pool = p
	if r := as.Reactor(); g.r.Load() != r {
		g.r.Store(r)
	}
	return b
}

// releaseImage is the engine's Bridge.Release: the image's step is gone.
func releaseImage(bin unsafe.Pointer, onLoop bool) {
	b := (*C.asx_bsi)(bin)
	g := entry(b)
	if b.stack != nil {
		C.asx_free_stack(b) // stack() memory's cleanups run once, with the step
	}
	if rx := g.root; rx != nil {
		g.root = nil
		rx.release()
	}
	var p *pool
	if onLoop {
		if p = g.pool; p == nil && g.steps != nil {
			p = poolOf(g.steps) // taken off the loop: given to this loop's pool
		}
	}
	g.steps = nil
	g.pool = nil
	if g.ext.Load() != nil {
		g.ext.Store(nil)
	}
	clearImage(b)
	if p == nil {
		table.mu.Lock()
		b.next_free = table.free
		table.free = b
		table.mu.Unlock()
		return
	}
	p.quarantine(b)
}

// copyImage is the engine's Bridge.Copy: a copied C step (CopyFrom, Clone)
// gets an image of its own with the same callbacks.
func copyImage(bin unsafe.Pointer, to *engine.Steps) unsafe.Pointer {
	from := (*C.asx_bsi)(bin)
	b := newImage(to, C.ASX_IDLE)
	b.f, b.eh, b.data = from.f, from.eh, from.data
	return unsafe.Pointer(b)
}

// clearImage resets what a callback may have recorded; api and id stay.
func clearImage(b *C.asx_bsi) {
	b.mode = C.ASX_STALE
	b.rec, b.handler, b.nadd, b.added, b.timeout_ms, b.built = 0, 0, 0, 0, 0, 0
	b.f, b.eh, b.data, b.ch, b.ch_data = nil, nil, nil, nil, nil
	freeError(b) // recorded by a callback whose record was never applied
	b.misuse = nil
	b.loop_f, b.loop_data = nil, nil
	b.s = nil
}

// release runs the root's state variables' cleanups (spec 2.7: once, when
// the root is freed) and frees error_info.
func (rx *rootExtra) release() {
	for i := len(rx.vars) - 1; i >= 0; i-- {
		v := rx.vars[i]
		if v.cleanup != nil {
			C.asx_call_state_cleanup((*[0]byte)(v.cleanup), v.data, v.value)
		}
	}
	rx.vars = nil
	if rx.errInfo != nil {
		C.free(unsafe.Pointer(rx.errInfo))
		rx.errInfo = nil
	}
}

func init() {
	engine.X.
		SetBridge(engine.Bridge{Release: releaseImage, Copy: copyImage, Drop: dropValue, Enter: enterData})
}

// imageOf returns the image bound to as, binding a new one in mode if as
// has none. Nil if as cannot take one (a stale accessor).
func imageOf(as *engine.Steps, mode C.uint32_t) *C.asx_bsi {
	if bin := engine.X.Binding(as); bin != nil {
		return (*C.asx_bsi)(bin)
	}
	b := newImage(as, mode)
	if !engine.X.Bind(as, unsafe.Pointer(b)) {
		releaseImage(unsafe.Pointer(b), as.Reactor() != nil && as.Reactor().IsSameThread())
		return nil
	}
	if engine.X.IsRoot(as) {
		// The root's own image (bindImage saw the parent of a sub-step
		// as well): isValid reads this off the loop, where g.steps of a
		// step's image is the loop's.
		b.built = builtRoot
	}
	return b
}
