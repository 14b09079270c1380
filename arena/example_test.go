package arena_test

import (
	"fmt"

	"github.com/asyncsteps/asyncsteps/arena"
)

// step is what an engine frame might look like: the Scope is embedded, so
// everything the step allocates is freed with it in one call.
type step struct {
	scope arena.Scope
	name  string
}

type counters struct{ reads, writes uint64 } // pointer-free: byte slabs

type request struct { // holds Go pointers: typed slab
	path   string
	header map[string]string
}

func ExampleAlloc() {
	a := arena.New()
	defer a.Close()

	frames := arena.NewPool[step](0)
	st := frames.Get()
	st.name = "fetch"

	c := arena.Alloc[counters](a, &st.scope)
	c.reads++
	req := arena.Alloc[request](a, &st.scope)
	req.path = "/index.html"
	req.header = map[string]string{"Accept": "text/html"}
	c.writes += uint64(len(req.header))

	s := a.Stats()
	fmt.Printf("%s: reads=%d writes=%d path=%s\n", st.name, c.reads, c.writes, req.path)
	fmt.Printf("in use: objects=%d bytes=%d typed=%d\n", s.ObjectsInUse, s.BytesInUse, s.TypedInUse)

	// Destroying the step: c and req must not be used after this.
	a.Release(&st.scope)
	frames.Put(st)

	s = a.Stats()
	fmt.Printf("in use: objects=%d bytes=%d typed=%d frames=%d\n", s.ObjectsInUse, s.BytesInUse, s.TypedInUse, frames.InUse())
	// Output:
	// fetch: reads=1 writes=1 path=/index.html
	// in use: objects=2 bytes=16 typed=1
	// in use: objects=0 bytes=0 typed=0 frames=0
}
