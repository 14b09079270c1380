package engine

import (
	"testing"
	"unsafe"
)

// An External's completion on the loop (External.Success, ready) touches a
// flow's cur, owned, narrow, action, queued, prevReady and args' slot 0,
// after a round over many parked flows has evicted the flow: they must
// lie in the flow's first 64 bytes, and the flow must stay in a size
// class that places it at a multiple of 64 (488 bytes: the 512 class), so
// that they are one cache line.
func TestFlowCompletionFieldsOneLine(t *testing.T) {
	var fl flow
	for name, end := range map[string]uintptr{
		"cur":       unsafe.Offsetof(fl.cur) + unsafe.Sizeof(fl.cur),
		"action":    unsafe.Offsetof(fl.action) + unsafe.Sizeof(fl.action),
		"queued":    unsafe.Offsetof(fl.queued) + unsafe.Sizeof(fl.queued),
		"owned":     unsafe.Offsetof(fl.owned) + unsafe.Sizeof(fl.owned),
		"narrow":    unsafe.Offsetof(fl.narrow) + unsafe.Sizeof(fl.narrow),
		"prevReady": unsafe.Offsetof(fl.prevReady) + unsafe.Sizeof(fl.prevReady),
		"nextReady": unsafe.Offsetof(fl.nextReady) + unsafe.Sizeof(fl.nextReady),
		"args.v[0]": unsafe.Offsetof(fl.args) + unsafe.Sizeof(fl.args.v[0]),
	} {
		if end > 64 {
			t.Errorf("flow.%s ends at byte %d, past the first cache line", name, end)
		}
	}
	// Go's classes below it are 448 and 480 bytes; 480 is not a multiple
	// of 64 and would put every other flow 32 bytes into a line.
	if size := unsafe.Sizeof(fl); size <= 480 || size > 512 {
		t.Errorf("flow is %d bytes: want 481-512 (the 512-byte size class, 64-aligned)", size)
	}
}
