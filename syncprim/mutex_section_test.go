package syncprim

// The uncontended Mutex section is the Sync step itself (engine.AddLocked):
// these pin that it is left however it ends, whatever handlers the
// section's own callback installs, and that reentrance is not counted.

import (
	"errors"
	"testing"
	"time"

	"github.com/asyncsteps/asyncsteps/engine"
	"github.com/asyncsteps/asyncsteps/reactor"
)

func TestMutexSectionLeftWithItsOwnHandlers(t *testing.T) {
	for _, tc := range []struct{ end, code string }{
		{"success", ""},
		{"external", ""},
		{"error", "Boom"},
		{"timeout", engine.Timeout},
		{"cancel", engine.Canceled},
	} {
		t.Run(tc.end, func(t *testing.T) {
			r := reactor.NewManual()
			m := NewMutex(1, 0)
			var ext engine.External
			var log []string
			root, p := start(r, m, func(as *engine.Steps) {
				if s := m.Stats(); s.Holders != 1 || !as.Holds(m) {
					t.Errorf("inside: stats %+v, Holds %v", s, as.Holds(m))
				}
				as.SetCancel(func(*engine.Steps) { log = append(log, "cancel") })
				switch tc.end {
				case "success":
					as.Success()
				case "external":
					ext = as.External()
				case "error":
					as.Error("Boom")
				case "timeout":
					as.SetTimeout(time.Millisecond)
				}
			}, func(as *engine.Steps, code string) {
				log = append(log, "handler "+code)
				if s := m.Stats(); s.Holders != 1 {
					t.Errorf("handler outside the section: stats %+v", s)
				}
			})
			r.RunUntilIdle()
			switch tc.end {
			case "external":
				ext.Success()
			case "timeout":
				r.Advance(2 * time.Millisecond)
			case "cancel":
				root.Cancel()
			}
			r.RunUntilIdle()
			if !done(p) {
				t.Fatal("flow not done")
			}
			_, err := p.Wait()
			var fe *engine.Error
			if tc.code == "" && err != nil || tc.code != "" && (!errors.As(err, &fe) || fe.Code != tc.code) {
				t.Fatalf("err %v, want code %q", err, tc.code)
			}
			if s := m.Stats(); s != (Stats{}) {
				t.Fatalf("after %s: stats %+v", tc.end, s)
			}
			if tc.code != "" && (len(log) == 0 || log[0] != "cancel") {
				t.Errorf("log %q: the section's cancel handler did not run first", log)
			}
			// The next flow enters at once.
			var entered bool
			_, p2 := start(r, m, func(*engine.Steps) { entered = true })
			r.RunUntilIdle()
			if _, err := p2.Wait(); err != nil || !entered {
				t.Fatalf("next flow: entered %v, err %v", entered, err)
			}
		})
	}
}

func TestMutexReentranceNotCounted(t *testing.T) {
	r := reactor.NewManual()
	m := NewMutex(2, 0)
	var inner Stats
	root := engine.New(r)
	root.Sync(m, func(as *engine.Steps) {
		as.Sync(m, func(as *engine.Steps) { inner = m.Stats() }, nil)
	})
	p := root.Promise()
	r.RunUntilIdle()
	if _, err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	if inner.Holders != 1 {
		t.Fatalf("nested Sync on a Mutex(2) the flow holds: stats %+v, want 1 holder", inner)
	}
	if s := m.Stats(); s != (Stats{}) {
		t.Fatalf("stats %+v", s)
	}
}
