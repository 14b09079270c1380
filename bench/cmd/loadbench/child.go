package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/asyncsteps/asyncsteps/bench/netbench"
)

// Each server runs in a child process of its own (this program, re-run
// with -serve), so that its memory is its own: VmRSS and VmHWM in
// /proc/<pid>/status count the server and nothing of the load generator.

// limits are stepsd's Limiter bounds for a child (0: stepsd's default).
type limits struct {
	concurrent, queue int
}

// runChild is the child's main: it starts server on addr, prints
// "READY <bound address>" on stdout, and serves until SIGTERM, SIGINT or
// the end of stdin (the parent is gone), then stops the server. With
// cpuProfile it writes a CPU profile there from READY to the stop. It
// returns the exit code.
func runChild(server, addr string, loops int, lim limits, cpuProfile string) int {
	var (
		bound string
		stop  func() error
		err   error
	)
	switch server {
	case serverStepsd:
		bound, stop, err = startStepsd(addr, loops, lim, pinStepsd, false)
	case serverStepsdFree:
		bound, stop, err = startStepsd(addr, loops, lim, false, false)
	case serverStepsdShared:
		bound, stop, err = startStepsd(addr, loops, lim, pinStepsd, true)
	case serverGnet:
		bound, stop, err = netbench.StartGnet(addr, loops)
	case serverNet:
		bound, stop, err = netbench.StartNet(addr)
	default:
		err = fmt.Errorf("unknown server (want %s, %s, %s, %s or %s)", serverStepsd, serverStepsdFree, serverStepsdShared, serverGnet, serverNet)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "loadbench -serve=%s: %v\n", server, err)
		return 1
	}
	if profilePrefix != "" {
		finish, err := startProfiles(profilePrefix)
		if err != nil {
			fmt.Fprintf(os.Stderr, "loadbench -serve=%s: -profile: %v\n", server, err)
			_ = stop()
			return 1
		}
		defer func() {
			if err := finish(); err != nil {
				fmt.Fprintf(os.Stderr, "loadbench -serve=%s: -profile: %v\n", server, err)
			}
		}()
	}
	if cpuProfile != "" {
		// The CPU profile alone: -profile's other kinds would change
		// what the server does (sampled allocations, mutex and block
		// events), and a PGO profile needs only this one.
		finish, err := startCPUProfile(cpuProfile)
		if err != nil {
			fmt.Fprintf(os.Stderr, "loadbench -serve=%s: -cpuprofile: %v\n", server, err)
			_ = stop()
			return 1
		}
		defer func() {
			if err := finish(); err != nil {
				fmt.Fprintf(os.Stderr, "loadbench -serve=%s: -cpuprofile: %v\n", server, err)
			}
		}()
	}
	fmt.Printf("READY %s\n", bound)

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, os.Interrupt)
	eof := make(chan struct{})
	go func() {
		io.Copy(io.Discard, os.Stdin)
		close(eof)
	}()
	select {
	case <-sig:
	case <-eof:
	}
	if err := stop(); err != nil {
		fmt.Fprintf(os.Stderr, "loadbench -serve=%s: stop: %v\n", server, err)
		return 1
	}
	return 0
}

// child is a server running in a child process, seen from the parent.
type child struct {
	server string
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	addr   string
	outEOF chan struct{} // closed once the child's stdout is read to its end
}

// readyTimeout bounds a child's start and its stop.
const readyTimeout = 10 * time.Second

// startChild starts server in a child process and returns once it listens:
// this program, or -exe-b for a server named with suffixB. extra are more
// flags for the child.
func startChild(server string, loops int, extra ...string) (*child, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	if strings.HasSuffix(server, suffixB) {
		exe = exeB
	}
	args := append([]string{"-serve=" + baseServer(server), "-addr=127.0.0.1:0", "-loops=" + strconv.Itoa(loops), "-pin=" + strconv.FormatBool(pinStepsd), "-spin=" + spinStepsd.String()}, extra...)
	cmd := exec.Command(exe, args...)
	if childProcs > 0 {
		cmd.Env = append(os.Environ(), "GOMAXPROCS="+strconv.Itoa(childProcs))
	}
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := startOn(cmd, cpus.server); err != nil {
		return nil, err
	}
	c := &child{server: server, cmd: cmd, stdin: stdin, outEOF: make(chan struct{})}
	ready := make(chan string, 1)
	go func() {
		// The READY line, then anything else the child prints, which
		// goes to stderr, out of the tables' way.
		defer close(c.outEOF)
		sc := bufio.NewScanner(stdout)
		sent := false
		for sc.Scan() {
			if addr, ok := strings.CutPrefix(sc.Text(), "READY "); ok && !sent {
				ready <- addr
				sent = true
				continue
			}
			fmt.Fprintf(os.Stderr, "%s: %s\n", server, sc.Text())
		}
		if !sent {
			ready <- ""
		}
	}()
	select {
	case c.addr = <-ready:
		if c.addr == "" {
			err = errors.New("exited before READY")
			break
		}
		if cpus.server == nil {
			return c, nil
		}
		// The child's mask is the servers' CPUs, or the table is not the
		// comparison it says it is.
		got, gerr := pidCPUs(cmd.Process.Pid)
		if gerr == nil && slices.Equal(got, cpus.server) {
			return c, nil
		}
		err = fmt.Errorf("runs on CPUs %s, not %s (%v)", fmtCPUList(got), fmtCPUList(cpus.server), gerr)
	case <-time.After(readyTimeout):
		err = fmt.Errorf("not READY within %v", readyTimeout)
	}
	c.kill()
	return nil, fmt.Errorf("server %s: %w", server, err)
}

// stop asks the child to stop (SIGTERM, and its stdin closes) and waits for
// it; one that has not exited within readyTimeout is killed.
func (c *child) stop() error {
	c.cmd.Process.Signal(syscall.SIGTERM)
	c.stdin.Close()
	done := make(chan error, 1)
	go func() {
		<-c.outEOF // Wait must not run before the pipe is read to its end
		done <- c.cmd.Wait()
	}()
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("server %s: %w", c.server, err)
		}
		return nil
	case <-time.After(readyTimeout):
		c.cmd.Process.Kill()
		<-done
		return fmt.Errorf("server %s: still running %v after SIGTERM: killed", c.server, readyTimeout)
	}
}

func (c *child) kill() {
	c.cmd.Process.Kill()
	c.stdin.Close()
	<-c.outEOF
	c.cmd.Wait()
}

// mem is a child's resident memory, in bytes: VmRSS now, and VmHWM, its
// peak since the start or the last resetPeak.
func (c *child) mem() (rss, hwm int64, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", c.cmd.Process.Pid))
	if err != nil {
		return 0, 0, err
	}
	for line := range bytes.Lines(b) {
		name, value, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			continue
		}
		var dst *int64
		switch string(name) {
		case "VmRSS":
			dst = &rss
		case "VmHWM":
			dst = &hwm
		default:
			continue
		}
		kb, err := strconv.ParseInt(string(bytes.TrimSuffix(bytes.TrimSpace(value), []byte(" kB"))), 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("/proc/%d/status: %s: %w", c.cmd.Process.Pid, name, err)
		}
		*dst = kb << 10
	}
	return rss, hwm, nil
}

// rss is mem's VmRSS, 0 if it cannot be read.
func (c *child) rss() int64 {
	rss, _, _ := c.mem()
	return rss
}

// cpu returns the child's CPU time so far, user and system, from
// /proc/<pid>/stat (utime + stime, in clock ticks: 10ms each where
// CLK_TCK is 100, the Linux default).
func (c *child) cpu() (time.Duration, error) { return procCPU(c.cmd.Process.Pid) }

// procCPU reads utime + stime of process pid.
func procCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name, field 2, is in parentheses and may hold spaces:
	// the fields after it are counted from its closing one.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: %q", pid, b)
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state); utime and stime are fields 14 and 15.
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f)+2)
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat: utime %q stime %q", pid, f[11], f[12])
	}
	return time.Duration(ut+st) * time.Second / clockTicks, nil
}

// clockTicks is CLK_TCK, the unit of utime and stime: 100 on Linux
// (USER_HZ, fixed in the kernel's ABI whatever its own HZ).
const clockTicks = 100

// resetPeak makes VmHWM start again from VmRSS (Linux 4.0 and later), so
// that it is the peak of what follows, not of the child's whole life.
func (c *child) resetPeak() error {
	return os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", c.cmd.Process.Pid), []byte("5"), 0)
}

// sampler reads a child's VmRSS every interval until stop, in case VmHWM
// cannot be reset: its peak is then the highest sample.
type sampler struct {
	done chan struct{}
	wg   sync.WaitGroup
	mu   sync.Mutex
	last int64
	peak int64
}

func (c *child) sample(interval time.Duration) *sampler {
	s := &sampler{done: make(chan struct{})}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			if rss := c.rss(); rss > 0 {
				s.mu.Lock()
				s.last, s.peak = rss, max(s.peak, rss)
				s.mu.Unlock()
			}
			select {
			case <-s.done:
				return
			case <-t.C:
			}
		}
	}()
	return s
}

// stop ends the sampling and returns the last sample and the highest.
func (s *sampler) stop() (last, peak int64) {
	close(s.done)
	s.wg.Wait()
	return s.last, s.peak
}

// startCPUProfile starts this process's CPU profile into file; finish
// stops it and closes the file.
func startCPUProfile(file string) (finish func() error, err error) {
	f, err := os.Create(file)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() error {
		pprof.StopCPUProfile()
		return f.Close()
	}, nil
}

// profileLoad runs matrix with this process's CPU profile on: the load
// generator's, in -cpuprofiles's load.cpu.prof.
func profileLoad(matrix func()) error {
	finish, err := startCPUProfile(filepath.Join(cpuProfileDir, "load.cpu.prof"))
	if err != nil {
		return err
	}
	matrix()
	return finish()
}

// startProfiles starts the CPU profile and the sampling of allocations,
// contended mutexes (1 in 10) and blocking (1 per 10µs blocked), for the
// child's whole service, at rates low enough not to show in the CPU
// profile; finish stops it and writes <prefix>.cpu.prof, .heap.prof,
// .allocs.prof, .mutex.prof and .block.prof.
func startProfiles(prefix string) (finish func() error, err error) {
	runtime.MemProfileRate = 64 << 10
	runtime.SetMutexProfileFraction(10)
	runtime.SetBlockProfileRate(10_000)
	cpu, err := os.Create(prefix + ".cpu.prof")
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(cpu); err != nil {
		cpu.Close()
		return nil, err
	}
	return func() error {
		pprof.StopCPUProfile()
		err := cpu.Close()
		runtime.GC()
		for _, kind := range []string{"heap", "allocs", "mutex", "block"} {
			f, ferr := os.Create(prefix + "." + kind + ".prof")
			if ferr == nil {
				ferr = pprof.Lookup(kind).WriteTo(f, 0)
				if cerr := f.Close(); ferr == nil {
					ferr = cerr
				}
			}
			err = errors.Join(err, ferr)
		}
		return err
	}, nil
}
