package reactor

// TrimTimers gives back the timer wheel's memory that a burst of timers
// left unused: the free nodes are relinked lowest first, and the pool's
// trailing chunks with no pending timer are dropped (timerwheel's Shrink).
// It reports the bytes dropped. Loop only; one pass over the node pool, so
// call it when the loop goes idle after a burst, not per timer: the
// engine calls it from its idle trim, which runs only while its own pools
// are above their low-water mark. Timers pending are not touched, and a
// Timer or Handle to a dropped node stays stale.
func (r *Reactor) TrimTimers() int {
	if !r.IsSameThread() {
		panic("reactor: TrimTimers off the loop")
	}
	return r.wheel.Shrink()
}
