package storerel

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"unsafe"
)

// The assembly writes the word at offset 0 of an atomic.Uintptr: a change of
// that layout in a future Go must fail here, not corrupt a lock.
func TestLayout(t *testing.T) {
	var u atomic.Uintptr
	if unsafe.Sizeof(u) != unsafe.Sizeof(uintptr(0)) {
		t.Fatalf("atomic.Uintptr is %d bytes, want one word", unsafe.Sizeof(u))
	}
	Uintptr(&u, 0xdead)
	if got := *(*uintptr)(unsafe.Pointer(&u)); got != 0xdead || u.Load() != 0xdead {
		t.Fatalf("stored %#x (Load %#x), want 0xdead", got, u.Load())
	}
	var u64 atomic.Uint64
	if unsafe.Sizeof(u64) != 8 {
		t.Fatalf("atomic.Uint64 is %d bytes, want 8", unsafe.Sizeof(u64))
	}
	Uint64(&u64, 1<<40+7)
	if u64.Load() != 1<<40+7 {
		t.Fatalf("Uint64 stored %#x", u64.Load())
	}
	var b atomic.Bool
	if unsafe.Sizeof(b) != 4 {
		t.Fatalf("atomic.Bool is %d bytes, want 4", unsafe.Sizeof(b))
	}
	for _, v := range []bool{true, false, true} {
		Bool(&b, v)
		if b.Load() != v || b.Swap(v) != v {
			t.Fatalf("Bool(%v): Load %v", v, b.Load())
		}
	}
}

// TestLockWord uses Uintptr as the unlock of a CompareAndSwap spin lock
// that guards plain (non-atomic) counters: a lost update or a torn pair
// means the release let a critical section's stores leak past it.
func TestLockWord(t *testing.T) {
	var word atomic.Uintptr
	var a, b int // guarded by word
	const workers, rounds = 4, 20000
	var wg sync.WaitGroup
	for w := 1; w <= workers; w++ {
		wg.Add(1)
		go func(me uintptr) {
			defer wg.Done()
			for range rounds {
				for !word.CompareAndSwap(0, me) {
					runtime.Gosched()
				}
				if a != b {
					t.Errorf("torn section: a=%d b=%d", a, b)
				}
				a++
				b++
				Uintptr(&word, 0)
			}
		}(uintptr(w))
	}
	wg.Wait()
	if a != workers*rounds || b != a {
		t.Fatalf("a=%d b=%d, want %d each", a, b, workers*rounds)
	}
}
