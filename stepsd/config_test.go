package stepsd

import (
	"runtime"
	"testing"
)

// The default leaves one CPU to the kernel, the runtime and clients, but
// never runs fewer than one reactor; a zero Reactors means that default,
// and Procs' default then makes GOMAXPROCS the CPUs, not more.
func TestDefaultReactors(t *testing.T) {
	want := max(1, runtime.NumCPU()-1)
	if got := DefaultReactors(); got != want {
		t.Fatalf("DefaultReactors() = %d, want %d on %d CPUs", got, want, runtime.NumCPU())
	}
	if got := DefaultConfig().Reactors; got != want {
		t.Errorf("DefaultConfig().Reactors = %d, want %d", got, want)
	}
	c := Config{}.withDefaults()
	if c.Reactors != want || c.Procs != want+1 {
		t.Errorf("Config{}.withDefaults(): Reactors %d, Procs %d; want %d, %d", c.Reactors, c.Procs, want, want+1)
	}
	if runtime.NumCPU() > 1 && c.Procs != runtime.NumCPU() {
		t.Errorf("Procs %d on %d CPUs: the default should make GOMAXPROCS the CPUs", c.Procs, runtime.NumCPU())
	}
}
