package netio

import (
	"errors"
	"fmt"
)

// Handler receives a connection's events, on the connection's reactor.
type Handler interface {
	// OnOpen is called once, first.
	OnOpen(c *Conn)
	// OnData is given the unconsumed input and returns how many bytes of
	// it were consumed (0 to len(data)).
	OnData(c *Conn, data []byte) int
	// OnEOF is called once when no more input will come: the peer shut
	// down its side, or the server is shutting down. The handler closes
	// the connection once it has written what it still owes.
	OnEOF(c *Conn)
	// OnClose is called once, last; err is nil after Close, else why the
	// connection ended.
	OnClose(c *Conn, err error)
}

// Errors a connection can end with.
var (
	ErrClosed        = errors.New("netio: connection closed")
	ErrWrongThread   = errors.New("netio: Conn used off its reactor's loop")
	ErrInputTooLarge = errors.New("netio: unconsumed input over MaxInput")
	ErrLinger        = errors.New("netio: Close: output not drained within Linger")
	ErrShutdown      = errors.New("netio: server shut down")
	ErrBadConsume    = errors.New("netio: OnData returned a count out of range")
	ErrIdleTimeout   = errors.New("netio: idle over Options.IdleTimeout")
	ErrReadTimeout   = errors.New("netio: incomplete input over Options.ReadTimeout")
	ErrWriteTimeout  = errors.New("netio: peer took no output for Options.WriteTimeout")
)

// PanicError is the error a connection ends with when a handler panicked.
type PanicError struct{ Value any }

func (e *PanicError) Error() string { return fmt.Sprintf("netio: handler panicked: %v", e.Value) }

// Unwrap returns the panic value if it is an error.
func (e *PanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}
