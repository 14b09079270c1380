//go:build !amd64 || race

package engine

// setLease stores v into rt.lease: the atomic store where lease_plain.go's
// plain store is not the right one (another architecture, whose loads
// need not see a whole word without it, or the race detector, which sees
// only sync/atomic).
func (rt *root) setLease(v uint64) { rt.lease.Store(v) }

// endRunOnLoop is endRun (lease_plain.go's plain store is amd64's, and
// the race detector sees only sync/atomic).
func (rt *root) endRunOnLoop() { rt.endRun() }

// beginRunOnLoop is Execute's start of a run on the loop (lease_plain.go):
// here the CompareAndSwap that Execute makes off the loop.
func (rt *root) beginRunOnLoop() bool {
	for {
		v := rt.run.Load()
		if v&runActive != 0 {
			return false
		}
		if rt.run.CompareAndSwap(v, (v>>runGenShift+1)<<runGenShift|runActive) {
			return true
		}
	}
}
