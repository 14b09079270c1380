//go:build linux

package main

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/asyncsteps/asyncsteps/stepsd"
)

// -admin takes loopback addresses only, unless -admin-public.
func TestAdminFlag(t *testing.T) {
	tests := []struct {
		args, wantErr string
	}{
		{"-admin 127.0.0.1:7071", ""},
		{"-admin [::1]:7071", ""},
		{"-admin localhost:0", ""},
		{"-admin :7071", "not a loopback address"},
		{"-admin 0.0.0.0:7071", "not a loopback address"},
		{"-admin 10.1.2.3:7071", "not a loopback address"},
		{"-admin 0.0.0.0:7071 -admin-public", ""},
		{"-admin 127.0.0.1", "want host:port"},
		{"-admin 127.0.0.1:http", "bad port"},
		{"-admin-public", "without -admin"},
	}
	for _, tt := range tests {
		t.Run(tt.args, func(t *testing.T) {
			_, err := parseFlags(strings.Fields(tt.args), io.Discard)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), "-admin") {
				t.Fatalf("err %v, want one naming -admin and saying %q", err, tt.wantErr)
			}
		})
	}
}

// The admin handler serves the server's metrics in the Prometheus text
// format, requests counted by command, and the pprof index.
func TestAdminMetrics(t *testing.T) {
	cfg := stepsd.DefaultConfig()
	cfg.Addr, cfg.Reactors = "127.0.0.1:0", 2
	s, err := stepsd.Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown(time.Second)
	c, err := net.Dial("tcp", s.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(c)
	for _, line := range []string{"SET k v", "GET k", "GET k", "ECHO x", "BOGUS"} {
		if _, err := c.Write([]byte(line + "\n")); err != nil {
			t.Fatal(err)
		}
		reply, err := br.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if reply[0] == '$' && reply[1] != '-' { // a bulk string: its bytes follow
			if _, err := br.ReadString('\n'); err != nil {
				t.Fatal(err)
			}
		}
	}
	hs := httptest.NewServer(adminHandler(s))
	defer hs.Close()
	body := get(t, hs.URL+"/metrics")
	for _, want := range []string{
		"# TYPE asyncsteps_steps_total counter\n",
		`asyncsteps_reactor_up{reactor="1"} 1` + "\n",
		`asyncsteps_flows_ended_total{reactor="0",result="succeeded"} `,
		`asyncsteps_reactor_seconds_total{reactor="0",state="poll"} `,
		`stepsd_requests_ended_total{reactor="`,
		`flow="GET",result="succeeded"} 2` + "\n",
		`flow="INVALID",result="failed"} 1` + "\n", // -ERR unknown command
		`flow="SET",result="succeeded"} 1` + "\n",
		`stepsd_limiter_rejected_total{part="concurrency"} 0` + "\n",
		"stepsd_limiters 2\n", // two reactors, the default bounds: one Limiter each
		"stepsd_connections 1\n",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q:\n%s", want, body)
		}
	}
	// Every line is a comment or "name{labels} value".
	for _, line := range strings.Split(strings.TrimSpace(body), "\n") {
		if !strings.HasPrefix(line, "# ") && len(strings.Fields(line)) != 2 {
			t.Errorf("malformed line %q", line)
		}
	}
	if idx := get(t, hs.URL+"/debug/pprof/"); !strings.Contains(idx, "goroutine") {
		t.Errorf("pprof index:\n%s", idx)
	}
}

func get(t *testing.T, url string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d %v", url, resp.StatusCode, err)
	}
	return string(b)
}
