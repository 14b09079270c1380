//go:build linux

package reactor

import (
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// panicNilPipe is the pipe of TestPanicNilWatchDispatchedOnce and what its
// callback counts (loop-owned).
type panicNilPipe struct {
	r     *Reactor
	calls int
	done  chan int
}

// onPanicNilPipe drains the pipe and counts the call; the first call posts
// a task that reports the count after the batch, and panics with nil.
func onPanicNilPipe(p *panicNilPipe, fd int, _ Event) {
	var buf [8]byte
	_, _ = unix.Read(fd, buf[:])
	p.calls++
	if p.calls == 1 {
		PostTo(p.r, reportPanicNilCalls, p, 0)
		panic(nil)
	}
}

func reportPanicNilCalls(p *panicNilPipe, _ uint64) { p.done <- p.calls }

// A watch callback that panics with nil has its event delivered once, as
// any callback that panics, whatever GODEBUG's panicnil says: by default the
// panic is a *runtime.PanicNilError, which goes to the PanicHandler; with
// panicnil=1, recover returns nil and the panic ends there (no handler
// call, as safeCb's), and the batch goes on after that event. A batch
// resumed at the event whose callback panicked delivers it again (a
// callback that always panics so would spin the loop forever). The
// panicnil=1 half runs this test again in a child process.
func TestPanicNilWatchDispatchedOnce(t *testing.T) {
	child := os.Getenv("REVP1_PANICNIL_CHILD") != ""
	if !child {
		cmd := exec.Command(os.Args[0], "-test.run=^TestPanicNilWatchDispatchedOnce$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), "REVP1_PANICNIL_CHILD=1", "GODEBUG=panicnil=1")
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "--- PASS") {
			t.Fatalf("GODEBUG=panicnil=1: %v\n%s", err, out)
		}
	}
	handled := make(chan any, 4)
	r := startLoop(t, Options{CPU: -1, PanicHandler: func(v any) { handled <- v }})
	var fds [2]int
	if err := unix.Pipe2(fds[:], unix.O_NONBLOCK|unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fds[0]); unix.Close(fds[1]) })
	p := &panicNilPipe{r: r, done: make(chan int, 1)}
	var werr error
	onLoop(r, func() {
		if werr = WatchTo(r, fds[0], InterestRead, onPanicNilPipe, p); werr == nil {
			_, werr = unix.Write(fds[1], []byte{1})
		}
	})
	if werr != nil {
		t.Fatal(werr)
	}
	if calls := <-p.done; calls != 1 {
		t.Fatalf("GODEBUG=%q: the callback ran %d times for one event, want 1", os.Getenv("GODEBUG"), calls)
	}
	onLoop(r, func() { _ = r.Unwatch(fds[0]) })
	if child {
		if len(handled) != 0 {
			t.Fatalf("panicnil=1: the PanicHandler got %v, want no call", <-handled)
		}
		return
	}
	if v := <-handled; v == nil {
		t.Fatal("the PanicHandler got nil, want *runtime.PanicNilError")
	} else if _, ok := v.(*runtime.PanicNilError); !ok {
		t.Fatalf("the PanicHandler got %T, want *runtime.PanicNilError", v)
	}
}
