//go:build linux

package stepsd

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
)

// A connection's requests for one key apply in the order they were sent,
// even when the Limiter is contended and hands slots over between
// reactors (found in review: a request let in at once could overtake an
// earlier one whose hand-over was still on its way).
func TestPerConnectionOrderUnderContention(t *testing.T) {
	s := start(t, Config{Reactors: 2, Concurrent: 2, Queue: 1 << 20})
	const conns, rounds = 16, 300
	var wg sync.WaitGroup
	errs := make(chan error, conns)
	for i := 0; i < conns; i++ {
		c := dial(t, s)
		wg.Add(1)
		go func() {
			defer wg.Done()
			var b strings.Builder
			for j := 0; j < rounds; j++ {
				fmt.Fprintf(&b, "SET o%dk%d %d\nGET o%dk%d\n", i, j%3, j, i, j%3)
			}
			go func() { _, _ = io.WriteString(c.c, b.String()) }()
			for j := 0; j < rounds; j++ {
				for _, want := range []string{"OK", fmt.Sprintf("VALUE %d", j)} {
					got, err := c.read()
					if err != nil || got != want {
						errs <- fmt.Errorf("conn %d round %d: %q, %v; want %q", i, j, got, err, want)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
