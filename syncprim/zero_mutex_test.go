package syncprim

import (
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/asyncsteps/asyncsteps/engine"
	"github.com/asyncsteps/asyncsteps/reactor"
)

// A zero Mutex works as NewMutex(1, 0) does: one flow inside at a time,
// the others queued, none failed.
func TestZeroMutexIsReady(t *testing.T) {
	var m Mutex
	r := reactor.NewManual()
	var log []string
	var exts []engine.External
	var ps []*engine.Promise
	for i := 0; i < 3; i++ {
		root := engine.New(r)
		root.Sync(&m, func(as *engine.Steps) {
			log = append(log, "in")
			exts = append(exts, as.External())
		}, nil)
		ps = append(ps, root.Promise())
	}
	r.RunUntilIdle()
	if s := m.Stats(); s.Holders != 1 || s.Queued != 2 {
		t.Fatalf("stats %+v, want 1 holder and 2 queued", s)
	}
	for i := 0; i < 3; i++ {
		exts[i].Success()
		r.RunUntilIdle()
	}
	for i, p := range ps {
		if _, err := p.Wait(); err != nil {
			t.Fatalf("flow %d: %v", i, err)
		}
	}
	if got := strings.Join(log, ","); got != "in,in,in" || m.Stats().Holders != 0 {
		t.Fatalf("log %q, stats %+v", got, m.Stats())
	}
}

// Zero Mutexes first used from several reactors at once are set up once
// (run with -race).
func TestZeroMutexFirstUseConcurrent(t *testing.T) {
	var m Mutex
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := reactor.NewManual()
			root := engine.New(r)
			root.Sync(&m, func(as *engine.Steps) {}, nil)
			p := root.Promise()
			for done := false; !done; {
				// A hand-over from another reactor's flow arrives in r's
				// inbox: drive r until the flow has ended.
				r.RunUntilIdle()
				select {
				case <-p.Done():
					done = true
				default:
					runtime.Gosched()
				}
			}
			if _, err := p.Wait(); err != nil {
				t.Errorf("%v", err)
			}
		}()
	}
	wg.Wait()
	if s := m.Stats(); s.Holders != 0 || s.Queued != 0 {
		t.Fatalf("stats %+v", s)
	}
}
