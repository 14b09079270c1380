//go:build linux

package netio

import (
	"errors"
	"net"
	"os"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// listenTCP opens a non-blocking listening socket on addr ("host:port").
func listenTCP(addr string, o Options) (int, *net.TCPAddr, error) {
	ta, err := net.ResolveTCPAddr("tcp", addr)
	if err != nil {
		return -1, nil, err
	}
	family, sa := unix.AF_INET, unix.Sockaddr(nil)
	if ip4 := ta.IP.To4(); ip4 != nil || ta.IP == nil {
		s4 := &unix.SockaddrInet4{Port: ta.Port}
		copy(s4.Addr[:], ip4)
		sa = s4
	} else {
		family = unix.AF_INET6
		s6 := &unix.SockaddrInet6{Port: ta.Port}
		copy(s6.Addr[:], ta.IP.To16())
		sa = s6
	}
	fd, err := unix.Socket(family, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, unix.IPPROTO_TCP)
	if err != nil {
		return -1, nil, os.NewSyscallError("socket", err)
	}
	fail := func(what string, err error) (int, *net.TCPAddr, error) {
		_ = unix.Close(fd)
		return -1, nil, os.NewSyscallError(what, err)
	}
	if err = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEADDR, 1); err != nil {
		return fail("setsockopt SO_REUSEADDR", err)
	}
	if o.ReusePort {
		if err = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEPORT, 1); err != nil {
			return fail("setsockopt SO_REUSEPORT", err)
		}
	}
	if err = unix.Bind(fd, sa); err != nil {
		return fail("bind", err)
	}
	if err = unix.Listen(fd, o.Backlog); err != nil {
		return fail("listen", err)
	}
	bound, err := unix.Getsockname(fd)
	if err != nil {
		return fail("getsockname", err)
	}
	return fd, tcpAddr(bound), nil
}

func tcpAddr(sa unix.Sockaddr) *net.TCPAddr {
	switch a := sa.(type) {
	case *unix.SockaddrInet4:
		return &net.TCPAddr{IP: net.IP(append([]byte(nil), a.Addr[:]...)), Port: a.Port}
	case *unix.SockaddrInet6:
		return &net.TCPAddr{IP: net.IP(append([]byte(nil), a.Addr[:]...)), Port: a.Port}
	}
	return nil
}

// accept returns a non-blocking connected socket, or an error: EAGAIN when
// the backlog is empty.
func accept(lfd int, nagle bool) (int, net.Addr, error) {
	for {
		fd, sa, err := unix.Accept4(lfd, unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC)
		switch {
		case err == unix.EINTR || err == unix.ECONNABORTED:
			continue // the peer gave up before we took it: take the next
		case err != nil:
			return -1, nil, err
		}
		if !nagle {
			_ = unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1)
		}
		return fd, tcpAddr(sa), nil
	}
}

// isFDLimit reports an accept error that clears only when descriptors are
// freed: retrying at once would spin on the level-triggered listener.
func isFDLimit(err error) bool {
	return errors.Is(err, unix.EMFILE) || errors.Is(err, unix.ENFILE) ||
		errors.Is(err, unix.ENOBUFS) || errors.Is(err, unix.ENOMEM)
}

// sysRead and sysWrite are read(2) and write(2) on a connection's socket
// as raw system calls: without unix.Read's runtime bookkeeping
// (entersyscall, which lets the scheduler hand the P to another thread,
// and exitsyscall, which takes it back), about 250 instructions a call
// and more when sysmon retakes the P, two calls a read: under callgrind
// 3,872 -> 2,601 instructions a read at pipeline 1 x 256 connections
// (profiles/notes/2026-11-28-srv4-round11.md).
//
// Why that is safe: every descriptor netio reads or writes is a socket it
// made non-blocking (accept4 with SOCK_NONBLOCK), so neither call ever
// sleeps in the kernel: it copies what the socket holds or has room for,
// at most len(b), and returns, or returns EAGAIN. What the bookkeeping is
// for, a goroutine blocked in the kernel while its P serves others, cannot
// happen; the loop's thread holds its P for the copy, as it does for any
// other work. The one system call of the loop that sleeps (epoll_wait)
// still goes through the runtime (reactor).
//
// But a raw call is not a safe point: a stop-the-world (the GC's) waits
// for the copy to end, while a call through the runtime lets it go on at
// once. A non-blocking write copies up to the socket's free send buffer,
// which autotuning grows to tcp_wmem's maximum (4 MiB by default): one raw
// write of a large reply measured 3.9 MB copied a call, and GC pauses of
// 1.6-2.1 ms against 0.16-0.33 ms through unix.Write (loopback, a loaded
// 2-core box; profiles/notes/2026-11-28-revsrv4-round11.md). So only a
// call that asks at most rawMax bytes is raw; a larger one (a large
// Options.ReadSize, a large queued output) goes through the runtime,
// whose bookkeeping is small beside the copy.
//
// The buffer's address is converted to uintptr in the call expression
// itself, as unsafe.Pointer's rule for system calls asks: syscall's
// RawSyscall6 and Syscall are marked go:uintptrkeepalive, so the compiler
// keeps b alive (and unmoved) until the call returns. Called directly, not
// through unix.RawSyscall, whose assembly jumps to syscall's through an
// ABI wrapper and RawSyscall: about 28 instructions a call fewer.
//
// The kernel's stores into b (read) and loads from it (write) are
// invisible to the race detector: under -race both calls annotate them as
// unix.Read and unix.Write do (race_linux.go), so a goroutine that touches
// a buffer while the loop reads into it or writes from it is reported.
func sysRead(fd int, b []byte) (int, error) {
	if uint(len(b))-1 >= rawMax {
		return sysLong(unix.SYS_READ, fd, b) // 0 bytes, or more than a raw call may copy
	}
	for {
		r, _, e := syscall.RawSyscall6(unix.SYS_READ, uintptr(fd), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), 0, 0, 0)
		switch e {
		case 0:
			if raceenabled {
				raceRead(b, int(r))
			}
			return int(r), nil
		case unix.EINTR:
			continue
		case unix.EAGAIN:
			return -1, errAgain // the one error of a busy loop: no conversion
		}
		return -1, e
	}
}

func sysWrite(fd int, b []byte) (int, error) {
	if uint(len(b))-1 >= rawMax {
		return sysLong(unix.SYS_WRITE, fd, b)
	}
	if raceenabled {
		raceReleaseMerge()
	}
	for {
		r, _, e := syscall.RawSyscall6(unix.SYS_WRITE, uintptr(fd), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), 0, 0, 0)
		switch e {
		case 0:
			if raceenabled {
				raceWrote(b, int(r))
			}
			return int(r), nil
		case unix.EINTR:
			continue
		case unix.EAGAIN:
			return -1, errAgain
		}
		return -1, e
	}
}

// rawMax is the most bytes a raw sysRead or sysWrite asks of the kernel,
// and so the longest copy it holds its P (and a stop-the-world) for: the
// size of the runtime's own chunks of non-preemptible memory clearing.
// The default Options.ReadSize (64 KiB) and HighWater (256 KiB) are within
// it.
const rawMax = 256 << 10

// sysLong is sysRead (trap SYS_READ) or sysWrite (SYS_WRITE) of 0 bytes
// (nothing to ask the kernel) or of more than rawMax, through the
// runtime's system-call path. One function for both: neither is hot.
func sysLong(trap uintptr, fd int, b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	if raceenabled && trap == unix.SYS_WRITE {
		raceReleaseMerge()
	}
	for {
		r, _, e := syscall.Syscall(trap, uintptr(fd), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
		switch e {
		case 0:
			if raceenabled {
				if trap == unix.SYS_READ {
					raceRead(b, int(r))
				} else {
					raceWrote(b, int(r))
				}
			}
			return int(r), nil
		case unix.EINTR:
			continue
		case unix.EAGAIN:
			return -1, errAgain
		}
		return -1, e
	}
}

// raceRead tells the race detector that the kernel stored n bytes into b,
// and that they were written before (ioSync); raceWrote that it loaded n
// bytes of b. As unix.Read and unix.Write do.
func raceRead(b []byte, n int) {
	if n > 0 {
		raceWriteRange(unsafe.Pointer(&b[0]), n)
	}
	raceAcquire()
}

func raceWrote(b []byte, n int) {
	if n > 0 {
		raceReadRange(unsafe.Pointer(&b[0]), n)
	}
}

// sysSockError returns the socket's pending error (SO_ERROR, which reading
// clears), or nil.
func sysSockError(fd int) error {
	v, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_ERROR)
	switch {
	case err != nil:
		return os.NewSyscallError("getsockopt SO_ERROR", err)
	case v != 0:
		return unix.Errno(v) // as read(2) would return it
	}
	return nil
}

// sysUnsent returns the bytes in the socket's send queue that the peer has
// not acknowledged (SIOCOUTQ); on error, 1: assume some.
func sysUnsent(fd int) int {
	n, err := unix.IoctlGetInt(fd, unix.SIOCOUTQ)
	if err != nil {
		return 1
	}
	return n
}

// sysResetOnClose makes the socket's close abortive: SO_LINGER 0 drops its
// send queue and sends RST instead of FIN.
func sysResetOnClose(fd int) error {
	return unix.SetsockoptLinger(fd, unix.SOL_SOCKET, unix.SO_LINGER, &unix.Linger{Onoff: 1, Linger: 0})
}

func sysShutdownWrite(fd int) error { return unix.Shutdown(fd, unix.SHUT_WR) }
func sysClose(fd int) error         { return unix.Close(fd) }

var errAgain error = unix.EAGAIN
