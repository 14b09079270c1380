package stepsd

import (
	"runtime"
	"testing"
)

// Start gives the process a spare P beyond its reactors (Config.Procs 0),
// never lowers GOMAXPROCS, and leaves it alone when told to (-1).
func TestStartRaisesGOMAXPROCS(t *testing.T) {
	was := runtime.GOMAXPROCS(1)
	defer runtime.GOMAXPROCS(was)
	for _, c := range []struct{ procs, want int }{{-1, 1}, {0, 3}, {2, 3}, {5, 5}} {
		s, err := Start(Config{Addr: "127.0.0.1:0", Reactors: 2, Procs: c.procs})
		if err != nil {
			t.Fatal(err)
		}
		got := runtime.GOMAXPROCS(0)
		_ = s.Shutdown(0)
		if got != c.want {
			t.Errorf("Procs %d after GOMAXPROCS %d: GOMAXPROCS %d, want %d", c.procs, c.want, got, c.want)
		}
	}
}
