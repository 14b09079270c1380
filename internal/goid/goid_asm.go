//go:build amd64 || arm64

package goid

// Current returns the identity of the calling goroutine.
//
//go:noescape
func Current() uintptr
