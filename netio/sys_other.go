//go:build !linux

package netio

import (
	"errors"
	"net"
)

var errNoLinux = errors.New("netio: needs Linux (the reactor's poller)")

func listenTCP(string, Options) (int, *net.TCPAddr, error) { return -1, nil, errNoLinux }
func accept(int, bool) (int, net.Addr, error)              { return -1, nil, errNoLinux }
func isFDLimit(error) bool                                 { return false }
func sysRead(int, []byte) (int, error)                     { return 0, errNoLinux }
func sysWrite(int, []byte) (int, error)                    { return 0, errNoLinux }
func sysSockError(int) error                               { return errNoLinux }
func sysUnsent(int) int                                    { return 0 }
func sysResetOnClose(int) error                            { return errNoLinux }
func sysShutdownWrite(int) error                           { return errNoLinux }
func sysClose(int) error                                   { return errNoLinux }

var errAgain = errors.New("netio: would block")
