//go:build !unix

package arena

// mapSlab falls back to a pointer-free heap slice where mmap is not
// available. The GC does not scan it (it is noscan) and never moves it, so
// the byte slabs behave the same; only the GC-free accounting is lost.
func mapSlab(n int) ([]byte, error) { return make([]byte, n), nil }

// unmapSlab leaves the slice to the garbage collector.
func unmapSlab([]byte) error { return nil }
