package abi

import (
	"os"
	"regexp"
	"testing"

	"github.com/asyncsteps/asyncsteps/syncprim"
)

// TestNoQueueConstant: asyncsteps.h's ASYNCSTEPS_NO_QUEUE is the value the
// C entry points take as syncprim.NoQueue, and 0 stays unlimited.
func TestNoQueueConstant(t *testing.T) {
	h, err := os.ReadFile("asyncsteps.h")
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^#define ASYNCSTEPS_NO_QUEUE UINT32_MAX$`).Match(h) {
		t.Fatal("asyncsteps.h does not define ASYNCSTEPS_NO_QUEUE as UINT32_MAX, the value capi.go's cNoQueue copies")
	}
	if cNoQueue != 1<<32-1 {
		t.Fatalf("cNoQueue %d, want UINT32_MAX", cNoQueue)
	}
	for _, tc := range []struct {
		c    uint32
		want int
	}{{cNoQueue, syncprim.NoQueue}, {0, 0}, {5, 5}} {
		if got := queueLen(tc.c); got != tc.want {
			t.Errorf("queueLen(%d) = %d, want %d", tc.c, got, tc.want)
		}
	}
}
