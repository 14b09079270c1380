package engine

import "testing"

// Str and Bytes carry their payload without an allocation (the branch for
// lengths over 4 GiB allocates only when taken).
func TestAllocStrAndBytesValues(t *testing.T) {
	s := string(make([]byte, 1024))
	b := make([]byte, 1024)
	var sink Value
	if n := testing.AllocsPerRun(100, func() { sink = Str(s) }); n != 0 {
		t.Errorf("Str: %v allocs per call, want 0", n)
	}
	if n := testing.AllocsPerRun(100, func() { sink = Bytes(b) }); n != 0 {
		t.Errorf("Bytes: %v allocs per call, want 0", n)
	}
	if sink.Kind() != KindBytes || len(sink.Bytes()) != 1024 {
		t.Errorf("Bytes value %v of %d bytes", sink.Kind(), len(sink.Bytes()))
	}
}
