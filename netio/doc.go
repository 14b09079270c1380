// Package netio serves TCP connections on reactors: listen, accept, read,
// write with backpressure, half-close and close, all on the connection's
// reactor loop, through the reactor's poller.
//
// # Contract
//
//   - A Server accepts on one reactor of its Group (the first) and spreads
//     connections over all of them round-robin. A connection lives on one
//     reactor for its whole life: every Handler callback runs on that
//     reactor's loop, and so must every Conn method (each checks and fails
//     with ErrWrongThread otherwise). Engine flows started from a callback
//     run on the same loop and may answer later: Write from any of their
//     steps.
//   - OnData receives the bytes read and not yet consumed; it returns how
//     many it consumed. The rest is kept (pooled buffer) and offered again,
//     with more bytes, on the next read. The slice is valid only during the
//     call: copy what must outlive it. More than Options.MaxInput bytes kept
//     unconsumed closes the connection with ErrInputTooLarge.
//   - Write queues bytes; queued bytes go out in one write(2) per
//     connection per loop iteration (or at once with Flush), so the
//     replies of many requests read together leave together. Send is
//     Write and Flush in one, for a complete batch: with nothing queued
//     it writes straight from the caller's bytes and copies only what the
//     socket does not take. When the peer does not read, output queues
//     up to Options.HighWater bytes, then the connection stops reading (the
//     kernel's buffers fill and the peer's writes block) until the output
//     drains below Options.LowWater: a slow reader cannot grow memory
//     without bound, as long as the handler bounds the work it has in
//     flight per connection (PauseRead is for that).
//   - End of input (the peer's FIN, or Server.Shutdown) is reported once by
//     OnEOF, after every byte before it was consumed; the connection stays
//     writable until the handler closes it. Close flushes queued output
//     (waiting at most Options.Linger), then closes; Abort closes at once.
//     OnClose is called exactly once per connection that was opened.
//   - A panic in OnOpen, OnData or OnEOF aborts that connection only, with
//     a *PanicError; the loop and the other connections go on.
//   - A connection that is not being read (PauseRead, output over
//     HighWater, after end of input) is still watched for its peer's reset:
//     a reset ends it at once (OnClose gets the error), so a handler with
//     work in flight for it can give that work's resources back instead of
//     finishing it for nobody. A half-close (FIN) is not an end: the peer
//     may still read, and the FIN is read after the input before it.
//   - Limits (Options): IdleTimeout, ReadTimeout, WriteTimeout (no byte of
//     output taken by the peer for that long: written by us, or
//     acknowledged from the kernel's queue; a slow but steady reader is
//     kept), MaxInput and MaxConns. A connection closed for a time limit,
//     or by Close's Linger, with output its peer has not taken (queued, or
//     in the kernel's send queue) closes with a reset (SO_LINGER 0): a
//     plain close would leave the kernel holding that output in a
//     FIN-WAIT-1 socket, outside MaxConns, for as long as the peer keeps
//     its window shut. With nothing unread it closes with a FIN. Server.Stats
//     counts the connections refused and ended by each limit.
//   - Closing a reactor closes its connections (OnClose runs) and, on the
//     accepting reactor, the listener.
package netio
