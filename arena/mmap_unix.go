//go:build unix

package arena

import "golang.org/x/sys/unix"

// mapSlab maps n bytes of anonymous, private, zeroed memory outside the Go
// heap, so the garbage collector neither scans nor accounts for it.
func mapSlab(n int) ([]byte, error) {
	return unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANON)
}

// unmapSlab returns a slab from mapSlab to the OS.
func unmapSlab(b []byte) error { return unix.Munmap(b) }
