package engine

import "fmt"

// The FutoIn standard error codes.
const (
	ConnectError        = "ConnectError"
	CommError           = "CommError"
	UnknownInterface    = "UnknownInterface"
	NotSupportedVersion = "NotSupportedVersion"
	NotImplemented      = "NotImplemented"
	Unauthorized        = "Unauthorized"
	InternalError       = "InternalError"
	InvokerError        = "InvokerError"
	InvalidRequest      = "InvalidRequest"
	DefenseRejected     = "DefenseRejected"
	PleaseReauth        = "PleaseReauth"
	SecurityError       = "SecurityError"
	Timeout             = "Timeout"
	// Canceled is what Promise.Wait reports for a canceled flow.
	Canceled = "Canceled"
)

// Error is a FutoIn error: a code and optional descriptive info. It is what
// Steps.Error raises, what State.LastException holds after it, and what
// Promise.Wait returns for a failed flow.
type Error struct{ Code, Info string }

// Error returns "Code" or "Code: Info".
func (e *Error) Error() string {
	if e.Info == "" {
		return e.Code
	}
	return e.Code + ": " + e.Info
}

// Is reports whether target is an *Error with the same Code, so that
// errors.Is(err, &Error{Code: Timeout}) works regardless of Info.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

// PanicError is State.LastException after a panic in a user callback was
// recovered; the flow fails with InternalError.
type PanicError struct{ Value any }

// Error describes the panic.
func (p *PanicError) Error() string { return fmt.Sprintf("panic: %v", p.Value) }

// Unwrap returns the panic value if it is an error.
func (p *PanicError) Unwrap() error {
	if err, ok := p.Value.(error); ok {
		return err
	}
	return nil
}
