package engine_test

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/asyncsteps/asyncsteps/internal/refsteps"
)

// TestModelRandomPrograms runs 500 pseudo-random programs (a fixed seed)
// on the engine and the interpreter: a quick sweep beside FuzzModel's
// corpus, logging what the programs exercised.
func TestModelRandomPrograms(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	counts := map[string]int{}
	for i := 0; i < 500; i++ {
		b := make([]byte, 20+rng.IntN(100))
		for j := range b {
			b[j] = byte(rng.IntN(256))
		}
		p := refsteps.Decode(b)
		want := refsteps.Run(p)
		if want.Ambiguous {
			counts["ambiguous"]++
			continue
		}
		got := runOnEngine(t, p)
		all := ""
		for k, l := range want.Logs {
			if strings.Join(got[k], " ") != strings.Join(l, " ") {
				t.Fatalf("input %q root %d\nengine %q\nmodel  %q\n%s", b, k, got[k], l, describe(p))
			}
			all += " " + strings.Join(l, " ")
		}
		for _, k := range []string{" c", " e", "end:canceled", "end:err", "end:ok", "Timeout"} {
			if strings.Contains(all, k) {
				counts[k]++
			}
		}
		counts["programs"]++
	}
	t.Logf("programs with each kind of event: %v", counts)
}
