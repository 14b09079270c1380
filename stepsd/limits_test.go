//go:build linux

package stepsd

import (
	"strings"
	"testing"
)

// The direct head (parseDirect, a connection with nothing in flight, its
// read framed) parses with the shard's parser and no check of its limits
// of its own: it relies on the limits the shard got when it was made
// (Start). A framed request over the configured limits that starts a read,
// or follows a whole direct head in the same read, gets the protocol error
// of Config's limits, not DefaultLimits': a request within them is
// answered. (TestOverLimitsClosesOnlyThatConnection starts its reads with
// an inline SLEEP, so its framed requests take readRest's path.)
func TestDirectHeadKeepsConfiguredLimits(t *testing.T) {
	s := start(t, Config{Reactors: 1, MaxBulk: 100, MaxArgs: 4})
	z100, z101 := strings.Repeat("z", 100), strings.Repeat("z", 101)
	tests := []struct {
		name, in string
		replies  []string // then the connection closes, unless ok
		ok       bool
	}{
		{"bulk at the limit", resp("ECHO", z100), []string{z100}, true},
		{"bulk over, first", resp("ECHO", z101), []string{"-ERR Protocol error: invalid bulk length"}, false},
		{"bulk over, after a head", resp("ECHO", "a") + resp("SET", "k", z101), []string{"a", "-ERR Protocol error: invalid bulk length"}, false},
		{"args over, first", resp("ECHO", "a", "b", "c", "d"), []string{"-ERR Protocol error: invalid multibulk length"}, false},
		{"args over, after a head", resp("GET", "k") + resp("DEL", "a", "b", "c", "d"), []string{"(nil)", "-ERR Protocol error: invalid multibulk length"}, false},
	}
	for _, tt := range tests {
		c := dial(t, s)
		// A whole direct read first, so that the shard's parse slots
		// and its whole flow are warm.
		c.sendRaw(resp("PING"))
		c.expect("PONG")
		c.sendRaw(tt.in)
		c.expect(tt.replies...)
		if tt.ok {
			c.sendRaw(resp("ECHO", "still open"))
			c.expect("still open")
		} else {
			c.expectEOF()
		}
	}
}
