// Package goid identifies the running goroutine cheaply.
//
// The reactor must answer "am I on the loop?" on every engine call
// (IsSameThread, misuse checks), so the answer has to cost about a nanosecond:
// a gettid syscall or parsing runtime.Stack is far too slow for that path.
//
// Current returns an opaque word that is equal for two calls on the same
// goroutine and different for two goroutines alive at the same time. On
// amd64 and arm64 it is the address of the runtime's g structure, read from
// the g register or thread-local storage; elsewhere it is the goroutine id
// parsed from runtime.Stack (slow, correct). A value may be reused by a new
// goroutine after the old one exits, so callers compare it only against the
// identity of a goroutine they know is still running (the loop's).
package goid
