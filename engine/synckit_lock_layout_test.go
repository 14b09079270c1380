package engine

import (
	"testing"
	"unsafe"
)

// TestLockLayout pins what callLocked relies on: Lock[T] is lockOps for
// any T, field for field.
func TestLockLayout(t *testing.T) {
	check := func(name string, size, obj, key, enter, leave, slow uintptr) {
		var o lockOps
		if size != unsafe.Sizeof(o) || obj != unsafe.Offsetof(o.obj) || key != unsafe.Offsetof(o.key) || enter != unsafe.Offsetof(o.enter) ||
			leave != unsafe.Offsetof(o.leave) || slow != unsafe.Offsetof(o.slow) {
			t.Errorf("%s: layout differs from lockOps", name)
		}
	}
	var a Lock[int]
	check("Lock[int]", unsafe.Sizeof(a), unsafe.Offsetof(a.obj), unsafe.Offsetof(a.key), unsafe.Offsetof(a.enter), unsafe.Offsetof(a.leave), unsafe.Offsetof(a.slow))
	var b Lock[[7]int64]
	check("Lock[big]", unsafe.Sizeof(b), unsafe.Offsetof(b.obj), unsafe.Offsetof(b.key), unsafe.Offsetof(b.enter), unsafe.Offsetof(b.leave), unsafe.Offsetof(b.slow))
}
