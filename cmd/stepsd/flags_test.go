package main

import (
	"io"
	"strings"
	"testing"
	"time"

	"github.com/asyncsteps/asyncsteps/stepsd"
)

// A flag given explicitly means what the library
// says, -burst is its own flag, and a value the library would replace
// with a default is refused with an error naming the flag.
func TestFlags(t *testing.T) {
	d := stepsd.DefaultConfig()
	tests := []struct {
		args    string
		check   func(c stepsd.Config) bool
		wantErr string // a substring of the error; "" for none
	}{
		{"", func(c stepsd.Config) bool { return c == d }, ""},
		{"-queue 0", func(c stepsd.Config) bool { return c.Queue == 0 && c.Burst == d.Burst }, ""},
		{"-queue -1", func(c stepsd.Config) bool { return c.Queue == -1 }, ""},
		{"-queue 7", func(c stepsd.Config) bool { return c.Queue == 7 && c.Burst == d.Burst }, ""},
		{"-burst 0", func(c stepsd.Config) bool { return c.Burst == 0 && c.Queue == d.Queue }, ""},
		{"-grace 0", func(c stepsd.Config) bool { return c.Grace == 0 }, ""},
		{"-timeout 250ms", func(c stepsd.Config) bool { return c.Timeout == 250*time.Millisecond }, ""},
		{"-queue -2", nil, "-queue -2"},
		{"-burst -3", nil, "-burst -3"},
		{"-reactors 0", nil, "-reactors 0"},
		{"-reactors -1", nil, "-reactors -1"},
		{"-timeout 0s", nil, "-timeout 0s"},
		{"-concurrent 0", nil, "-concurrent 0"},
		{"-rate 0", nil, "-rate 0"},
		{"-maxline 0", nil, "-maxline 0"},
		{"-pipeline -4", nil, "-pipeline -4"},
		{"-grace -1s", nil, "-grace -1s"},
		{"-spin -1ms", nil, "-spin -1ms"},
		{"extra", nil, "unexpected arguments"},
		{"-idle 0 -readtimeout 0 -writetimeout 0 -maxconns 0", func(c stepsd.Config) bool {
			return c.IdleTimeout == 0 && c.ReadTimeout == 0 && c.WriteTimeout == 0 && c.MaxConns == 0
		}, ""},
		{"-idle 2s", nil, "-idle 2s"}, // not more than -timeout (5s)
		{"-idle -1s", nil, "-idle -1s"},
		{"-readtimeout -1s", nil, "-readtimeout -1s"},
		{"-writetimeout -1s", nil, "-writetimeout -1s"},
		{"-maxconns -1", nil, "-maxconns -1"},
	}
	for _, tt := range tests {
		t.Run(tt.args, func(t *testing.T) {
			o, err := parseFlags(strings.Fields(tt.args), io.Discard)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err %v, want one naming %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !tt.check(o.cfg) {
				t.Fatalf("config %+v", o.cfg)
			}
		})
	}
}

// -h shows the real defaults, not zeros that stand for them, below what
// the server speaks and how to try it.
func TestHelpShowsRealDefaults(t *testing.T) {
	var b strings.Builder
	_, _ = parseFlags([]string{"-h"}, &b)
	for _, want := range []string{"(default 65536)", "(default 5s)", "-burst", "0: no queue",
		"RESP2", "SLEEP ms", "redis-cli -p 7070 set a b", "redis-benchmark -p 7070 -q", "LPUSH", "ZPOPMIN", "XADD", "WRONGTYPE"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("-h lacks %q:\n%s", want, b.String())
		}
	}
}
