//go:build linux

package reactor

import (
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"unsafe"

	"github.com/asyncsteps/asyncsteps/internal/goid"
)

// A task that PostRun runs directly and that panics with nil runs, and
// PostRun says so, whatever GODEBUG's panicnil says: by default the panic
// is a *runtime.PanicNilError, which goes to the PanicHandler; with
// panicnil=1, recover returns nil and the panic ends there, as for a task
// queued on the loop (runLocalTo, safeCb), which counts as run. Reporting
// false would tell the engine that the reactor is closed (Execute's root
// then ends with "reactor closed", a batch's roots all of them) for a task
// that ran. The panicnil=1 half runs this test again in a child process.
func TestDirectPanicNilIsRun(t *testing.T) {
	if forcePolling {
		t.Skip("the Polling fallback never parks: nothing to assist or hand off")
	}
	if os.Getenv("REVSF_PANICNIL_CHILD") == "" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestDirectPanicNilIsRun$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), "REVSF_PANICNIL_CHILD=1", "GODEBUG=panicnil=1")
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "--- PASS") {
			t.Fatalf("GODEBUG=panicnil=1: %v\n%s", err, out)
		}
		if strings.Contains(string(out), "--- SKIP") {
			t.Logf("GODEBUG=panicnil=1 half skipped:\n%s", out)
		}
	}
	handled := make(chan any, 4)
	r := startLoop(t, Options{CPU: -1, Spin: NoSpin, PanicHandler: func(v any) { handled <- v }})
	for round := 0; round < 20; round++ {
		waitParked(t, r)
		me := goid.Current()
		direct := false
		ok := X.PostRun(r, func(unsafe.Pointer, uint64) {
			direct = goid.Current() == me
			panic(nil)
		}, nil, 0)
		if !direct {
			continue // the loop woke first: not the path under test
		}
		if !ok {
			t.Fatalf("PostRun reported false for a task it ran (panic(nil), GODEBUG=%q)", os.Getenv("GODEBUG"))
		}
		if g := r.loopG.Load(); g == me {
			t.Fatal("the caller still holds the loop word")
		}
		if os.Getenv("REVSF_PANICNIL_CHILD") == "" {
			if v := <-handled; v == nil {
				t.Fatal("the PanicHandler got nil, want *runtime.PanicNilError")
			} else if _, isNil := v.(*runtime.PanicNilError); !isNil {
				t.Fatalf("the PanicHandler got %T, want *runtime.PanicNilError", v)
			}
		}
		onLoop(r, func() {}) // the loop goes on
		return
	}
	t.Skip("the loop never stayed parked for a direct turn")
}
