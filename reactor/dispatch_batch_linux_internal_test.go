//go:build linux

package reactor

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// batchPipe is one pipe of TestPanickingWatchLeavesRestOfBatch, and the
// loop-owned log its callback writes to.
type batchPipe struct {
	name   string
	r      *Reactor
	rd, wr int
	log    *[]string
	done   chan []string
}

// onBatchPipe drains the pipe, logs the call, posts a local task that logs
// after the batch (the loop's turn runs it) and panics.
func onBatchPipe(p *batchPipe, fd int, _ Event) {
	var buf [8]byte
	_, _ = unix.Read(fd, buf[:])
	*p.log = append(*p.log, "io "+p.name)
	PostTo(p.r, afterBatch, p, 0)
	panic("boom " + p.name)
}

func afterBatch(p *batchPipe, _ uint64) {
	*p.log = append(*p.log, "task")
	if len(*p.log) == 4 {
		p.done <- append([]string(nil), *p.log...)
	}
}

// A watch callback that panics does not keep the rest of its batch from
// running before the turn: poll recovers once per batch (dispatchBatch)
// and goes on with the next ready descriptor, as when each callback was
// recovered on its own.
func TestPanickingWatchLeavesRestOfBatch(t *testing.T) {
	if forcePolling {
		t.Skip("gnet's Polling fallback hands the loop one event at a time, each followed by a turn")
	}
	panics := make(chan any, 4)
	r := startLoop(t, Options{CPU: -1, PanicHandler: func(v any) { panics <- v }})
	var log []string
	done := make(chan []string, 1)
	pipes := make([]*batchPipe, 2)
	for i := range pipes {
		var fds [2]int
		if err := unix.Pipe2(fds[:], unix.O_NONBLOCK|unix.O_CLOEXEC); err != nil {
			t.Fatal(err)
		}
		pipes[i] = &batchPipe{name: fmt.Sprint(i), r: r, rd: fds[0], wr: fds[1], log: &log, done: done}
		t.Cleanup(func() { unix.Close(fds[0]); unix.Close(fds[1]) })
	}
	var werr error
	onLoop(r, func() {
		// Both readable before the loop next waits: one batch.
		for _, p := range pipes {
			if err := WatchTo(r, p.rd, InterestRead, onBatchPipe, p); err != nil && werr == nil {
				werr = err
			}
			if _, err := unix.Write(p.wr, []byte{1}); err != nil && werr == nil {
				werr = err
			}
		}
	})
	if werr != nil {
		t.Fatal(werr)
	}
	got := <-done
	if !strings.HasPrefix(got[0], "io ") || !strings.HasPrefix(got[1], "io ") || got[2] != "task" || got[3] != "task" {
		t.Fatalf("log %v: want both callbacks of the batch before the turn's tasks", got)
	}
	vals := []string{fmt.Sprint(<-panics), fmt.Sprint(<-panics)}
	sort.Strings(vals)
	if fmt.Sprint(vals) != "[boom 0 boom 1]" {
		t.Fatalf("PanicHandler got %v", vals)
	}
	onLoop(r, func() {
		for _, p := range pipes {
			_ = r.Unwatch(p.rd)
		}
	})
}
