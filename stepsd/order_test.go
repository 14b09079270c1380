//go:build linux

package stepsd

import "testing"

// A connection's requests for one key apply in the order they were sent,
// even when the Limiter is contended and hands slots over between
// reactors (found in review: a request let in at once could overtake an
// earlier one whose hand-over was still on its way).
func TestPerConnectionOrderUnderContention(t *testing.T) {
	s := start(t, Config{Reactors: 2, Concurrent: 2, Queue: 1 << 20})
	setGetPipelined(t, s, 16, 300, 3)
}
