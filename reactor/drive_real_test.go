package reactor_test

import (
	"strings"
	"testing"
	"time"

	"github.com/asyncsteps/asyncsteps/reactor"
)

// drivePanic runs drive and returns what it panicked with ("" for none).
func drivePanic(drive func()) (msg string) {
	defer func() {
		if v := recover(); v != nil {
			msg, _ = v.(string)
			if msg == "" {
				msg = "non-string panic"
			}
		}
	}()
	drive()
	return ""
}

// Iterate, RunUntilIdle and Advance drive a manual reactor only. On a real
// one they are a mistake outside any flow: before Run they would run its
// work on the caller unseen by Run, and while it runs they used to wait
// for its loop word forever, a silent hang. Each panics naming the mistake,
// and a real reactor refused before Run still runs and closes.
func TestDriveRealReactorPanics(t *testing.T) {
	drives := []struct {
		name  string
		drive func(r *reactor.Reactor)
	}{
		{"Iterate", func(r *reactor.Reactor) { r.Iterate() }},
		{"RunUntilIdle", func(r *reactor.Reactor) { r.RunUntilIdle() }},
		{"Advance", func(r *reactor.Reactor) { r.Advance(time.Millisecond) }},
	}
	for _, running := range []bool{false, true} {
		for _, d := range drives {
			r, err := reactor.New(reactor.Options{})
			if err != nil {
				t.Fatal(err)
			}
			ran := make(chan struct{})
			r.Immediate(func() { close(ran) })
			runDone := make(chan error, 1)
			if running {
				go func() { runDone <- r.Run() }()
				<-ran
			}
			msg := drivePanic(func() { d.drive(r) })
			if !strings.Contains(msg, "RunUntilIdle") || !strings.Contains(msg, "real reactor") {
				t.Errorf("%s on a real reactor (running %v): panic %q, want one naming the mistake", d.name, running, msg)
			}
			if !running {
				select {
				case <-ran:
					t.Errorf("%s before Run ran the loop's work on the caller", d.name)
				default:
				}
				go func() { runDone <- r.Run() }()
				<-ran // the refused drive left the loop free for Run
			}
			if err := r.Close(); err != nil {
				t.Fatal(err)
			}
			if err := <-runDone; err != nil {
				t.Fatalf("Run: %v", err)
			}
		}
	}
}

// Iterate and Advance from a callback of a real reactor's own loop are the
// same mistake: they panic naming it, and the loop keeps its word. Before,
// the nested drive's count went 0, 1, 0 and its end gave up the loop word
// while the loop still ran the callback: the loop's goroutine was no longer
// the loop (IsSameThread false), and any goroutine could take the loop
// under it.
func TestDriveRealReactorFromItsLoopPanics(t *testing.T) {
	r, err := reactor.New(reactor.Options{})
	if err != nil {
		t.Fatal(err)
	}
	runDone := make(chan error, 1)
	go func() { runDone <- r.Run() }()
	drives := []struct {
		name  string
		drive func()
	}{
		{"Iterate", func() { r.Iterate() }},
		{"Advance", func() { r.Advance(time.Millisecond) }},
	}
	for _, d := range drives {
		type result struct {
			msg      string
			loopKept bool
		}
		got := make(chan result, 1)
		r.Immediate(func() {
			msg := drivePanic(d.drive)
			got <- result{msg, r.IsSameThread()}
		})
		res := <-got
		if !strings.Contains(res.msg, "real reactor") {
			t.Errorf("%s from the loop's own callback: panic %q, want one naming the mistake", d.name, res.msg)
		}
		if !res.loopKept {
			t.Errorf("%s from the loop's own callback gave up the loop word: the loop is no longer its own goroutine", d.name)
		}
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-runDone; err != nil {
		t.Fatalf("Run: %v", err)
	}
}

// A manual reactor is still driven by any goroutine, one after another.
func TestDriveManualFromTwoGoroutines(t *testing.T) {
	r := reactor.NewManual()
	n := 0
	r.Immediate(func() { n++ })
	r.RunUntilIdle()
	done := make(chan struct{})
	go func() {
		r.Immediate(func() { n++ })
		r.RunUntilIdle()
		close(done)
	}()
	<-done
	if n != 2 {
		t.Fatalf("%d callbacks ran, want 2", n)
	}
}

// A Group is started once: a second Start is a mistake that panics naming
// itself (its loops' errors would be lost), and the group still closes.
func TestGroupStartTwicePanics(t *testing.T) {
	g, err := reactor.NewGroup(2, reactor.Options{})
	if err != nil {
		t.Fatal(err)
	}
	g.Start()
	msg := drivePanic(g.Start)
	if !strings.Contains(msg, "Group.Start called twice") {
		t.Errorf("second Start: panic %q, want one naming the mistake", msg)
	}
	if err := g.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
}
