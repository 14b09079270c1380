// Package arena hands out step-lifetime memory without touching the Go heap
// once warm, so that running a step costs zero heap allocations.
//
// The engine creates one [Arena] per reactor. Each step owns a [Scope]
// embedded in its frame; [Alloc] returns memory owned by that scope and
// [Arena.Release] frees everything the scope owns when the step is
// destroyed. [Pool] is a typed free-list pool for fixed-type objects that
// belong to one goroutine, as the Example shows; the engine keeps its own
// frames and flows in free lists of its own, which link through the
// frames themselves.
//
// # Threading
//
// Nothing in this package is safe for concurrent use. An Arena, its Scopes
// and a Pool belong to the single goroutine of one reactor, which is why no
// operation takes a lock or uses atomics. Handing an Arena to another
// goroutine requires a happens-before edge (channel, mutex) and the old
// goroutine must not touch it afterwards. Breaking this is a data race that
// the package does not detect.
//
// # Lifetime
//
// A pointer returned by Alloc is valid until the scope it was allocated in
// is released. After [Arena.Release] the memory is zeroed and handed to the
// next Alloc of the same size class or type: keeping the pointer and using
// it later reads or corrupts another step's data, exactly like using a
// fasthttp RequestCtx after the handler returns. Do not retain such
// pointers, do not store them anywhere that outlives the step, and do not
// release a scope twice or release it to an Arena other than the one that
// allocated from it. The same holds for Pool: after Put, the element
// belongs to the pool again.
//
// The memory is released in the reverse order of allocation, so a value
// allocated later (which may point to one allocated earlier) is cleared
// first.
//
// # Where a T lives
//
// Alloc decides once per type, with reflect, whether T holds Go pointers
// anywhere inside (pointers, strings, slices, maps, channels, functions,
// interfaces, unsafe.Pointer, at any depth of structs and arrays):
//
//   - A pointer-free T of at most [MaxClassSize] bytes comes from byte slabs
//     mapped with mmap outside the Go heap, split into power-of-two size
//     classes from 8 to [MaxClassSize] bytes. The garbage collector never
//     scans them, so a large population of step-local scalars costs the GC
//     nothing. A block of class c is aligned to c, which is at least the
//     alignment of any T placed in it.
//   - A T that holds Go pointers must stay visible to the garbage collector:
//     if its pointers were hidden in untyped bytes, the objects they refer
//     to would be freed while still in use. Such a T comes from a typed
//     slab, chunks of ordinary []T, so the GC scans it with T's own pointer
//     map.
//   - A pointer-free T larger than MaxClassSize also comes from a typed
//     slab; it costs the GC nothing to scan because its chunks are noscan.
//   - A zero-sized T needs no memory; Alloc returns the runtime's shared
//     zero-size address and records nothing.
//
// # Hot path
//
// Alloc finds T's slab through a small direct-mapped cache keyed by the
// address of a runtime type descriptor (that of *T), so a warm Alloc costs a
// few loads and no map access; the map behind it is consulted only on a
// cache miss.
// Each allocation needs one record (slab + address) so that Release can
// find it; records come from an internal [Pool] and form a singly linked
// list headed in the Scope, which is why Release frees in reverse order and
// why a Scope is a single word.
package arena
