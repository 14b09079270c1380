//go:build linux && race

package netio

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// The kernel's copy into or out of a buffer is invisible to the race
// detector: sysRead and sysWrite must tell it, as unix.Read and unix.Write
// did, or a handler that keeps a slice of the loop's read buffer past its
// call (or hands Send a buffer another goroutine still fills) races
// unseen under -race. Each case runs a child that does exactly that and
// must be reported; the child is this test binary, run again.
func TestSysReadWriteRaceAnnotations(t *testing.T) {
	for _, which := range []string{"read", "write"} {
		t.Run(which, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestSysRaceChild$", "-test.count=1")
			cmd.Env = append(os.Environ(), "NETIO_RACE_CHILD="+which, "GORACE=halt_on_error=1")
			out, err := cmd.CombinedOutput()
			// The report names the annotation (sysRead and sysWrite are
			// inlined into the child, so their names may not appear).
			annot := map[string]string{"read": "racewriterange", "write": "racereadrange"}[which]
			if err == nil || !strings.Contains(string(out), "WARNING: DATA RACE") || !strings.Contains(string(out), annot) {
				t.Fatalf("a goroutine touching the buffer of sys%s, unordered with it, was not reported as a race on the kernel's access (%s) (exit %v):\n%s", which, annot, err, out)
			}
		})
	}
}

// TestSysRaceChild is the child of TestSysReadWriteRaceAnnotations: it
// races on purpose, and skips unless that test started it.
func TestSysRaceChild(t *testing.T) {
	which := os.Getenv("NETIO_RACE_CHILD")
	if which == "" {
		t.Skip("the child of TestSysReadWriteRaceAnnotations")
	}
	a, b := socketPair(t)
	buf := make([]byte, 8)
	if _, err := sysWrite(b, []byte("x")); err != nil {
		t.Fatal(err)
	}
	done := make(chan byte)
	switch which {
	case "read":
		go func() { done <- buf[0] }() // reads buf, unordered with the kernel's store
		_, _ = sysRead(a, buf)
	case "write":
		go func() { buf[0] = 'y'; done <- 0 }() // stores, unordered with the kernel's load
		_, _ = sysWrite(b, buf)
	}
	<-done
}
