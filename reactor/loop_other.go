//go:build !linux

package reactor

import (
	"errors"
	"unsafe"
)

// osLoop is empty off Linux: only the manual reactor exists there.
type osLoop struct{}

func (l *osLoop) closeFDs() {}

// New is implemented on Linux only (eventfd, timerfd, epoll through gnet).
func New(opts Options) (*Reactor, error) {
	return nil, errors.New("reactor: the real loop needs Linux; use NewManual")
}

// Run returns ErrManual on a manual reactor; real reactors need Linux.
func (r *Reactor) Run() error { return ErrManual }

// loopTick is currentTick: only the Linux loop has a wake-up clock read.
func (r *Reactor) loopTick() uint64 { return r.currentTick() }

func (r *Reactor) kick()     {}
func (r *Reactor) shutdown() {}

var errNoIO = errors.New("reactor: I/O needs the Linux loop")

// xWatch needs the Linux loop.
func (r *Reactor) xWatch(fd int, in Interest, cb ioFunc, arg unsafe.Pointer) error { return errNoIO }

// SetInterest needs the Linux loop.
func (r *Reactor) SetInterest(fd int, in Interest) error { return errNoIO }

// Unwatch needs the Linux loop.
func (r *Reactor) Unwatch(fd int) error { return nil }

func checkCPU(cpu int) error { return nil }
