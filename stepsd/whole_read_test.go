//go:build linux

package stepsd

import (
	"bufio"
	"context"
	"fmt"
	"math/rand"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
)

// The read path's split (OnData, conn.runWhole, conn.readAll, afterRun; the
// Limiter's TryEnterRun in OnData). Each test drives the reads runWhole
// takes (every request framed and answered directly, all let in at once)
// beside those it hands to readAll, and checks what a client and the
// Limiter see.

// slotsClean reports, from the shard's loop, the slots of its parsed
// requests that are not zero, and whether reqsDirty is still set: between
// reads both must be clear (runWhole clears the slots it used, readAll
// those of its direct head).
func slotsClean(t *testing.T, sh *shard) (dirtySlots int, flag bool) {
	t.Helper()
	type res struct {
		n    int
		flag bool
	}
	ch := make(chan res, 1)
	sh.r.Immediate(func() {
		n := 0
		for i := range sh.reqs {
			if sh.reqs[i].Op != OpNone || sh.reqs[i].Bad != "" || sh.reqs[i].Key != nil || sh.reqs[i].Args != nil || sh.reqs[i].Text != nil || sh.reqs[i].Value != nil {
				n++
			}
		}
		ch <- res{n, sh.reqsDirty}
	})
	r := <-ch
	return r.n, r.flag
}

// A pipeline cut in two writes at every byte: the first read ends in a
// partial command (runWhole takes the complete head, the rest waits in
// netio), the second completes it. Every reply comes once, in order; the
// slots are zero and the Limiter empty after each.
func TestWholeReadCutAnywhere(t *testing.T) {
	s := start(t, Config{Reactors: 1})
	sh := s.shards[0]
	req := resp("SET", "k", "v1") + resp("GET", "k") + resp("ECHO", "e") + resp("DEL", "k") + resp("PING") + resp("BOGUS", "x") + resp("GET", "k")
	want := []string{"OK", "v1", "e", ":1", "PONG", "-ERR unknown command 'BOGUS'", "(nil)"}
	c := dial(t, s)
	_ = c.c.SetNoDelay(true)
	for cut := 1; cut < len(req); cut++ {
		c.sendRaw(req[:cut])
		c.sendRaw(req[cut:])
		for i, w := range want {
			got, err := c.read()
			if err != nil || !strings.HasPrefix(got, w) {
				t.Fatalf("cut %d, reply %d: %q, %v; want %q", cut, i, got, err, w)
			}
		}
	}
	if n, flag := slotsClean(t, sh); n != 0 || flag {
		t.Fatalf("after the reads: %d slots hold a parse, reqsDirty %v", n, flag)
	}
	if m := s.Metrics(context.Background()); m.Concurrency.Holders != 0 || m.Concurrency.Rejected != 0 {
		t.Fatalf("Limiter %+v after the reads, want empty", m.Concurrency)
	}
	checkNoStrays(t, s)
}

// A fatal framing error in the read after one runWhole answered: the
// first read's replies, then the second read's good head's, then -ERR and
// the close. Another client on the same loop is untouched.
func TestFatalAfterWholeRead(t *testing.T) {
	s := start(t, Config{Reactors: 1})
	c, o := dial(t, s), dial(t, s)
	c.sendRaw(resp("SET", "f", "1") + resp("GET", "f"))
	c.expect("OK", "1")
	c.sendRaw(resp("ECHO", "a") + "*2\r\n$3\r\nGET\r\nf\r\n" + resp("ECHO", "never"))
	c.expect("a")
	if got, _ := c.read(); !strings.HasPrefix(got, "-ERR Protocol error") {
		t.Fatalf("reply %q, want -ERR Protocol error", got)
	}
	c.expectEOF()
	o.sendRaw(resp("GET", "f") + resp("ECHO", "o"))
	o.expect("1", "o")
	if n, flag := slotsClean(t, s.shards[0]); n != 0 || flag {
		t.Fatalf("%d slots hold a parse, reqsDirty %v", n, flag)
	}
	checkNoStrays(t, s)
}

// Every request is let into the Limiter once, or refused once: under a
// rate that runs out in the middle of the reads (no burst), the replies
// that are DefenseRejected are exactly the Limiter's rejections, the rest
// are answered, and nothing is left holding a slot. Reads of every shape:
// whole (runWhole), cut by the grant (startDirect's partial run), behind
// a request in flight (readAll without a direct head), inline.
func TestLimiterCountsEachRequestOnce(t *testing.T) {
	s := start(t, Config{Reactors: 1, Rate: 50, Timeout: 10 * time.Second})
	c := dial(t, s)
	rng := rand.New(rand.NewSource(9))
	total, rej, bad := 0, 0, 0
	for round := 0; round < 40; round++ {
		var b strings.Builder
		var want []string
		n := 1 + rng.Intn(12)
		for i := 0; i < n; i++ {
			tok := fmt.Sprintf("r%di%d", round, i)
			switch rng.Intn(6) {
			case 0:
				b.WriteString(resp("SET", tok, tok))
				want = append(want, "OK")
			case 1:
				b.WriteString(resp("BOGUS"))
				want = append(want, "-ERR unknown command")
				bad++
			case 2:
				b.WriteString("ECHO " + tok + "\r\n")
				want = append(want, tok)
			case 3:
				if round%4 == 0 {
					b.WriteString(resp("SLEEP", "1"))
					want = append(want, "OK")
					break
				}
				fallthrough
			default:
				b.WriteString(resp("ECHO", tok))
				want = append(want, tok)
			}
		}
		c.sendRaw(b.String())
		for i, w := range want {
			got, err := c.read()
			if err != nil {
				t.Fatalf("round %d reply %d: %v", round, i, err)
			}
			total++
			if rejected(got) {
				rej++
				continue
			}
			if !strings.HasPrefix(got, w) {
				t.Fatalf("round %d reply %d: %q, want %q", round, i, got, w)
			}
		}
	}
	m := s.Metrics(context.Background())
	if got := int(m.Rate.Rejected + m.Concurrency.Rejected); got != rej {
		t.Errorf("%d DefenseRejected replies, the Limiter counted %d rejections (rate %+v, concurrency %+v)", rej, got, m.Rate, m.Concurrency)
	}
	if rej == 0 || rej == total-bad {
		t.Errorf("%d of %d rejected: the rate did not run out in the middle", rej, total)
	}
	if m.Concurrency.Holders != 0 || m.Concurrency.Queued != 0 || m.Rate.Queued != 0 {
		t.Errorf("after the reads: concurrency %+v, rate %+v; want nothing held or queued", m.Concurrency, m.Rate)
	}
	if n, flag := slotsClean(t, s.shards[0]); n != 0 || flag {
		t.Errorf("%d slots hold a parse, reqsDirty %v", n, flag)
	}
	checkNoStrays(t, s)
}

// Many clients on two reactors with one contended Limiter (Concurrent 2,
// a queue), each sending pipelines of framed requests on its own keys with
// an occasional SLEEP or inline command: each gets its own replies, in
// order, and every key holds its last value. Reads alternate between
// runWhole (all let in), startDirect's partial grant and readAll.
func TestClientsGetTheirOwnReplies(t *testing.T) {
	s := start(t, Config{Reactors: 2, Concurrent: 2, Queue: 1 << 20, Timeout: 20 * time.Second})
	const clients, rounds = 12, 60
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for ci := 0; ci < clients; ci++ {
		wg.Add(1)
		go func(ci int) {
			defer wg.Done()
			c, err := net.Dial("tcp", s.Addr().String())
			if err != nil {
				errs <- err
				return
			}
			defer c.Close()
			br := bufio.NewReader(c)
			rng := rand.New(rand.NewSource(int64(ci)))
			for round := 0; round < rounds; round++ {
				var b strings.Builder
				var want []string
				for i, n := 0, 1+rng.Intn(20); i < n; i++ {
					key := fmt.Sprintf("c%dk%d", ci, rng.Intn(3))
					val := fmt.Sprintf("c%dr%di%d", ci, round, i)
					switch rng.Intn(10) {
					case 0:
						b.WriteString(resp("SLEEP", "1"))
						want = append(want, "OK")
					case 1:
						b.WriteString("ECHO " + val + "\r\n")
						want = append(want, val)
					case 2, 3, 4:
						b.WriteString(resp("SET", key, val) + resp("GET", key))
						want = append(want, "OK", val)
					default:
						b.WriteString(resp("ECHO", val))
						want = append(want, val)
					}
				}
				if _, err := c.Write([]byte(b.String())); err != nil {
					errs <- err
					return
				}
				for i, w := range want {
					_ = c.SetReadDeadline(time.Now().Add(20 * time.Second))
					got, err := readReply(br)
					if err != nil || got != w {
						errs <- fmt.Errorf("client %d round %d reply %d: %q, %v; want %q", ci, round, i, got, err, w)
						return
					}
				}
			}
		}(ci)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	m := s.Metrics(context.Background())
	if m.Concurrency.Holders != 0 || m.Concurrency.Rejected != 0 {
		t.Errorf("Limiter %+v after the clients, want empty and nothing rejected", m.Concurrency)
	}
	for _, sh := range s.shards {
		if n, flag := slotsClean(t, sh); n != 0 || flag {
			t.Errorf("reactor %d: %d slots hold a parse, reqsDirty %v", sh.idx, n, flag)
		}
	}
	checkNoStrays(t, s)
}

// A client that pipelines framed requests with big replies and reads
// nothing (every read of it a whole one: runWhole): the server stops
// reading it (netio's HighWater), so what it holds stays bounded; once
// it reads, every request that reached the server is answered, in order.
// TestSlowReaderIsBackpressured sends inline commands, which runWhole
// never takes.
func TestSlowFramedReaderIsBackpressured(t *testing.T) {
	s := start(t, Config{Reactors: 1, MaxPipeline: 16})
	c := dial(t, s)
	text := strings.Repeat("z", 4000)
	one := []byte(resp("ECHO", text))
	sent := writeUntilStalled(t, c, one)
	_ = c.c.SetWriteDeadline(time.Time{})
	_ = c.c.CloseWrite()
	n := 0
	for {
		got, err := c.read()
		if err != nil {
			break // EOF, or the tail of a write the deadline cut
		}
		if got != text {
			t.Fatalf("reply %d: %.20q...", n, got)
		}
		n++
	}
	if n != sent && n != sent+1 {
		t.Errorf("%d replies for %d requests written", n, sent)
	}
}

// A framed pipeline deeper than MaxPipeline, then a half-close: reading
// pauses and resumes (readAll), the last reads are whole (runWhole), and
// after the last reply the connection closes, whichever read saw the end
// of stream first: runWhole's flush for a connection at EOF.
func TestHalfCloseAfterDeepFramedPipeline(t *testing.T) {
	s := start(t, Config{Reactors: 1, MaxPipeline: 4})
	for _, n := range []int{1, 3, 4, 5, 9, 18, 64} {
		c := dial(t, s)
		var b strings.Builder
		var want []string
		for i := 0; i < n; i++ {
			b.WriteString(resp("ECHO", fmt.Sprint(i)))
			want = append(want, fmt.Sprint(i))
		}
		c.sendRaw(b.String())
		if err := c.c.CloseWrite(); err != nil {
			t.Fatal(err)
		}
		c.expect(want...)
		c.expectEOF()
	}
	checkNoStrays(t, s)
}

// A whole read (runWhole) takes one rate entry per request that needs
// one, no more: the rate's holders (entries spent this period) grow by
// exactly the read's requests, less its refused ones. A period that ends
// between two reads only lowers the count, so every read's growth is at
// most its requests, and most reads' (the period is a second) exactly.
func TestWholeReadTakesOneEntryEach(t *testing.T) {
	s := start(t, Config{Reactors: 1, Rate: 1 << 20})
	c := dial(t, s)
	holders := func() int { return s.Metrics(context.Background()).Rate.Holders }
	exact := 0
	const reads = 40
	for r := 0; r < reads; r++ {
		var b strings.Builder
		var want []string
		k := 1 + r%16
		entries := 0
		for i := 0; i < k; i++ {
			if i%5 == 4 {
				b.WriteString(resp("BOGUS")) // refused: no entry
				want = append(want, "-ERR unknown command")
				continue
			}
			b.WriteString(resp("ECHO", fmt.Sprint(i)))
			want = append(want, fmt.Sprint(i))
			entries++
		}
		before := holders()
		c.sendRaw(b.String())
		for i, w := range want {
			if got, err := c.read(); err != nil || !strings.HasPrefix(got, w) {
				t.Fatalf("read %d reply %d: %q, %v; want %q", r, i, got, err, w)
			}
		}
		d := holders() - before
		if d > entries {
			t.Fatalf("read %d: %d requests took %d rate entries", r, entries, d)
		}
		if d == entries {
			exact++
		}
	}
	if exact < reads/2 {
		t.Errorf("only %d of %d reads took exactly their entries", exact, reads)
	}
	if m := s.Metrics(context.Background()); m.Concurrency.Holders != 0 {
		t.Errorf("concurrency %+v after the reads, want no holder", m.Concurrency)
	}
}
