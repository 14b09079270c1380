//go:build !amd64 || race

package engine

// setLease stores v into rt.lease: the atomic store where lease_plain.go's
// plain store is not the right one (another architecture, whose loads
// need not see a whole word without it, or the race detector, which sees
// only sync/atomic).
func (rt *root) setLease(v uint64) { rt.lease.Store(v) }

// setRunEnded stores v into rt.run: the atomic store where lease_plain.go's
// plain store is not the right one (as setLease).
func (rt *root) setRunEnded(v uint64) { rt.run.Store(v) }
