package reactor

import (
	"testing"
	"time"
)

// TestIterateAnswer pins Iterate's answer in the states that iterate's
// idle shortcut (one look per source, no second pass) must not change:
// nothing queued, a timer pending but not due, a task posted by another
// goroutine while nobody drives, a task queued on the loop by a callback,
// and a timer that has come due (it fires in that Iterate).
func TestIterateAnswer(t *testing.T) {
	cases := []struct {
		name    string
		setup   func(r *Reactor, ran *int)
		want    bool // Iterate's first answer
		wantRan int  // callbacks run by that Iterate
	}{
		{"idle", func(*Reactor, *int) {}, false, 0},
		{"timer not due", func(r *Reactor, ran *int) { r.Deferred(time.Hour, func() { *ran++ }) }, false, 0},
		{"posted from a goroutine", func(r *Reactor, ran *int) {
			done := make(chan struct{})
			go func() { r.Immediate(func() { *ran++ }); close(done) }()
			<-done
		}, false, 1},
		{"callback queues more", func(r *Reactor, ran *int) {
			r.Immediate(func() { *ran++; r.Immediate(func() { *ran++ }) })
		}, true, 1},
		{"timer due", func(r *Reactor, ran *int) {
			r.Deferred(time.Millisecond, func() { *ran++ })
			r.virtual.Add(int64(time.Second))
		}, false, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := NewManual()
			defer r.Close()
			ran := 0
			c.setup(r, &ran)
			if got := r.Iterate(); got != c.want || ran != c.wantRan {
				t.Fatalf("Iterate() = %v with %d callbacks run, want %v with %d", got, ran, c.want, c.wantRan)
			}
			r.RunUntilIdle()
			if r.Iterate() {
				t.Fatal("Iterate() = true after RunUntilIdle")
			}
		})
	}
}
