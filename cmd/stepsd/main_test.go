//go:build linux

package main

import (
	"bufio"
	"bytes"
	"net"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The test binary doubles as stepsd: with STEPSD_MAIN set, it runs main.
func TestMain(m *testing.M) {
	if os.Getenv("STEPSD_MAIN") == "1" {
		os.Args = append([]string{"stepsd"}, strings.Fields(os.Getenv("STEPSD_ARGS"))...)
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func freeAddr(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// TestSignalShutsDownGracefully runs the command, leaves a SLEEP in flight,
// sends SIGTERM and expects the reply, the connection's end and exit 0.
func TestSignalShutsDownGracefully(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			addr := freeAddr(t)
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), "STEPSD_MAIN=1", "STEPSD_ARGS=-addr "+addr+" -reactors 2 -timeout 2s -admin 127.0.0.1:0")
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer cmd.Process.Kill()
			var c net.Conn
			var err error
			for deadline := time.Now().Add(5 * time.Second); ; {
				if c, err = net.Dial("tcp", addr); err == nil || time.Now().After(deadline) {
					break
				}
				time.Sleep(10 * time.Millisecond)
			}
			if err != nil {
				t.Fatalf("stepsd never listened: %v\n%s", err, stderr.String())
			}
			defer c.Close()
			br := bufio.NewReader(c)
			_ = c.SetDeadline(time.Now().Add(5 * time.Second))
			if _, err := c.Write([]byte("ECHO hi\nSLEEP 200\n")); err != nil {
				t.Fatal(err)
			}
			if line, _ := br.ReadString('\n'); line != "$2\r\n" {
				t.Fatalf("ECHO answered %q, want $2", line)
			}
			if line, _ := br.ReadString('\n'); line != "hi\r\n" {
				t.Fatalf("reply %q", line)
			}
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			if line, _ := br.ReadString('\n'); line != "+OK\r\n" {
				t.Fatalf("in-flight SLEEP answered %q, want OK", line)
			}
			if line, err := br.ReadString('\n'); err == nil {
				t.Fatalf("got %q after shutdown, want the connection closed", line)
			}
			if err := cmd.Wait(); err != nil {
				t.Fatalf("exit: %v\n%s", err, stderr.String())
			}
			if !strings.Contains(stderr.String(), "stopped") {
				t.Errorf("log does not say it stopped:\n%s", stderr.String())
			}
			if !strings.Contains(stderr.String(), "admin on http://127.0.0.1:") {
				t.Errorf("log does not say where the admin port is:\n%s", stderr.String())
			}
		})
	}
}

func TestBadFlagExits2(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "STEPSD_MAIN=1", "STEPSD_ARGS=-no-such-flag")
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 {
		t.Fatalf("exit %v, want status 2", err)
	}
}
