package netbench

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asyncsteps/asyncsteps/stepsd"
)

// This file is the load generator of cmd/loadbench: connections over
// loopback to a RESP server (stepsd, a peer, or redis-server), each in its own
// goroutine, writing a batch of requests with one write and reading the
// replies. It shares the CPUs with the server it measures, so its loop
// allocates nothing and formats nothing with fmt: buffers are per
// connection and reused, numbers are appended with strconv, latencies go to
// a per-goroutine Histogram.

// LoadKeys is how many keys the KV mix cycles over (k0..k999).
const LoadKeys = 1000

// Mix is the request mix of a load.
type Mix uint8

const (
	// MixKV is the default: each connection cycles through SET k<i> v<i>,
	// GET k<i>, ECHO hello, with i over LoadKeys keys, starting at a key of
	// its own.
	MixKV Mix = iota
	// MixSleep sends only SLEEP LoadConfig.SleepMs.
	MixSleep
)

// LoadConfig is one load: how many connections, how deep each pipelines,
// and when to stop. A run needs a Requests or a Duration bound (or both:
// whichever comes first).
type LoadConfig struct {
	Addr string
	// Conns is the number of connections, one goroutine each.
	Conns int
	// Pipeline is the number of requests in flight per connection: each
	// batch is Pipeline requests in one write, then their Pipeline
	// replies. 1 is not pipelined (request, reply, request...).
	Pipeline int
	// Requests bounds the requests counted, over all connections (0: no
	// bound). Batches in flight when it is reached are finished, so a run
	// may count up to Conns*Pipeline more.
	Requests int
	// Duration bounds the measured time after Warmup (0: no bound). At its
	// end every connection stops where it is: replies still in flight are
	// not counted. Without it, a server that stops replying hangs the run.
	Duration time.Duration
	// Warmup is a time at the start whose replies are not counted (nor
	// checked, nor timed).
	Warmup time.Duration

	Mix     Mix
	SleepMs int // MixSleep: the SLEEP argument, in milliseconds

	// OnMeasure, if not nil, is called (on a goroutine of its own) when
	// the warmup ends and the measured time starts, and OnStop once every
	// connection has stopped, before they close: the caller reads the
	// server's CPU time at both, for its CPU per counted request.
	OnMeasure, OnStop func()
}

// LoadResult is what a load measured, from the end of its warmup on.
type LoadResult struct {
	// Requests is the number of replies received, right or wrong.
	Requests int64
	// Errors counts replies whose first word does not match the request
	// (+OK, a bulk string or nil, the bulk string hello), error replies included.
	Errors int64
	// ErrCodes counts the error replies by code (-<code> <info>).
	ErrCodes map[string]int64
	// Elapsed is the measured time: from the end of the warmup until the
	// last connection stopped (at most Duration).
	Elapsed   time.Duration
	ReqPerSec float64
	// Latency quantiles, from a batch's write to each reply's arrival; the
	// arrival is when the read that brought the reply returned.
	P50, P99, P999 time.Duration
}

// RunLoad runs one load against cfg.Addr. All connections are dialed before
// the clock starts. It returns an error if a connection cannot be dialed
// or fails before the run's end (the result is then what was measured
// until it stopped); a server's wrong replies are Errors, not an error.
func RunLoad(cfg LoadConfig) (LoadResult, error) {
	switch {
	case cfg.Conns < 1 || cfg.Pipeline < 1:
		return LoadResult{}, fmt.Errorf("load: %d conns, pipeline %d", cfg.Conns, cfg.Pipeline)
	case cfg.Requests <= 0 && cfg.Duration <= 0:
		return LoadResult{}, errors.New("load: neither Requests nor Duration bounds the run")
	case cfg.Mix == MixSleep && (cfg.SleepMs < 0 || cfg.SleepMs > stepsd.MaxSleep):
		return LoadResult{}, fmt.Errorf("load: SLEEP %d", cfg.SleepMs)
	}
	conns, err := dialAll(cfg.Addr, cfg.Conns)
	if err != nil {
		return LoadResult{}, fmt.Errorf("load: %w", err)
	}
	sh := &loadShared{cfg: &cfg}
	workers := make([]*loadWorker, len(conns))
	for i, c := range conns {
		workers[i] = newLoadWorker(c, &cfg, i)
	}

	start := time.Now()
	sh.measureFrom = start.Add(cfg.Warmup)
	if cfg.Duration > 0 {
		sh.end = sh.measureFrom.Add(cfg.Duration)
		for _, c := range conns {
			// Wakes a connection blocked in a read or write at the end:
			// the run stops on time even if the server does not reply.
			c.SetDeadline(sh.end)
		}
	}
	measured := make(chan struct{})
	if cfg.OnMeasure != nil {
		time.AfterFunc(cfg.Warmup, func() {
			cfg.OnMeasure()
			close(measured)
		})
	} else {
		close(measured)
	}
	var wg sync.WaitGroup
	for _, w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.run(sh)
		}()
	}
	wg.Wait()
	stopped := time.Now()
	<-measured // a run shorter than its warmup still pairs the calls
	if cfg.OnStop != nil {
		cfg.OnStop()
	}
	for _, c := range conns {
		c.Close()
	}

	var res LoadResult
	hist := new(Histogram)
	for _, w := range workers {
		res.Requests += w.requests
		res.Errors += w.errors
		hist.Merge(&w.hist)
		for code, n := range w.codes {
			if res.ErrCodes == nil {
				res.ErrCodes = make(map[string]int64)
			}
			res.ErrCodes[code] += *n
		}
		if w.err != nil && err == nil {
			err = fmt.Errorf("load: connection %d: %w", w.id, w.err)
		}
	}
	if !sh.end.IsZero() && stopped.After(sh.end) {
		stopped = sh.end
	}
	if res.Elapsed = stopped.Sub(sh.measureFrom); res.Elapsed > 0 {
		res.ReqPerSec = float64(res.Requests) / res.Elapsed.Seconds()
	}
	res.P50, res.P99, res.P999 = hist.Quantile(0.50), hist.Quantile(0.99), hist.Quantile(0.999)
	return res, err
}

// dialAll opens n connections to addr, or none.
func dialAll(addr string, n int) ([]net.Conn, error) {
	conns := make([]net.Conn, 0, n)
	for range n {
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			for _, c := range conns {
				c.Close()
			}
			return nil, err
		}
		conns = append(conns, c)
	}
	return conns, nil
}

// loadShared is what a load's goroutines share: read-only times, and the
// Requests bound's count and stop flag.
type loadShared struct {
	cfg         *LoadConfig
	measureFrom time.Time // end of warmup
	end         time.Time // zero: no time bound
	counted     atomic.Int64
	stop        atomic.Bool
}

// replyKind is what a request's reply must start with.
type replyKind uint8

const (
	wantOK    replyKind = iota // SET, SLEEP: +OK
	wantValue                  // GET: a bulk string or nil
	wantEcho                   // ECHO: the bulk string "hello"
)

// loadWorker is one connection's goroutine and everything it reuses.
type loadWorker struct {
	id   int
	conn net.Conn
	r    *bufio.Reader
	req  []byte      // the batch being written
	want []replyKind // per request of the batch
	mix  Mix
	line []byte // MixSleep's request

	step, key int  // MixKV's position: request of the cycle, and key
	bulkHello bool // the last bulk string read was "hello"

	hist     Histogram
	requests int64
	errors   int64
	codes    map[string]*int64 // error replies by code; a pointer so a count needs no map store
	err      error
}

func newLoadWorker(c net.Conn, cfg *LoadConfig, id int) *loadWorker {
	w := &loadWorker{
		id:   id,
		conn: c,
		r:    bufio.NewReaderSize(c, 16<<10),
		req:  make([]byte, 0, cfg.Pipeline*32),
		want: make([]replyKind, cfg.Pipeline),
		mix:  cfg.Mix,
		// Connections start at keys far apart, so that they do not all
		// SET and GET the same key at the same moment.
		key: id * 389 % LoadKeys,
	}
	if cfg.Mix == MixSleep {
		ms := strconv.Itoa(cfg.SleepMs)
		w.line = []byte("*2\r\n$5\r\nSLEEP\r\n$" + strconv.Itoa(len(ms)) + "\r\n" + ms + "\r\n")
	}
	return w
}

func (w *loadWorker) run(sh *loadShared) {
	p := len(w.want)
	for !sh.stop.Load() {
		w.req = w.req[:0]
		for j := range p {
			w.req, w.want[j] = w.next(w.req)
		}
		t0 := time.Now()
		if !sh.end.IsZero() && !t0.Before(sh.end) {
			return
		}
		if _, err := w.conn.Write(w.req); err != nil {
			w.fail(err, sh)
			return
		}
		// now is the arrival time of the reply being read: the time the
		// read that brought it returned. A reply that was already buffered
		// arrived with the one before, so a batch costs a clock read per
		// read call, not per reply.
		now := t0
		var counted int64
		for j := range p {
			before := w.r.Buffered()
			line, err := w.r.ReadSlice('\n')
			fresh := len(line) > before // a read brought it
			var kind byte
			if len(line) > 0 {
				kind = line[0]
			}
			if err == nil && len(line) > 3 && kind == '$' && line[1] != '-' {
				// A bulk string: its length, then its bytes, checked
				// where they are buffered and then discarded (line is
				// not valid after that).
				avail := w.r.Buffered()
				var n int
				n, err = w.readBulk(line)
				fresh = fresh || n+2 > avail
				line = nil
			}
			if err != nil {
				w.requests += counted
				w.fail(err, sh)
				return
			}
			if fresh {
				now = time.Now()
			}
			if now.Before(sh.measureFrom) {
				continue
			}
			counted++
			w.hist.Record(now.Sub(t0))
			if !w.check(w.want[j], kind, line) {
				w.errors++
			}
		}
		w.requests += counted
		if counted > 0 && sh.cfg.Requests > 0 && sh.counted.Add(counted) >= int64(sh.cfg.Requests) {
			sh.stop.Store(true)
		}
	}
}

// fail records a connection's error, unless it is the deadline of a
// time-bounded run: that is the normal end.
func (w *loadWorker) fail(err error, sh *loadShared) {
	if !sh.end.IsZero() && errors.Is(err, os.ErrDeadlineExceeded) {
		return
	}
	w.err = err
}

// readBulk reads the bytes of the bulk string whose header is line (valid
// until the next read) and records whether they are the ECHO's "hello".
func (w *loadWorker) readBulk(line []byte) (int, error) {
	n := 0
	for _, c := range line[1 : len(line)-2] {
		if c < '0' || c > '9' {
			return 0, fmt.Errorf("bulk header %q", line)
		}
		n = n*10 + int(c-'0')
	}
	w.bulkHello = false
	if n == len(helloText) {
		b, err := w.r.Peek(n + 2)
		if err != nil {
			return n, err
		}
		w.bulkHello = string(b[:n]) == helloText
	}
	_, err := w.r.Discard(n + 2)
	return n, err
}

// helloText is ECHO's argument in the KV mix.
const helloText = "hello"

// next appends the connection's next request to dst, as a RESP array.
func (w *loadWorker) next(dst []byte) ([]byte, replyKind) {
	if w.mix == MixSleep {
		return append(dst, w.line...), wantOK
	}
	switch w.step {
	case 0:
		w.step = 1
		dst = append(dst, "*3\r\n$3\r\nSET\r\n"...)
		dst = appendKeyArg(dst, 'k', w.key)
		return appendKeyArg(dst, 'v', w.key), wantOK
	case 1:
		w.step = 2
		dst = append(dst, "*2\r\n$3\r\nGET\r\n"...)
		return appendKeyArg(dst, 'k', w.key), wantValue
	}
	w.step = 0
	w.key = (w.key + 1) % LoadKeys
	return append(dst, "*2\r\n$4\r\nECHO\r\n$5\r\n"+helloText+"\r\n"...), wantEcho
}

// appendKeyArg appends the bulk string <c><i>.
func appendKeyArg(dst []byte, c byte, i int) []byte {
	var d [20]byte
	num := strconv.AppendInt(d[:0], int64(i), 10)
	dst = append(dst, '$')
	dst = strconv.AppendInt(dst, int64(1+len(num)), 10)
	dst = append(dst, '\r', '\n', c)
	dst = append(dst, num...)
	return append(dst, '\r', '\n')
}

// check reports whether a reply of kind (its first byte) is of the kind
// the request wants, and counts error replies by code. line is its first
// line, with its "\r\n", except after a bulk string (nil then).
func (w *loadWorker) check(want replyKind, kind byte, line []byte) bool {
	if kind == '-' {
		code := line[1:]
		if i := bytes.IndexAny(code, " \r\n"); i >= 0 {
			code = code[:i]
		}
		n := w.codes[string(code)] // no allocation: a lookup by string(bytes)
		if n == nil {
			if w.codes == nil {
				w.codes = make(map[string]*int64)
			}
			n = new(int64)
			w.codes[string(code)] = n
		}
		*n++
		return false
	}
	switch want {
	case wantOK:
		return bytes.Equal(line, stepsd.ReplyOK)
	case wantValue:
		return kind == '$' // the value, or nil
	}
	return kind == '$' && line == nil && w.bulkHello
}

// SlowConfig is a load of connections that write and never read: requests
// pile up as replies in the server (or, once the socket buffers are full,
// the server stops reading them).
type SlowConfig struct {
	Addr     string
	Conns    int
	Pipeline int           // ECHO requests per write
	TextLen  int           // bytes of each ECHO's text
	Duration time.Duration // how long the connections write
	// MaxBytes stops the writes once this many bytes are written in all
	// (0: no cap), for a server that buffers every reply however many:
	// the connections then stay open, idle, until Duration is over.
	MaxBytes int64
}

// SlowResult is what the slow connections managed to write.
type SlowResult struct {
	Requests int64 // requests the kernel accepted
	Bytes    int64
	Elapsed  time.Duration // Duration, and a little
	Writing  time.Duration // until the writes stopped: shorter if MaxBytes stopped them
}

// RunSlowReaders runs cfg: every connection writes batches of ECHO
// requests until Duration is over (or MaxBytes written), never reading a
// reply.
// beforeClose, if not nil, is called once the writes have stopped and
// before the connections close, while the server still holds whatever it
// buffered for them.
func RunSlowReaders(cfg SlowConfig, beforeClose func()) (SlowResult, error) {
	if cfg.Conns < 1 || cfg.Pipeline < 1 || cfg.TextLen < 0 || cfg.Duration <= 0 {
		return SlowResult{}, fmt.Errorf("slow readers: %+v", cfg)
	}
	conns, err := dialAll(cfg.Addr, cfg.Conns)
	if err != nil {
		return SlowResult{}, fmt.Errorf("slow readers: %w", err)
	}
	line := []byte("*2\r\n$4\r\nECHO\r\n$" + strconv.Itoa(cfg.TextLen) + "\r\n" + strings.Repeat("x", cfg.TextLen) + "\r\n")
	batch := bytes.Repeat(line, cfg.Pipeline)

	start := time.Now()
	end := start.Add(cfg.Duration)
	var written atomic.Int64
	errs := make([]error, len(conns))
	var wg sync.WaitGroup
	for i, c := range conns {
		c.SetWriteDeadline(end) // a write blocked on a server that stopped reading ends on time
		wg.Add(1)
		go func() {
			defer wg.Done()
			for cfg.MaxBytes <= 0 || written.Load() < cfg.MaxBytes {
				n, err := c.Write(batch)
				written.Add(int64(n))
				if err != nil {
					if !errors.Is(err, os.ErrDeadlineExceeded) {
						errs[i] = err
					}
					return
				}
			}
		}()
	}
	wg.Wait()
	res := SlowResult{Bytes: written.Load(), Writing: time.Since(start)}
	// Writers stopped by MaxBytes leave their connections open until the
	// end, so that a run lasts Duration either way.
	time.Sleep(time.Until(end))
	res.Elapsed = time.Since(start)
	res.Requests = res.Bytes / int64(len(line))
	if beforeClose != nil {
		beforeClose()
	}
	for _, c := range conns {
		c.Close()
	}
	return res, errors.Join(errs...)
}
