// Package mdtable prints aligned Markdown tables for the benchmark
// commands.
package mdtable

import (
	"fmt"
	"io"
	"strings"
)

// Write prints cells as an aligned Markdown table, the first row as the
// header; columns lo..hi hold numbers and align right.
func Write(w io.Writer, cells [][]string, lo, hi int) {
	widths := make([]int, len(cells[0]))
	for _, c := range cells {
		for i, s := range c {
			widths[i] = max(widths[i], len([]rune(s)))
		}
	}
	for k, c := range cells {
		var b strings.Builder
		b.WriteString("|")
		for i, s := range c {
			pad := strings.Repeat(" ", widths[i]-len([]rune(s)))
			if i >= lo && i <= hi && k > 0 {
				s = pad + s // numbers align right
			} else {
				s += pad
			}
			fmt.Fprintf(&b, " %s |", s)
		}
		fmt.Fprintln(w, b.String())
		if k == 0 {
			b.Reset()
			b.WriteString("|")
			for _, n := range widths {
				b.WriteString(strings.Repeat("-", n+2) + "|")
			}
			fmt.Fprintln(w, b.String())
		}
	}
}
