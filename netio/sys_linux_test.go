//go:build linux

package netio

import (
	"bytes"
	"errors"
	"testing"

	"golang.org/x/sys/unix"
)

// socketPair is a connected pair of non-blocking stream sockets, as accept4
// gives netio: sysRead and sysWrite are made for those alone.
func socketPair(t *testing.T) (a, b int) {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatalf("socketpair: %v", err)
	}
	t.Cleanup(func() {
		_ = unix.Close(fds[0])
		_ = unix.Close(fds[1])
	})
	return fds[0], fds[1]
}

// sysRead and sysWrite are raw system calls: what each returns must be
// what unix.Read and unix.Write returned (the bytes, EAGAIN as errAgain,
// end of stream as 0 and nil, any other error as its Errno), since
// Conn.read, Send and flush tell the cases apart by them.
func TestSysReadWriteResults(t *testing.T) {
	a, b := socketPair(t)
	buf := make([]byte, 64)

	if n, err := sysRead(a, buf); n != -1 || err != errAgain {
		t.Fatalf("sysRead of an empty socket = %d, %v; want -1, errAgain", n, err)
	}
	msg := []byte("hello, loop")
	if n, err := sysWrite(b, msg); n != len(msg) || err != nil {
		t.Fatalf("sysWrite = %d, %v; want %d, nil", n, err, len(msg))
	}
	n, err := sysRead(a, buf)
	if err != nil || !bytes.Equal(buf[:n], msg) {
		t.Fatalf("sysRead = %q, %v; want %q, nil", buf[:max(n, 0)], err, msg)
	}
	if n, err := sysRead(a, buf[:0]); n != 0 || err != nil {
		t.Fatalf("sysRead of no bytes = %d, %v; want 0, nil", n, err)
	}

	// A full socket: the write that finds no room says errAgain, after
	// the writes that took bytes said how many.
	big := make([]byte, 1<<16)
	total := 0
	for i := 0; ; i++ {
		n, err := sysWrite(b, big)
		if err == errAgain {
			if n != -1 {
				t.Fatalf("sysWrite on a full socket = %d, errAgain; want -1", n)
			}
			break
		}
		if err != nil || n <= 0 {
			t.Fatalf("sysWrite = %d, %v before the socket filled", n, err)
		}
		total += n
		if i > 1<<14 {
			t.Fatalf("the socket never filled after %d bytes", total)
		}
	}
	if total == 0 {
		t.Fatal("no write took bytes before EAGAIN")
	}

	// The peer gone: end of stream, then the write's error as an Errno.
	if err := unix.Close(b); err != nil {
		t.Fatal(err)
	}
	for {
		n, err := sysRead(a, big)
		if err != nil {
			t.Fatalf("sysRead after the peer closed = %d, %v; want the rest, then 0, nil", n, err)
		}
		if n == 0 {
			break
		}
	}
	if n, err := sysWrite(a, msg); n != -1 || !errors.Is(err, unix.EPIPE) {
		t.Fatalf("sysWrite to a closed peer = %d, %v; want -1, EPIPE", n, err)
	}
	if n, err := sysRead(-1, buf); n != -1 || !errors.Is(err, unix.EBADF) {
		t.Fatalf("sysRead(-1) = %d, %v; want -1, EBADF", n, err)
	}
}

// Neither call allocates, on any result a loop meets: the bytes, EAGAIN,
// or an error (an Errno boxed into an error allocates nothing for the
// small numbers errnos are).
func TestSysReadWriteAllocs(t *testing.T) {
	a, b := socketPair(t)
	buf := make([]byte, 64)
	msg := []byte("x")
	for _, c := range []struct {
		name string
		f    func()
	}{
		{"write and read", func() { _, _ = sysWrite(b, msg); _, _ = sysRead(a, buf) }},
		{"EAGAIN", func() { _, _ = sysRead(a, buf) }},
		{"EBADF", func() { _, _ = sysRead(-1, buf) }},
	} {
		if n := testing.AllocsPerRun(100, c.f); n != 0 {
			t.Errorf("%s: %v allocations a call, want 0", c.name, n)
		}
	}
}

// BenchmarkSocketWriteRead is a loopback round of one small write and the
// read that takes it, through netio's raw calls and through unix.Write and
// unix.Read (what netio called before), side by side in one process: the
// difference is the runtime's system-call bookkeeping, twice a round.
func BenchmarkSocketWriteRead(b *testing.B) {
	calls := []struct {
		name        string
		write, read func(int, []byte) (int, error)
	}{
		{"raw", sysWrite, sysRead},
		{"unix", unix.Write, unix.Read},
	}
	for _, c := range calls {
		b.Run(c.name, func(b *testing.B) {
			fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
			if err != nil {
				b.Fatal(err)
			}
			defer func() { _ = unix.Close(fds[0]); _ = unix.Close(fds[1]) }()
			msg, buf := []byte("PING\r\n"), make([]byte, 64)
			b.ReportAllocs()
			for b.Loop() {
				if n, err := c.write(fds[1], msg); n != len(msg) || err != nil {
					b.Fatalf("write = %d, %v", n, err)
				}
				if n, err := c.read(fds[0], buf); n != len(msg) || err != nil {
					b.Fatalf("read = %d, %v", n, err)
				}
			}
		})
	}
}

// A call that asks more than rawMax goes through the runtime's system-call
// path (a stop-the-world need not wait for its copy): it must return what
// the raw one does, bytes, EAGAIN as errAgain, end of stream, an Errno.
// The defaults stay within rawMax, so a loop with them never takes it.
func TestSysReadWriteLong(t *testing.T) {
	if d := (Options{}).withDefaults(); d.ReadSize > rawMax || d.HighWater > rawMax {
		t.Fatalf("default ReadSize %d or HighWater %d above rawMax %d: every read or flush would pay the runtime's bookkeeping", d.ReadSize, d.HighWater, rawMax)
	}
	a, b := socketPair(t)
	if err := unix.SetsockoptInt(a, unix.SOL_SOCKET, unix.SO_RCVBUF, 4<<20); err != nil {
		t.Fatal(err)
	}
	if err := unix.SetsockoptInt(b, unix.SOL_SOCKET, unix.SO_SNDBUF, 4<<20); err != nil {
		t.Fatal(err)
	}
	out := make([]byte, 2*rawMax)
	for i := range out {
		out[i] = byte(i * 7)
	}
	var in, want []byte
	sent := 0
	for i := 0; ; i++ {
		chunk := out[sent%rawMax:][:rawMax+1]
		n, err := sysWrite(b, chunk)
		if err == errAgain {
			if n != -1 {
				t.Fatalf("a long sysWrite on a full socket = %d, errAgain; want -1", n)
			}
			break
		}
		if err != nil || n <= 0 {
			t.Fatalf("a long sysWrite = %d, %v before the socket filled", n, err)
		}
		sent += n
		want = append(want, chunk[:n]...)
		if i > 1<<14 {
			t.Fatalf("the socket never filled after %d bytes", sent)
		}
	}
	_ = unix.Close(b)
	buf := make([]byte, rawMax+1)
	for {
		n, err := sysRead(a, buf)
		if err != nil {
			t.Fatalf("a long sysRead = %d, %v after %d of %d bytes; want the rest, then 0, nil", n, err, len(in), sent)
		}
		if n == 0 {
			break
		}
		in = append(in, buf[:n]...)
	}
	if !bytes.Equal(in, want) {
		t.Fatalf("read %d bytes, not the %d written", len(in), sent)
	}
	if n, err := sysRead(a, buf); n != 0 || err != nil {
		t.Fatalf("a long sysRead at end of stream = %d, %v; want 0, nil", n, err)
	}
	if n, err := sysWrite(a, buf); n != -1 || !errors.Is(err, unix.EPIPE) {
		t.Fatalf("a long sysWrite to a closed peer = %d, %v; want -1, EPIPE", n, err)
	}
	if n := testing.AllocsPerRun(20, func() { _, _ = sysRead(a, buf) }); n != 0 {
		t.Errorf("a long sysRead: %v allocations a call, want 0", n)
	}
}
