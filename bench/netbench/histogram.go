package netbench

import (
	"math/bits"
	"time"
)

// Histogram counts latencies in log-linear buckets, as HdrHistogram does:
// each power of two of nanoseconds is split into histSub equal buckets, so
// a value is known to within 1/histSub (under 0.8%) anywhere from 1µs up
// to 2^34ns (17s); values under 256ns are exact, larger ones are clamped.
// Recording is an index computation and an increment: no allocation, no
// lock. Each load goroutine fills its own; Merge adds them at the end.
type Histogram struct {
	counts [histBuckets]uint64
	n      uint64
}

const (
	histSubBits = 7
	histSub     = 1 << histSubBits // buckets per power of two
	histMaxBits = 34               // values up to 2^34-1 ns
	// histBuckets: the values 0..2*histSub-1 one per bucket, then histSub
	// per power of two up to histMaxBits.
	histBuckets = (histMaxBits - histSubBits + 1) * histSub
)

// histIndex is v's bucket: for v in [2^m, 2^(m+1)) with m >= histSubBits,
// the top histSubBits+1 bits of v (histSub..2*histSub-1) offset by
// histSub per power of two above 2^histSubBits.
func histIndex(v int64) int {
	if v < 0 {
		v = 0
	}
	if v >= 1<<histMaxBits {
		v = 1<<histMaxBits - 1
	}
	u := uint64(v)
	if u < 2*histSub {
		return int(u)
	}
	shift := bits.Len64(u) - 1 - histSubBits
	return shift<<histSubBits + int(u>>shift)
}

// histUpper is the largest value of bucket i, the one quantiles report, so
// a reported quantile is never below the true one.
func histUpper(i int) int64 {
	if i < 2*histSub {
		return int64(i)
	}
	shift := i>>histSubBits - 1
	top := int64(i - shift<<histSubBits) // histSub..2*histSub-1
	return (top+1)<<shift - 1
}

// Record counts one latency.
func (h *Histogram) Record(d time.Duration) {
	h.counts[histIndex(int64(d))]++
	h.n++
}

// Count is the number of latencies recorded.
func (h *Histogram) Count() uint64 { return h.n }

// Merge adds o's counts to h.
func (h *Histogram) Merge(o *Histogram) {
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.n += o.n
}

// Quantile is the latency under which a fraction q of those recorded fall
// (the upper bound of its bucket), or 0 if none was.
func (h *Histogram) Quantile(q float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	rank := uint64(q * float64(h.n))
	if float64(rank) < q*float64(h.n) {
		rank++ // the ceiling: the rank-th smallest value
	}
	rank = max(rank, 1)
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			return time.Duration(histUpper(i))
		}
	}
	return time.Duration(histUpper(histBuckets - 1))
}
