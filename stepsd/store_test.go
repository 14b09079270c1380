package stepsd

import (
	"strconv"
	"testing"
)

// TestStripeSpread checks that stripeOf spreads keys of every shape over
// the stripes (a key's stripe is its lock: a poor spread is contention)
// and gives one key one stripe.
func TestStripeSpread(t *testing.T) {
	s := newStore()
	for _, tc := range []struct {
		name string
		key  func(i int) string
	}{
		{"short", func(i int) string { return strconv.Itoa(i) }},
		{"redis-benchmark", func(i int) string { return "key:" + strconv.Itoa(100000000000+i) }},
		{"long prefix", func(i int) string { return "user:session:profile:" + strconv.Itoa(i) }},
		{"suffix only differs in tail", func(i int) string { return "aaaaaaaaaaaaaaaa" + string(rune('a'+i%26)) + string(rune('a'+i/26%26)) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const n = 64 * 64
			count := map[*stripe]int{}
			for i := 0; i < n; i++ {
				k := []byte(tc.key(i))
				st := s.stripeOf(k)
				if s.stripeOf(append([]byte(nil), k...)) != st {
					t.Fatalf("key %q: two stripes", k)
				}
				count[st]++
			}
			if len(count) != storeStripes {
				t.Fatalf("%d keys used %d of %d stripes", n, len(count), storeStripes)
			}
			for st, c := range count {
				if c > 3*n/storeStripes {
					t.Fatalf("stripe %p holds %d of %d keys (fair share %d)", st, c, n, n/storeStripes)
				}
			}
		})
	}
}
