package reactor

import "unsafe"

// Interest is the readiness a watched descriptor is polled for.
type Interest uint8

// Interests, combined with |.
const (
	InterestRead Interest = 1 << iota
	InterestWrite
)

// Event is the readiness the poller reported for a descriptor.
type Event uint8

// Events, combined with |. EventError (EPOLLERR or EPOLLHUP) is reported
// whatever the interest; a read then tells end of stream from an error.
const (
	EventRead Event = 1 << iota
	EventWrite
	EventError
)

// IOFunc is a watched descriptor's callback. arg is what Watch was given:
// one callback serves every descriptor of a layer without a closure each.
type IOFunc func(arg unsafe.Pointer, fd int, ev Event)
