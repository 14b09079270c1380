//go:build !amd64 && !arm64

package goid

import "runtime"

// Current returns the identity of the calling goroutine.
func Current() uintptr {
	var buf [32]byte
	n := runtime.Stack(buf[:], false)
	// "goroutine 123 [running]:"
	var id uintptr
	for _, c := range buf[len("goroutine "):n] {
		if c < '0' || c > '9' {
			break
		}
		id = id*10 + uintptr(c-'0')
	}
	return id
}
