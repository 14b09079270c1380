package arena

import (
	"errors"
	"math/rand/v2"
	"reflect"
	"runtime"
	"testing"
	"unsafe"
	"weak"
)

// Types used across the tests. Each comment says where Alloc must put it.
type (
	withFloat struct { // bytes, class 16, align 8
		_ byte
		_ float64
	}
	bigBytes [5000]byte // pointer-free but larger than MaxClassSize: typed
	withPtr  struct {   // typed
		p   *payload
		pad [3]uint64
	}
	withString struct { // typed: a string holds a pointer
		n uint32
		s string
	}
	payload struct{ v [4]uint64 }
)

// bytesOf views the memory of *p as bytes.
func bytesOf[T any](p *T) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(p)), unsafe.Sizeof(*p))
}

func allZero(b []byte) bool {
	for _, x := range b {
		if x != 0 {
			return false
		}
	}
	return true
}

func TestClassFor(t *testing.T) {
	tests := []struct {
		size, align uintptr
		want        int
	}{
		{1, 1, 0},
		{8, 8, 0},
		{9, 1, 1},
		{16, 8, 1},
		{17, 8, 2},
		{24, 8, 2},
		{1000, 1, 7},
		{1024, 8, 7},
		{1025, 1, 8},
		{4096, 8, 9},
		{4097, 1, -1},
		{2, 16, 1}, // alignment can force a bigger class
	}
	for _, tt := range tests {
		got := classFor(tt.size, tt.align)
		if got != tt.want {
			t.Errorf("classFor(%d, %d) = %d, want %d", tt.size, tt.align, got, tt.want)
		}
		if got >= 0 && (classSize(got) < tt.size || classSize(got)%tt.align != 0) {
			t.Errorf("classSize(%d) = %d does not fit size %d align %d", got, classSize(got), tt.size, tt.align)
		}
	}
	if got := classSize(NumClasses - 1); got != MaxClassSize {
		t.Errorf("largest class = %d, want MaxClassSize %d", got, MaxClassSize)
	}
}

func TestPointerFree(t *testing.T) {
	tests := []struct {
		typ  reflect.Type
		want bool
	}{
		{reflect.TypeFor[uint8](), true},
		{reflect.TypeFor[complex128](), true},
		{reflect.TypeFor[[3]uint16](), true},
		{reflect.TypeFor[withFloat](), true},
		{reflect.TypeFor[[0]*int](), true},
		{reflect.TypeFor[struct{}](), true},
		{reflect.TypeFor[*int](), false},
		{reflect.TypeFor[unsafe.Pointer](), false},
		{reflect.TypeFor[string](), false},
		{reflect.TypeFor[[]byte](), false},
		{reflect.TypeFor[map[int]int](), false},
		{reflect.TypeFor[chan int](), false},
		{reflect.TypeFor[func()](), false},
		{reflect.TypeFor[any](), false},
		{reflect.TypeFor[error](), false},
		{reflect.TypeFor[[2]struct{ a [1]*byte }](), false},
		{reflect.TypeFor[withString](), false},
	}
	for _, tt := range tests {
		if got := pointerFree(tt.typ); got != tt.want {
			t.Errorf("pointerFree(%v) = %v, want %v", tt.typ, got, tt.want)
		}
	}
}

func TestTypeKey(t *testing.T) {
	keys := map[uintptr]reflect.Type{}
	add := func(key uintptr, typ reflect.Type) {
		t.Helper()
		want := reflect.ValueOf(reflect.PointerTo(typ)).Pointer()
		if key != want {
			t.Errorf("typeKey for %v = %#x, want the *T descriptor %#x", typ, key, want)
		}
		if prev, ok := keys[key]; ok && prev != typ {
			t.Errorf("typeKey collides for %v and %v", prev, typ)
		}
		keys[key] = typ
	}
	add(typeKey[uint8](), reflect.TypeFor[uint8]())
	add(typeKey[uint8](), reflect.TypeFor[uint8]())
	add(typeKey[int8](), reflect.TypeFor[int8]())
	add(typeKey[*uint8](), reflect.TypeFor[*uint8]())
	add(typeKey[withPtr](), reflect.TypeFor[withPtr]())
	add(typeKey[[4]uint64](), reflect.TypeFor[[4]uint64]())
	add(typeKey[payload](), reflect.TypeFor[payload]())
	if len(keys) != 6 {
		t.Errorf("%d distinct keys for 6 distinct types", len(keys))
	}
}

func TestPool(t *testing.T) {
	p := NewPool[payload](4)
	var got []*payload
	for i := range 10 {
		x := p.Get()
		if *x != (payload{}) {
			t.Fatalf("Get %d returned non-zero element %v", i, *x)
		}
		x.v[0] = uint64(i) + 1
		got = append(got, x)
	}
	if p.InUse() != 10 || p.Cap() != 12 {
		t.Fatalf("InUse, Cap = %d, %d; want 10, 12", p.InUse(), p.Cap())
	}
	seen := map[*payload]bool{}
	for _, x := range got {
		if seen[x] {
			t.Fatalf("element %p handed out twice", x)
		}
		seen[x] = true
	}
	last := got[9]
	for _, x := range got {
		p.Put(x)
	}
	p.Put(nil)
	if p.InUse() != 0 {
		t.Fatalf("InUse after Put = %d", p.InUse())
	}
	x := p.Get()
	if x != last {
		t.Errorf("Get after Put = %p, want the last element put %p", x, last)
	}
	if *x != (payload{}) {
		t.Errorf("reused element not zeroed: %v", *x)
	}
	if p.Cap() != 12 {
		t.Errorf("Cap grew to %d on reuse", p.Cap())
	}

	var zp Pool[[3]uint64]
	if zp.Get() == nil || zp.Cap() < 1 {
		t.Errorf("zero Pool: Cap = %d", zp.Cap())
	}
}

// allocFill allocates one T, checks it is zero, fills it with 0xAB and
// returns it.
func allocFill[T any](t *testing.T, a *Arena, s *Scope) *T {
	t.Helper()
	p := Alloc[T](a, s)
	if b := bytesOf(p); !allZero(b) {
		t.Fatalf("Alloc[%v] returned non-zero memory", reflect.TypeFor[T]())
	}
	b := bytesOf(p)
	for i := range b {
		b[i] = 0xAB
	}
	return p
}

func testReuse[T any](t *testing.T) {
	a := New()
	defer a.Close()
	var s Scope
	p := allocFill[T](t, a, &s)
	a.Release(&s)
	if !s.Empty() {
		t.Fatal("scope not empty after Release")
	}
	q := allocFill[T](t, a, &s) // fails if the reused block was not zeroed
	if q != p {
		t.Errorf("freed block not reused: first %p, second %p", p, q)
	}
	a.Release(&s)
}

func TestZeroingOnReuse(t *testing.T) {
	t.Run("bytes/class8", testReuse[uint8])
	t.Run("bytes/class16", testReuse[withFloat])
	t.Run("bytes/class1024", testReuse[[1000]byte])
	t.Run("bytes/class4096", testReuse[[4096]byte])
	t.Run("typed/big", testReuse[bigBytes])
	t.Run("typed/ptr", func(t *testing.T) {
		testReuse[[4]uint64](t) // warm another class so state is shared
		a := New()
		defer a.Close()
		var s Scope
		h := Alloc[withString](a, &s)
		h.n, h.s = 7, "hello"
		a.Release(&s)
		h2 := Alloc[withString](a, &s)
		if h2 != h || h2.n != 0 || h2.s != "" {
			t.Errorf("typed reuse: same=%v n=%d s=%q", h2 == h, h2.n, h2.s)
		}
		a.Release(&s)
	})
}

func testAlign[T any](t *testing.T, wantBytes bool) {
	a := New()
	defer a.Close()
	var s Scope
	const n = 40 // enough to cross a chunk for the big types
	typ := reflect.TypeFor[T]()
	ptrs := make([]*T, n)
	for i := range ptrs {
		p := Alloc[T](a, &s)
		ptrs[i] = p
		if u := uintptr(unsafe.Pointer(p)); u%uintptr(typ.Align()) != 0 {
			t.Fatalf("%v at %#x not aligned to %d", typ, u, typ.Align())
		}
		if got := a.inSlabs(unsafe.Pointer(p)); got != wantBytes {
			t.Fatalf("%v in byte slabs = %v, want %v", typ, got, wantBytes)
		}
		b := bytesOf(p)
		for j := range b {
			b[j] = byte(i + 1)
		}
	}
	// Any overlap between allocations shows up as a byte written by a
	// later allocation.
	for i, p := range ptrs {
		for j, x := range bytesOf(p) {
			if x != byte(i+1) {
				t.Fatalf("%v #%d byte %d = %d, want %d: allocations overlap", typ, i, j, x, i+1)
			}
		}
	}
	a.Release(&s)
}

func TestAlignment(t *testing.T) {
	t.Run("uint8", func(t *testing.T) { testAlign[uint8](t, true) })
	t.Run("uint64", func(t *testing.T) { testAlign[uint64](t, true) })
	t.Run("[3]uint16", func(t *testing.T) { testAlign[[3]uint16](t, true) })
	t.Run("struct_float64", func(t *testing.T) { testAlign[withFloat](t, true) })
	t.Run("complex128", func(t *testing.T) { testAlign[complex128](t, true) })
	t.Run("[1000]byte", func(t *testing.T) { testAlign[[1000]byte](t, true) })
	t.Run("[5000]byte", func(t *testing.T) { testAlign[bigBytes](t, false) })
	t.Run("ptr_struct", func(t *testing.T) { testAlign[withPtr](t, false) })
	t.Run("string", func(t *testing.T) { testAlign[string](t, false) })
	t.Run("[2]any", func(t *testing.T) { testAlign[[2]any](t, false) })
}

func TestZeroSized(t *testing.T) {
	a := New()
	defer a.Close()
	var s Scope
	p := Alloc[struct{}](a, &s)
	q := Alloc[[0]uint64](a, &s)
	if p == nil || q == nil {
		t.Fatal("Alloc of a zero-sized type returned nil")
	}
	if !s.Empty() || a.Stats().ObjectsInUse != 0 {
		t.Errorf("zero-sized allocations were recorded: %+v", a.Stats())
	}
}

// setPayload stores a fresh payload in h and returns only a weak reference,
// so that h is the sole strong reference.
//
//go:noinline
func setPayload(h *withPtr) weak.Pointer[payload] {
	p := &payload{v: [4]uint64{42}}
	h.p = p
	return weak.Make(p)
}

//go:noinline
func alive(w weak.Pointer[payload]) bool { return w.Value() != nil }

func TestPointerHoldingStaysVisible(t *testing.T) {
	a := New()
	defer a.Close()
	var s Scope
	// Allocate enough to span several chunks, keeping one weak reference
	// per object.
	const n = 600
	hs := make([]*withPtr, n)
	ws := make([]weak.Pointer[payload], n)
	for i := range hs {
		hs[i] = Alloc[withPtr](a, &s)
		ws[i] = setPayload(hs[i])
	}
	if a.inSlabs(unsafe.Pointer(hs[0])) {
		t.Fatal("pointer-holding type was placed in GC-invisible byte slabs")
	}
	for range 3 {
		runtime.GC()
	}
	for i, w := range ws {
		if !alive(w) {
			t.Fatalf("object %d referenced only from arena memory was collected", i)
		}
		if hs[i].p.v[0] != 42 {
			t.Fatalf("object %d corrupted: %v", i, hs[i].p.v)
		}
	}
	clear(hs)
	a.Release(&s)
	for range 3 {
		runtime.GC()
	}
	// Release zeroes typed memory, so the arena must not keep the payloads
	// alive any more.
	for i, w := range ws {
		if alive(w) {
			t.Fatalf("object %d still reachable after Release: freed memory was not zeroed", i)
		}
	}
}

func TestStatsReturnToZero(t *testing.T) {
	a := New()
	var s1, s2 Scope
	Alloc[uint64](a, &s1)
	Alloc[withFloat](a, &s1)
	Alloc[[1000]byte](a, &s2)
	Alloc[withPtr](a, &s2)
	Alloc[bigBytes](a, &s1)
	st := a.Stats()
	want := Stats{ObjectsInUse: 5, BytesInUse: 8 + 16 + 1024, TypedInUse: 2, SlabBytes: 3 * SlabSize, Types: 5}
	if st.ObjectsInUse != want.ObjectsInUse || st.BytesInUse != want.BytesInUse ||
		st.TypedInUse != want.TypedInUse || st.SlabBytes != want.SlabBytes || st.Types != want.Types {
		t.Fatalf("Stats = %+v, want %+v", st, want)
	}
	if c := st.Classes[7]; c.Size != 1024 || c.InUse != 1 || c.Slabs != 1 {
		t.Errorf("class 7 = %+v", c)
	}
	if err := a.Close(); !errors.Is(err, ErrInUse) {
		t.Errorf("Close with live allocations = %v, want ErrInUse", err)
	}
	a.Release(&s1)
	a.Release(&s2)
	st = a.Stats()
	if st.ObjectsInUse != 0 || st.BytesInUse != 0 || st.TypedInUse != 0 {
		t.Fatalf("Stats after Release = %+v, want nothing in use", st)
	}
	for c, cs := range st.Classes {
		if cs.InUse != 0 {
			t.Errorf("class %d still has %d in use", c, cs.InUse)
		}
	}
	if st.SlabBytes != 3*SlabSize {
		t.Errorf("SlabBytes = %d; slabs are kept for reuse until Close", st.SlabBytes)
	}
	if err := a.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if st := a.Stats(); st.SlabBytes != 0 || st.Types != 0 {
		t.Errorf("Stats after Close = %+v", st)
	}
	if err := a.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Error("Alloc after Close did not panic")
			}
		}()
		Alloc[uint64](a, &s1)
	}()
}

func TestReleaseReverseOrder(t *testing.T) {
	a := New()
	defer a.Close()
	var s Scope
	first := Alloc[uint64](a, &s)
	Alloc[uint64](a, &s)
	second := Alloc[withPtr](a, &s)
	Alloc[withPtr](a, &s)
	a.Release(&s)
	// Free lists are LIFO, so the block freed last (the first allocated)
	// comes back first.
	if p := Alloc[uint64](a, &s); p != first {
		t.Errorf("bytes: got %p, want the first allocation %p", p, first)
	}
	if p := Alloc[withPtr](a, &s); p != second {
		t.Errorf("typed: got %p, want the first allocation %p", p, second)
	}
	a.Release(&s)
}

// TestCacheMiss forces the direct-mapped cache to miss and checks the map
// behind it returns the same slab rather than building a second one.
func TestCacheMiss(t *testing.T) {
	a := New()
	defer a.Close()
	var s Scope
	Alloc[withPtr](a, &s)
	key := typeKey[withPtr]()
	e := &a.cache[cacheIndex(key)]
	if e.key != key {
		t.Fatal("cache not filled after first Alloc")
	}
	slab := e.info.slab
	*e = cacheEntry{key: key + 8} // as if another type had evicted it
	Alloc[withPtr](a, &s)
	if e.key != key || e.info.slab != slab || len(a.types) != 1 {
		t.Errorf("miss rebuilt type info: key ok=%v same slab=%v types=%d", e.key == key, e.info.slab == slab, len(a.types))
	}
	if got := a.Stats().TypedInUse; got != 2 {
		t.Errorf("TypedInUse = %d, want 2", got)
	}
	a.Release(&s)
}

// live is one allocation the interleaving test tracks: check verifies the
// tag written into it is intact.
type live struct {
	scope int
	check func() bool
}

func tagged[T any](a *Arena, s *Scope, tag uint64, set func(*T, uint64), get func(*T) uint64) (func() bool, bool) {
	p := Alloc[T](a, s)
	zero := allZero(bytesOf(p))
	set(p, tag)
	return func() bool { return get(p) == tag }, zero
}

// b2u turns a consistency check into a factor, so a torn tag reads as 0.
func b2u(ok bool) uint64 {
	if ok {
		return 1
	}
	return 0
}

func TestInterleavedScopes(t *testing.T) {
	a := New()
	defer a.Close()
	const nScopes = 32
	scopes := make([]Scope, nScopes)
	var lives []live
	rng := rand.New(rand.NewPCG(1, 2))
	keep := make(map[uint64]*payload)
	for step := range 20000 {
		i := rng.IntN(nScopes)
		if rng.IntN(8) == 0 {
			a.Release(&scopes[i])
			kept := lives[:0]
			for _, l := range lives {
				if l.scope != i {
					kept = append(kept, l)
				}
			}
			lives = kept
			for _, l := range lives {
				if !l.check() {
					t.Fatalf("step %d: releasing scope %d corrupted another scope's allocation", step, i)
				}
			}
			continue
		}
		tag := uint64(step) + 1
		var check func() bool
		var zero bool
		switch rng.IntN(4) {
		case 0:
			check, zero = tagged(a, &scopes[i], tag, func(p *uint64, v uint64) { *p = v }, func(p *uint64) uint64 { return *p })
		case 1:
			check, zero = tagged(a, &scopes[i], tag,
				func(p *[3]uint64, v uint64) { p[0], p[2] = v, v },
				func(p *[3]uint64) uint64 { return p[0] * b2u(p[0] == p[2]) })
		case 2:
			check, zero = tagged(a, &scopes[i], tag,
				func(p *[88]uint64, v uint64) { p[0], p[87] = v, v },
				func(p *[88]uint64) uint64 { return p[0] * b2u(p[0] == p[87]) })
		case 3:
			pl := &payload{v: [4]uint64{tag}}
			keep[tag] = pl
			check, zero = tagged(a, &scopes[i], tag,
				func(p *withPtr, v uint64) { p.p, p.pad[2] = pl, v },
				func(p *withPtr) uint64 {
					if p.p == nil || p.p.v[0] != p.pad[2] {
						return 0
					}
					return p.pad[2]
				})
		}
		if !zero {
			t.Fatalf("step %d: allocation not zeroed", step)
		}
		lives = append(lives, live{scope: i, check: check})
	}
	for i := range scopes {
		a.Release(&scopes[i])
	}
	if st := a.Stats(); st.ObjectsInUse != 0 || st.BytesInUse != 0 || st.TypedInUse != 0 {
		t.Fatalf("Stats after releasing all = %+v", st)
	}
}

var (
	sinkU *[4]uint64
	sinkP *withPtr
)

func TestAllocsPerRun(t *testing.T) {
	a := New()
	defer a.Close()
	var s Scope
	pool := NewPool[withPtr](0)
	pl := &payload{}
	tests := []struct {
		name string
		fn   func()
	}{
		{"bytes", func() {
			sinkU = Alloc[[4]uint64](a, &s)
			a.Release(&s)
		}},
		{"typed", func() {
			p := Alloc[withPtr](a, &s)
			p.p = pl
			sinkP = p
			a.Release(&s)
		}},
		{"mixed_step", func() {
			for range 8 {
				Alloc[uint64](a, &s)
				Alloc[[1000]byte](a, &s)
				Alloc[withPtr](a, &s).p = pl
				Alloc[withString](a, &s)
				Alloc[bigBytes](a, &s)
			}
			a.Release(&s)
		}},
		{"zero_sized", func() {
			Alloc[struct{}](a, &s)
			a.Release(&s)
		}},
		{"pool", func() {
			x := pool.Get()
			x.p = pl
			pool.Put(x)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.fn() // warm
			if n := testing.AllocsPerRun(100, tt.fn); n != 0 {
				t.Errorf("%s: %v allocations per run, want 0", tt.name, n)
			}
		})
	}
	sinkU, sinkP = nil, nil
}

// Trim after a burst: an idle class's slabs go back to the OS; a class
// with a block in use keeps its own; both allocate correctly afterwards.
func TestTrimUnmapsIdleClasses(t *testing.T) {
	a := New()
	defer func() {
		if err := a.Close(); err != nil {
			t.Error(err)
		}
	}()
	var burst, kept Scope
	for i := 0; i < 10000; i++ { // 80 KB of class 8: two slabs
		*Alloc[uint64](a, &burst) = 1
	}
	k := Alloc[withFloat](a, &kept)
	if got := a.Stats().SlabBytes; got != 3*SlabSize {
		t.Fatalf("SlabBytes %d, want 3 slabs", got)
	}
	if n := a.Trim(); n != 0 {
		t.Fatalf("Trim with every class in use unmapped %d bytes", n)
	}
	a.Release(&burst)
	if n := a.Trim(); n != 2*SlabSize {
		t.Fatalf("Trim unmapped %d bytes, want the idle class's 2 slabs", n)
	}
	st := a.Stats()
	if st.SlabBytes != SlabSize || st.Classes[0].Slabs != 0 || st.Classes[0].Carved != 0 {
		t.Fatalf("after Trim: %+v", st)
	}
	if !a.inSlabs(unsafe.Pointer(k)) {
		t.Fatal("the class in use lost its slab")
	}
	var again Scope
	for i := 0; i < 10000; i++ {
		p := Alloc[uint64](a, &again)
		if *p != 0 {
			t.Fatalf("block %d after Trim not zero: %d", i, *p)
		}
		*p = 2
	}
	a.Release(&again)
	a.Release(&kept)
	if n := a.Trim(); n != 3*SlabSize {
		t.Fatalf("second Trim unmapped %d bytes, want 3 slabs", n)
	}
	if got := a.Stats().SlabBytes; got != 0 {
		t.Fatalf("SlabBytes %d after trimming everything", got)
	}
}
