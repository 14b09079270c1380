package main

import (
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/asyncsteps/asyncsteps/bench"
	"github.com/asyncsteps/asyncsteps/bench/internal/mdtable"
)

// The table's columns.
var tableHeader = []string{"scenario", "impl", "time/unit", "B/op", "allocs/op", "p50", "p99", "ours ÷ peer (lower is better)", "other metrics"}

// printTable prints the cases as one aligned Markdown table: a row per
// implementation, ours first; each of ours carries its ratio to each peer.
// It returns the failures, as notes.
func printTable(w io.Writer, cases []*caseResult) (notes []string) {
	cells := [][]string{tableHeader}
	for _, c := range cases {
		var peers []*implResult
		for _, im := range c.Impls {
			if !im.Ours {
				peers = append(peers, im)
			}
		}
		for k, im := range c.Impls {
			row := make([]string, len(tableHeader))
			if k == 0 {
				row[0] = c.Suite + "/" + c.Name
			}
			row[1] = im.Impl
			if im.Impl == "" {
				row[1] = "(alone)"
			}
			m, ok := im.median()
			switch {
			case !ok:
				row[2] = "not run"
			case m.Err != "":
				row[2] = "FAIL"
				notes = append(notes, fmt.Sprintf("FAIL %s/%s: %s", c.Suite, strings.TrimPrefix(im.Bench, "Benchmark"), m.Err))
			default:
				row[2] = fmtTime(m.NsPerUnit) + "/" + c.Unit
				if m.Mem {
					row[3], row[4] = fmtCount(m.BytesPerOp), fmtCount(m.AllocsPerOp)
				} else {
					row[3], row[4] = "-", "-"
				}
				row[5], row[6] = fmtLatency(m.Metrics, bench.MetricP50), fmtLatency(m.Metrics, bench.MetricP99)
				if im.Ours {
					row[7] = ratios(c, m, peers)
				}
				row[8] = otherMetrics(c.Unit, m.Metrics)
			}
			cells = append(cells, row)
		}
	}
	mdtable.Write(w, cells, 2, 7)
	return notes
}

// ratios is ours over each peer that ran: on p50 in a latency case, on
// the time per unit otherwise. With one peer it is the bare number; with
// several each is followed by the peer's name.
func ratios(c *caseResult, ours runResult, peers []*implResult) string {
	value := func(r runResult) float64 {
		if c.Latency {
			return r.Metrics[bench.MetricP50]
		}
		return r.NsPerUnit
	}
	var parts []string
	for _, p := range peers {
		m, ok := p.median()
		if !ok || m.Err != "" || value(m) <= 0 {
			continue
		}
		s := fmtRatio(value(ours) / value(m))
		if len(peers) > 1 {
			s += " " + p.Impl
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, ", ")
}

// otherMetrics shows a run's metrics that have no column of their own.
func otherMetrics(unit string, m map[string]float64) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		switch k {
		case bench.MetricP50, bench.MetricP99, "ns/" + unit:
			continue
		}
		if q, ok := strings.CutSuffix(k, "-µs"); ok {
			parts = append(parts, fmt.Sprintf("%s %s", q, fmtTime(m[k]*1e3)))
			continue
		}
		parts = append(parts, fmt.Sprintf("%s %s", fmtValue(m[k]), k))
	}
	return strings.Join(parts, ", ")
}

// fmtTime shows nanoseconds in the unit that keeps 3 significant digits.
func fmtTime(ns float64) string {
	switch {
	case ns < 10:
		return fmt.Sprintf("%.2f ns", ns)
	case ns < 1000:
		return fmt.Sprintf("%.1f ns", ns)
	case ns < 1e6:
		return fmt.Sprintf("%.2f µs", ns/1e3)
	case ns < 1e9:
		return fmt.Sprintf("%.2f ms", ns/1e6)
	}
	return fmt.Sprintf("%.2f s", ns/1e9)
}

// fmtCount shows allocations or bytes per op as an integer, or "<1" when
// the runs allocated, but less than once per op (a garbage collection, a
// pool refilled, a goroutine's stack grown now and then).
func fmtCount(v float64) string {
	switch {
	case v == 0:
		return "0"
	case v < 1:
		return "<1"
	}
	return fmt.Sprintf("%.0f", math.Round(v))
}

// fmtLatency shows a latency metric (µs), or nothing.
func fmtLatency(m map[string]float64, name string) string {
	v, ok := m[name]
	if !ok {
		return ""
	}
	return fmtTime(v * 1e3)
}

func fmtRatio(r float64) string {
	switch {
	case r < 10:
		return fmt.Sprintf("%.2f", r)
	case r < 100:
		return fmt.Sprintf("%.1f", r)
	}
	return fmt.Sprintf("%.0f", r)
}

func fmtValue(v float64) string {
	if v >= 1000 {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.3g", v)
}
