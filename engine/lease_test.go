package engine

import (
	"sync/atomic"
	"testing"
	"unsafe"
)

// setLease writes the word at offset 0 of an atomic.Uint64 (lease_plain.go):
// a change of that layout in a future Go must fail here, not leave stale
// Refs valid.
func TestLeaseWordLayout(t *testing.T) {
	var u atomic.Uint64
	if unsafe.Sizeof(u) != 8 {
		t.Fatalf("atomic.Uint64 is %d bytes, want 8", unsafe.Sizeof(u))
	}
	var rt root
	if off := unsafe.Offsetof(rt.lease); off%8 != 0 {
		t.Fatalf("root.lease at offset %d, want 8-byte aligned", off)
	}
	for _, v := range []uint64{leaseOne | leaseReleased, 1<<40 + 6, 0} {
		rt.setLease(v)
		if got := rt.lease.Load(); got != v {
			t.Fatalf("setLease(%#x): Load %#x", v, got)
		}
	}
	if off := unsafe.Offsetof(rt.run); off%8 != 0 {
		t.Fatalf("root.run at offset %d, want 8-byte aligned", off)
	}
	for _, v := range []uint64{7<<runGenShift | runActive | runCancel, 1<<40 + 4, 0} {
		rt.setRunEnded(v)
		if got := rt.run.Load(); got != v {
			t.Fatalf("setRunEnded(%#x): Load %#x", v, got)
		}
	}
}
