package reactor

import (
	"testing"
	"unsafe"
)

// The ring's slots are tasks: naming each of their fields must not make
// them bigger (7 words on 64-bit platforms).
func TestTaskStaysSevenWords(t *testing.T) {
	if got, want := unsafe.Sizeof(task{}), 7*unsafe.Sizeof(uintptr(0)); got != want {
		t.Errorf("sizeof(task) = %d, want %d", got, want)
	}
}
