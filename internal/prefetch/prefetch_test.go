package prefetch

import (
	"runtime"
	"testing"
	"unsafe"
)

// Lines is a hint: it must neither fault on nil (an unmapped page) nor
// change the memory it names.
func TestLinesIsOnlyAHint(t *testing.T) {
	buf := make([]byte, 256)
	for i := range buf {
		buf[i] = byte(i)
	}
	p := unsafe.Pointer(&buf[0])
	Lines(p, unsafe.Add(p, 64), unsafe.Add(p, 128), unsafe.Add(p, 192))
	Lines(nil, nil, nil, nil)
	for i := range buf {
		if buf[i] != byte(i) {
			t.Fatalf("byte %d changed to %d", i, buf[i])
		}
	}
}

// Lines is called on allocation-free paths: it must not allocate.
func TestLinesDoesNotAllocate(t *testing.T) {
	x := new([64]byte)
	if n := testing.AllocsPerRun(100, func() { Lines(unsafe.Pointer(x), nil, nil, nil) }); n != 0 {
		t.Fatalf("Lines allocated %v times a call", n)
	}
}

// On amd64 and arm64 Lines is the assembly, in every build: the race
// build included, so that `make race` (the CI's only run of this package
// outside the allocation check) runs the instruction on nil and on live
// memory, where a no-op would pass the tests above whatever the assembly
// did.
func TestLinesIsTheInstruction(t *testing.T) {
	if a := runtime.GOARCH; (a == "amd64" || a == "arm64") && !hinting {
		t.Fatalf("on %s Lines is the no-op: the tests above check nothing of the assembly", a)
	}
}
