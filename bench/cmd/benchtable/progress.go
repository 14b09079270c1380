package main

import (
	"fmt"
	"io"
	"os"
	"time"
)

// progress is the line on stderr that says what runs: on a terminal one
// line rewritten in place, otherwise one line per step (a log).
type progress struct {
	w           io.Writer
	tty         bool
	total, done int
	start       time.Time
	shown       bool
}

func newProgress(w io.Writer, total int) *progress {
	p := &progress{w: w, total: total, start: time.Now()}
	if f, ok := w.(*os.File); ok {
		if fi, err := f.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
			p.tty = true
		}
	}
	return p
}

// step counts one step done and shows what runs next.
func (p *progress) step(what string) {
	p.done++
	p.show(what)
}

// show shows what runs, without counting a step.
func (p *progress) show(what string) {
	el := time.Since(p.start).Round(time.Second)
	line := fmt.Sprintf("[%*d/%d %s] %s", len(fmt.Sprint(p.total)), min(p.done, p.total), p.total, el, what)
	if p.tty {
		fmt.Fprintf(p.w, "\r\033[K%s", line)
		p.shown = true
		return
	}
	fmt.Fprintln(p.w, line)
}

// printf prints a message on a line of its own, keeping the progress line.
func (p *progress) printf(format string, a ...any) {
	p.clear()
	fmt.Fprintf(p.w, format, a...)
}

// clear removes the progress line, before other output.
func (p *progress) clear() {
	if p.tty && p.shown {
		fmt.Fprint(p.w, "\r\033[K")
		p.shown = false
	}
}
