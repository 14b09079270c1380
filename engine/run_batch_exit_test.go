package engine

import (
	"os"
	"os/exec"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/asyncsteps/asyncsteps/reactor"
)

// batchOfThree queues three roots in one batch from a loop callback; the
// middle one's step calls mid. seq records the callbacks in order.
func batchOfThree(r *reactor.Reactor, seq *[]string, mid func()) (a, b, c *Steps) {
	a, b, c = New(r), New(r), New(r)
	for _, root := range []*Steps{a, b, c} {
		X.DeferStart(root, true) // queued by Execute, run by RunReady below
	}
	a.Add(func(*Steps) { *seq = append(*seq, "a") })
	b.Add(func(*Steps) {
		*seq = append(*seq, "b")
		mid()
	}, func(_ *Steps, code string) { *seq = append(*seq, "b.err:"+code) })
	b.Add(func(*Steps) { *seq = append(*seq, "b.2") })
	c.Add(func(*Steps) { *seq = append(*seq, "c") })
	r.Immediate(func() {
		a.Execute()
		b.Execute()
		c.Execute()
		RunReady(r) // the three in one batch
	})
	return a, b, c
}

// A step that panics with nil in the middle of a batch is its flow's
// InternalError whatever GODEBUG's panicnil says (with panicnil=1 recover
// returns nil, as for a Goexit: runBatch tells the two apart by progress,
// not by the value), and the batch's next flow runs, once, after it. The
// panicnil=1 half runs this test again in a child process.
func TestRunBatchPanicNilMidBatch(t *testing.T) {
	if os.Getenv("REVS24_PANICNIL_CHILD") == "" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestRunBatchPanicNilMidBatch$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), "REVS24_PANICNIL_CHILD=1", "GODEBUG=panicnil=1")
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "--- PASS") {
			t.Fatalf("GODEBUG=panicnil=1: %v\n%s", err, out)
		}
	}
	r := reactor.NewManual()
	var seq []string
	_, b, _ := batchOfThree(r, &seq, func() { panic(nil) })
	r.RunUntilIdle()
	want := []string{"a", "b", "b.err:InternalError", "c"}
	if !reflect.DeepEqual(seq, want) {
		t.Fatalf("runs %q, want %q", seq, want)
	}
	if st := b.State(); st == nil || st.LastException == nil {
		t.Fatalf("the nil panic not recorded: %+v", st)
	}
	if st := StatsOf(r); st.FramesLive != 0 {
		t.Fatalf("%d frames live after every flow ended", st.FramesLive)
	}
}

// A step that ends its goroutine (runtime.Goexit) in the middle of a batch
// ends the batch with the goroutine: the flows after it are not lost, and
// run once, in their order, when the loop is next driven; the flows before
// it do not run again; a raise and a panic in the next batch are their own
// flows', not the exited flow's.
func TestRunBatchGoexitMidBatch(t *testing.T) {
	r := reactor.NewManual()
	var seq []string
	batchOfThree(r, &seq, runtime.Goexit)
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		r.RunUntilIdle()
	}()
	<-exited
	if want := []string{"a", "b"}; !reflect.DeepEqual(seq, want) {
		t.Fatalf("before the exit: runs %q, want %q", seq, want)
	}
	r.RunUntilIdle()
	if want := []string{"a", "b", "c"}; !reflect.DeepEqual(seq, want) {
		t.Fatalf("after the exit: runs %q, want %q", seq, want)
	}
	seq = nil
	d, e2 := New(r), New(r)
	X.DeferStart(d, true)
	X.DeferStart(e2, true)
	d.Add(func(as *Steps) { as.Error("Boom", "") }, func(_ *Steps, code string) { seq = append(seq, "d.err:"+code) })
	d.Add(func(*Steps) { seq = append(seq, "d.2") })
	e2.Add(func(*Steps) { panic("pow") }, func(_ *Steps, code string) { seq = append(seq, "e.err:"+code) })
	r.Immediate(func() {
		d.Execute()
		e2.Execute()
		RunReady(r)
	})
	r.RunUntilIdle()
	if want := []string{"d.err:Boom", "e.err:" + InternalError}; !reflect.DeepEqual(seq, want) {
		t.Fatalf("the next batch: runs %q, want %q", seq, want)
	}
}
