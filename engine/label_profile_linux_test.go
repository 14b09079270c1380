package engine

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strings"
	"testing"
	"time"

	"github.com/asyncsteps/asyncsteps/reactor"
)

// burnSink keeps burnCPU's work from being optimised away.
var burnSink uint64

// burnCPU spins for about d of the calling thread's CPU time: the named
// flows' work that the CPU profile below must attribute to their label.
//
//go:noinline
func burnCPU(d time.Duration) {
	end := threadCPU() + d
	x := burnSink
	for threadCPU() < end {
		for i := 0; i < 10000; i++ {
			x = x*6364136223846793005 + 1442695040888963407
		}
	}
	burnSink = x
}

// By default (LabelsWhileProfiling) named flows carry no label until a CPU
// profile starts, carry it while it is recorded (so go tool pprof
// -tagfocus=flow=<name> finds their samples), and none once it stops.
// Each look at the profile comes at the loop's next recheck: the manual
// reactor's clock is advanced by labelRecheck for it, and the loop reads
// its clock within labelClockFlows named flows.
func TestFlowLabelWhileProfiling(t *testing.T) {
	withFlowLabels(t, LabelsWhileProfiling)
	if cpuProfiling() {
		t.Skip("a CPU profile is already being recorded (go test -cpuprofile?)")
	}
	runtime.LockOSThread() // burnCPU counts this thread's time
	defer runtime.UnlockOSThread()
	r := reactor.NewManual()
	name := NewName("tagfocus-burn")
	var label string
	run := func(burn time.Duration) {
		root := New(r)
		root.SetFlowName(name)
		root.Add(func(as *Steps) {
			label = labelProbe(t)
			if burn > 0 {
				// Not even burnCPU(0): its two thread-clock reads are
				// system calls, where a sample of an unlabeled settling
				// flow could land and be counted as burnCPU's.
				burnCPU(burn)
			}
		})
		root.Execute()
		r.RunUntilIdle()
		root.Release()
	}
	// settle runs empty named flows until one carries want, at most as
	// many as the loop runs between two reads of its clock, and more.
	settle := func(want string) bool {
		for range labelClockFlows + 1 {
			if run(0); label == want {
				return true
			}
		}
		return false
	}
	const want = `{"flow":"tagfocus-burn"}`

	run(0)
	if label != "" {
		t.Fatalf("with no profile a named flow carries %s", label)
	}
	var prof bytes.Buffer
	if err := pprof.StartCPUProfile(&prof); err != nil {
		t.Skipf("cannot start a CPU profile: %v", err)
	}
	r.Advance(time.Duration(labelRecheck))
	if !settle(want) {
		pprof.StopCPUProfile()
		t.Fatalf("while a CPU profile is recorded a named flow carries %q, want %s", label, want)
	}
	// 30 flows of 10 ms of CPU: about 30 samples at the default 100 Hz.
	for range 30 {
		run(10 * time.Millisecond)
	}
	pprof.StopCPUProfile()
	r.Advance(time.Duration(labelRecheck))
	if !settle("") {
		t.Fatalf("after the profile stopped a named flow carries %s", label)
	}

	// The profile, read by the tool users read it with.
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go command to run go tool pprof (%v): the labels were checked above", err)
	}
	file := filepath.Join(t.TempDir(), "cpu.prof")
	if err := os.WriteFile(file, prof.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	pprofTop := func(filter string) string {
		out, err := exec.Command(goBin, "tool", "pprof", filter, "-top", "-nodecount=200", file).CombinedOutput()
		if err != nil {
			t.Fatalf("go tool pprof %s: %v\n%s", filter, err, out)
		}
		return string(out)
	}
	if out := pprofTop("-tagfocus=flow=tagfocus-burn"); !strings.Contains(out, "engine.burnCPU") {
		t.Errorf("go tool pprof -tagfocus=flow=tagfocus-burn finds no burnCPU sample:\n%s", out)
	}
	if out := pprofTop("-tagignore=flow=tagfocus-burn"); strings.Contains(out, "engine.burnCPU") {
		// Only the flows that settle ran after the start could run
		// unlabeled, and they burned nothing.
		t.Errorf("go tool pprof -tagignore=flow=tagfocus-burn still finds burnCPU samples:\n%s", out)
	}
}
