package reactor

import "unsafe"

// Interest is the readiness a watched descriptor is polled for.
type Interest uint8

// Interests, combined with |.
//
// InterestHangup matters only without InterestRead and InterestWrite (a
// descriptor asked for either is told of hang-ups and errors anyway): it
// keeps a descriptor whose reading is paused in the poller for its hang-up
// and errors alone, so a peer's reset (EventError) or shutdown
// (EventHangup) is still reported while nothing reads it. These are
// reported once each as they happen (edge-triggered), not again while they
// last: a callback that has nothing to do about a peer's shutdown yet (its
// input is still to be read) leaves it be without the loop spinning on it.
const (
	InterestRead Interest = 1 << iota
	InterestWrite
	InterestHangup
)

// Event is the readiness the poller reported for a descriptor.
type Event uint8

// Events, combined with |. EventError (EPOLLERR or EPOLLHUP) is reported
// whatever the interest, while the descriptor is polled at all; a read (or
// SO_ERROR) then tells end of stream from an error. EventHangup
// (EPOLLRDHUP: the peer shut down its sending side) comes only under
// InterestHangup alone; with InterestRead the end of stream is readable
// and comes as EventRead.
const (
	EventRead Event = 1 << iota
	EventWrite
	EventError
	EventHangup
)

// ioFunc is a watched descriptor's callback. arg is what Watch was given:
// one callback serves every descriptor of a layer without a closure each.
type ioFunc func(arg unsafe.Pointer, fd int, ev Event)
