package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/pprof"
	"strconv"
	"strings"
	"time"

	"github.com/asyncsteps/asyncsteps/stepsd"
)

// The admin port (-admin): net/http/pprof and the server's metrics in the
// Prometheus text format, on a listener of its own, apart from the request
// port, served by ordinary goroutines (never by the reactors).
//
//	/metrics              counters of every reactor, flows by command, the Limiter,
//	                      connections refused and closed by each limit
//	/debug/pprof/         the runtime profiles; /debug/pprof/profile?seconds=N is a CPU profile
//	                      whose samples carry the label flow=<command>
//
// It exposes profiles and the command line, so it listens on loopback only
// unless -admin-public says otherwise.

// checkAdminAddr refuses an admin address that is not loopback (an empty
// host means every interface), unless public is set.
func checkAdminAddr(addr string, public bool) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("-admin %s: %v (want host:port, like 127.0.0.1:7071)", addr, err)
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return fmt.Errorf("-admin %s: bad port %q", addr, port)
	}
	if public {
		return nil
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("-admin %s: not a loopback address; the admin port serves profiles and the command line, so it listens on 127.0.0.1, ::1 or localhost unless -admin-public is given too", addr)
}

// adminServer is the running admin port.
type adminServer struct {
	ln  net.Listener
	srv *http.Server
}

// startAdmin listens on addr and serves the admin port for s.
func startAdmin(addr string, s *stepsd.Server) (*adminServer, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("admin: %w", err)
	}
	a := &adminServer{ln: ln, srv: &http.Server{Handler: adminHandler(s), ReadHeaderTimeout: 10 * time.Second}}
	go func() { _ = a.srv.Serve(ln) }()
	return a, nil
}

// Addr is where the admin port listens.
func (a *adminServer) Addr() net.Addr { return a.ln.Addr() }

// Close stops the admin port, letting a running profile finish for a
// moment.
func (a *adminServer) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := a.srv.Shutdown(ctx); err != nil {
		_ = a.srv.Close()
	}
}

// adminHandler is the admin port's mux. pprof's handlers are registered on
// it explicitly: importing net/http/pprof also registers them on
// http.DefaultServeMux, which this command never serves.
func adminHandler(s *stepsd.Server) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
		defer cancel()
		m := s.Metrics(ctx)
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		bw := bufio.NewWriter(w)
		writeMetrics(bw, m)
		_ = bw.Flush()
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprint(w, "stepsd admin: /metrics (Prometheus text format), /debug/pprof/ (go tool pprof http://HOST/debug/pprof/profile)\n")
	})
	return mux
}

// promWriter writes the Prometheus text exposition format (version 0.0.4):
// a HELP and a TYPE line once per family, then one line per sample.
//
// Written by hand rather than with prometheus/client_golang: the format is
// a dozen lines of code here, every value already comes as one consistent
// snapshot (a client library's registry would copy it again into its own
// metric objects on each scrape), and the library would bring eight modules
// (protobuf, client_model, procfs...) into a module whose rule is few
// dependencies. Only this command knows the format; the library packages
// export plain structs.
type promWriter struct {
	w    io.Writer
	seen map[string]bool
}

func (p *promWriter) family(name, typ, help string) {
	if p.seen[name] {
		return
	}
	p.seen[name] = true
	fmt.Fprintf(p.w, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, typ)
}

// sample writes name{labels} value; labels are pairs of name and value.
func (p *promWriter) sample(name, typ, help string, v float64, labels ...string) {
	p.family(name, typ, help)
	var b strings.Builder
	b.WriteString(name)
	if len(labels) > 0 {
		b.WriteByte('{')
		for i := 0; i+1 < len(labels); i += 2 {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(labels[i])
			b.WriteString(`="`)
			b.WriteString(escapeLabel(labels[i+1]))
			b.WriteByte('"')
		}
		b.WriteByte('}')
	}
	b.WriteByte(' ')
	b.WriteString(strconv.FormatFloat(v, 'g', -1, 64))
	b.WriteByte('\n')
	_, _ = io.WriteString(p.w, b.String())
}

// escapeLabel escapes a label value as the text format requires.
func escapeLabel(s string) string {
	if !strings.ContainsAny(s, "\\\"\n") {
		return s
	}
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s)
}

// writeMetrics writes m in the Prometheus text format.
func writeMetrics(w io.Writer, m stepsd.Metrics) {
	p := &promWriter{w: w, seen: map[string]bool{}}
	const c, g = "counter", "gauge"
	for i, rm := range m.Reactors {
		rx := strconv.Itoa(i)
		up := 1.0
		if m.Err[i] != nil {
			up = 0
		}
		p.sample("asyncsteps_reactor_up", g, "1 if the reactor's loop took its metrics snapshot, 0 if it did not in time (stuck or closed)", up, "reactor", rx)
		if up == 0 {
			continue
		}
		p.sample("asyncsteps_steps_total", c, "Steps run.", float64(rm.StepsRun), "reactor", rx)
		p.sample("asyncsteps_flows_started_total", c, "Root flows started.", float64(rm.FlowsStarted), "reactor", rx)
		p.sample("asyncsteps_flows_ended_total", c, "Root flows ended, by result.", float64(rm.FlowsSucceeded), "reactor", rx, "result", "succeeded")
		p.sample("asyncsteps_flows_ended_total", c, "", float64(rm.FlowsFailed), "reactor", rx, "result", "failed")
		p.sample("asyncsteps_flows_ended_total", c, "", float64(rm.FlowsCanceled), "reactor", rx, "result", "canceled")
		p.sample("asyncsteps_flows_timed_out_total", c, "Root flows that failed with Timeout (counted in failed too).", float64(rm.FlowsTimedOut), "reactor", rx)
		p.sample("asyncsteps_flows_running", g, "Root flows running now.", float64(rm.FlowsRunning), "reactor", rx)
		p.sample("asyncsteps_frames_live", g, "Step frames in use.", float64(rm.Stats.FramesLive), "reactor", rx)
		p.sample("asyncsteps_roots_live", g, "Roots handed out and not released.", float64(rm.Stats.RootsLive), "reactor", rx)
		rr := rm.Reactor
		p.sample("asyncsteps_reactor_iterations_total", c, "Loop iterations.", float64(rr.Iterations), "reactor", rx)
		p.sample("asyncsteps_reactor_tasks_total", c, "Tasks posted from other goroutines and run.", float64(rr.TasksRun), "reactor", rx)
		p.sample("asyncsteps_reactor_timers_fired_total", c, "Timer-wheel entries fired.", float64(rr.TimersFired), "reactor", rx)
		p.sample("asyncsteps_reactor_wakeups_total", c, "Wake-ups after blocking in epoll_wait.", float64(rr.Wakeups), "reactor", rx)
		p.sample("asyncsteps_reactor_ring_high_water", g, "Most tasks seen waiting in the submission ring.", float64(rr.RingHighWater), "reactor", rx)
		p.sample("asyncsteps_reactor_ring_size", g, "Capacity of the submission ring.", float64(rr.RingSize), "reactor", rx)
		p.sample("asyncsteps_reactor_seconds_total", c, "Loop time waiting in epoll_wait (poll) and running work (run).", rr.PollTime.Seconds(), "reactor", rx, "state", "poll")
		p.sample("asyncsteps_reactor_seconds_total", c, "", rr.RunTime.Seconds(), "reactor", rx, "state", "run")
		if i < len(m.Commands) {
			// Counted by stepsd per request: a read's requests share
			// one flow, so the engine's counters by flow name count
			// reads. The label keeps its name, flow, for the
			// dashboards that read it.
			for _, n := range m.Commands[i] {
				p.sample("stepsd_requests_started_total", c, "Requests started, by command.", float64(n.Started), "reactor", rx, "flow", n.Command)
				p.sample("stepsd_requests_ended_total", c, "Requests ended, by command and result: succeeded (a reply), failed (an error reply: -Timeout, -DefenseRejected, -ERR), canceled (the connection went away first).", float64(n.Succeeded), "reactor", rx, "flow", n.Command, "result", "succeeded")
				p.sample("stepsd_requests_ended_total", c, "", float64(n.Failed), "reactor", rx, "flow", n.Command, "result", "failed")
				p.sample("stepsd_requests_ended_total", c, "", float64(n.Canceled), "reactor", rx, "flow", n.Command, "result", "canceled")
				p.sample("stepsd_request_seconds_total", c, "Summed life of the ended requests, by command, from their read to their reply: divided by stepsd_requests_ended_total, their mean latency (on the loop's clock, exact to one loop round).", n.Time.Seconds(), "reactor", rx, "flow", n.Command)
			}
		}
	}
	lim := []struct {
		part string
		h, q int
		rej  uint64
	}{
		{"concurrency", m.Concurrency.Holders, m.Concurrency.Queued, m.Concurrency.Rejected},
		{"rate", m.Rate.Holders, m.Rate.Queued, m.Rate.Rejected},
	}
	for _, l := range lim {
		p.sample("stepsd_limiter_holders", g, "Limiter: requests inside (concurrency) or entries this period (rate).", float64(l.h), "part", l.part)
		p.sample("stepsd_limiter_queued", g, "Limiter: requests waiting.", float64(l.q), "part", l.part)
		p.sample("stepsd_limiter_rejected_total", c, "Limiter: requests refused with DefenseRejected, the queue being full.", float64(l.rej), "part", l.part)
	}
	p.sample("stepsd_limiters", g, "Limiters: 1, one shared by the reactors; more, one per reactor with its share of the bounds (the figures above are their sums).", float64(m.Limiters))
	p.sample("stepsd_connections", g, "Open connections.", float64(m.Conns))
	n := m.Net
	p.sample("stepsd_connections_accepted_total", c, "Connections accepted.", float64(n.Accepted))
	p.sample("stepsd_connections_refused_total", c, "Connections closed at once, -maxconns being open.", float64(n.Refused))
	closed := []struct {
		reason string
		v      uint64
	}{
		{"idle_timeout", n.IdleTimeouts},
		{"read_timeout", n.ReadTimeouts},
		{"write_timeout", n.WriteTimeouts},
		{"linger", n.LingerExpired},
		{"input_too_large", n.InputTooLarge},
		{"protocol_error", m.ProtocolErrors},
	}
	for i, r := range closed {
		help := ""
		if i == 0 {
			help = "Connections closed by a limit: -idle, -readtimeout, -writetimeout, output not drained at close (linger), unconsumed input over netio's MaxInput, a line over -maxline."
		}
		p.sample("stepsd_connections_closed_total", c, help, float64(r.v), "reason", r.reason)
	}
	p.sample("stepsd_connections_reset_total", c, "Of the connections closed by a time limit or linger, those closed with a reset: output the client had not read was dropped.", float64(n.Resets))
}
