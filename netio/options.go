package netio

import "time"

// Options tunes a Server. Zero fields take the defaults in brackets.
type Options struct {
	Backlog   int           // listen(2) backlog [1024]
	ReadSize  int           // bytes asked of each read(2), per reactor scratch buffer [64 KiB]
	MaxInput  int           // unconsumed input a connection may keep [1 MiB]
	HighWater int           // queued output at which a connection stops reading [256 KiB]
	LowWater  int           // queued output below which it reads again [HighWater/4]
	Linger    time.Duration // how long Close waits for queued output to drain [5s]
	Nagle     bool          // leave Nagle's algorithm on (TCP_NODELAY is set by default)
	ReusePort bool          // SO_REUSEPORT on the listener, for several servers on one port
}

func (o Options) withDefaults() Options {
	if o.Backlog <= 0 {
		o.Backlog = 1024
	}
	if o.ReadSize <= 0 {
		o.ReadSize = 64 << 10
	}
	if o.MaxInput <= 0 {
		o.MaxInput = 1 << 20
	}
	if o.HighWater <= 0 {
		o.HighWater = 256 << 10
	}
	if o.LowWater <= 0 || o.LowWater > o.HighWater {
		o.LowWater = o.HighWater / 4
	}
	if o.Linger <= 0 {
		o.Linger = 5 * time.Second
	}
	return o
}
