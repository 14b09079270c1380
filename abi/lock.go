package abi

/*
#include <stdlib.h>
#include "bridge.h"
*/
import "C"

import (
	"runtime/cgo"
	"sync"
	"unsafe"

	"github.com/asyncsteps/asyncsteps/engine"
	"github.com/asyncsteps/asyncsteps/reactor"
)

// The lock and unlock slots of our FutoInSync objects (spec 2.7.3), for
// any engine's addSync, ours included. Our objects only know sections
// (engine.Sync: enter, run, leave), so a lock is held by a proxy: a root
// of our own that enters the object on the locking flow's behalf and stays
// in its section until unlock. The locking step waits meanwhile (its
// waitExternal) and is resumed on its own engine's thread, through its
// sched_immediate: success once the proxy is in, handle_error with the
// object's code (DefenseRejected) if it is kept out. Canceling the locking
// step cancels the proxy, which leaves the queue or the section.
//
// A proxy holds for the flow (rootId) that locked: unlock from the same
// flow releases the most recent of its locks on that object. Reentrance of
// the flow's own Sync sections does not see a lock taken this way.

type lockKey struct {
	flow uintptr
	s    *C.FutoInSync
}

// proxy is one lock held (or being taken) for a flow.
type proxy struct {
	key       lockKey
	root      *engine.Steps  // the proxy: the engine's once it runs (ReleaseAtEnd)
	ref       engine.Ref     // to cancel it, safely even after it ended
	req       *C.asx_lockreq // C memory; the resume callback frees it once scheduled
	handle    cgo.Handle     // p, for the resume callback
	hold      engine.External
	held      bool // hold is the section's step, waiting for unlock
	scheduled bool // the locking step's resume was scheduled
	canceled  bool
}

var locks struct {
	mu sync.Mutex // guards m and every proxy's fields
	m  map[lockKey][]*proxy
}

// proxyReactor runs the proxies of flows of other engines, which have no
// reactor of ours: started on first use, for the life of the process.
var proxyReactor = sync.OnceValue(func() *reactor.Reactor {
	r, err := reactor.New(reactor.Options{CPU: -1})
	if err != nil {
		panic("abi: cannot start the reactor for locks of other engines' flows: " + err.Error())
	}
	go r.Run()
	return r
})

func lock(bsi *C.FutoInAsyncSteps, s *C.FutoInSync) {
	obj := syncOf(s)
	var r *reactor.Reactor
	if C.asx_is_ours(bsi) != 0 {
		r = entry((*C.asx_bsi)(unsafe.Pointer(bsi))).r.Load()
	}
	if r == nil {
		r = proxyReactor()
	}
	q := (*C.asx_lockreq)(C.calloc(1, C.size_t(unsafe.Sizeof(C.asx_lockreq{}))))
	q.bsi = bsi
	p := &proxy{key: lockKey{flow: uintptr(C.asx_f_root_id(bsi)), s: s}, req: q}
	p.handle = cgo.NewHandle(p)
	q.proxy = C.uintptr_t(p.handle)
	x := &foreign{bsi: bsi}
	x.WaitExternal()
	x.SetCancel(func(*engine.Steps) { p.cancel() })

	p.root = engine.New(r)
	p.root.Sync(obj, func(as *engine.Steps) {
		ext := as.External() // the section lasts until unlock
		locks.mu.Lock()
		p.hold, p.held = ext, true
		locks.mu.Unlock()
		p.resume("")
	}, func(as *engine.Steps, code string) {
		p.resume(code) // kept out (DefenseRejected): the locking step fails with it
	})
	engine.X.
		OnEnd(p.root, func(*engine.Steps, string) { p.forget() })
	locks.mu.Lock()
	if locks.m == nil {
		locks.m = map[lockKey][]*proxy{}
	}
	locks.m[p.key] = append(locks.m[p.key], p)
	locks.mu.Unlock()
	p.ref = p.root.Ref()
	p.root.Execute()
	p.root.ReleaseAtEnd()
}

// resume schedules the locking step's resumption (code "": entered).
func (p *proxy) resume(code string) {
	locks.mu.Lock()
	if p.canceled || p.scheduled {
		locks.mu.Unlock()
		return
	}
	p.scheduled = true
	locks.mu.Unlock()
	// Outside the lock: an engine whose sched_immediate runs the callback at
	// once calls asxGoLockResume from here.
	var cs *C.char
	if code != "" {
		// The standard codes are interned C strings, alive for the process.
		if cs = cCodes[code]; cs == nil {
			cs = cCodes[engine.InternalError]
		}
	}
	C.asx_lock_done(p.req, cs)
}

// cancel is the locking step's cancel handler: on its engine's thread. A
// resume already scheduled owns the request; it asks (asxGoLockResume)
// before it resumes anything.
func (p *proxy) cancel() {
	locks.mu.Lock()
	p.canceled = true
	if !p.scheduled {
		C.free(unsafe.Pointer(p.req))
		p.handle.Delete()
		p.scheduled = true // nobody schedules it now
	}
	locks.mu.Unlock()
	p.forget()
	p.ref.Cancel()
}

// asxGoLockResume is asked by a scheduled resume, on the locking step's
// thread, whether to resume the step: not if it was canceled meanwhile.
//
//export asxGoLockResume
func asxGoLockResume(h C.uintptr_t) C.int {
	p := cgo.Handle(h).Value().(*proxy)
	cgo.Handle(h).Delete()
	locks.mu.Lock()
	defer locks.mu.Unlock()
	if p.canceled {
		return 0
	}
	return 1
}

// forget removes p from the table of locks.
func (p *proxy) forget() {
	locks.mu.Lock()
	defer locks.mu.Unlock()
	l := locks.m[p.key]
	for i := len(l) - 1; i >= 0; i-- {
		if l[i] == p {
			l = append(l[:i], l[i+1:]...)
			break
		}
	}
	if len(l) == 0 {
		delete(locks.m, p.key)
	} else {
		locks.m[p.key] = l
	}
}

func unlock(bsi *C.FutoInAsyncSteps, s *C.FutoInSync) {
	key := lockKey{flow: uintptr(C.asx_f_root_id(bsi)), s: s}
	locks.mu.Lock()
	var p *proxy
	l := locks.m[key]
	for i := len(l) - 1; i >= 0; i-- {
		if l[i].held {
			p = l[i]
			break
		}
	}
	var hold engine.External
	if p != nil {
		hold, p.held = p.hold, false
	}
	locks.mu.Unlock()
	if p == nil {
		// Nothing held for this flow: a misuse of the locking engine's.
		info := C.CString("unlock: the flow holds no lock on this sync object")
		C.asx_f_error(bsi, cCodes[engine.InternalError], info)
		C.free(unsafe.Pointer(info))
		return
	}
	hold.Success() // the proxy's section ends: the object lets the next in
}
