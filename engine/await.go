package engine

import (
	"context"
	"errors"
)

// AwaitFunc adds a step that runs fn on its own goroutine when the step is
// reached and succeeds with the Value it returns (spec 1.13, the Go way).
// The context derives from the flow's (SetContext; context.Background
// without one) and is canceled when the step is canceled (flow cancel,
// enclosing timeout). A returned *Error keeps its Code and Info; an error for which
// errors.Is(err, context.DeadlineExceeded) fails with Timeout; any other
// error with InternalError. ErrorInfo is the error's text and LastException
// the error itself.
func AwaitFunc(as *Steps, fn func(ctx context.Context) (Value, error), onerror ...ErrorFunc) *Steps {
	if as == nil {
		return nil
	}
	if fn == nil {
		misuse(as, "AwaitFunc: nil func")
		return as
	}
	return as.Add(func(as *Steps) {
		fctx := as.Context()
		ctx, cancel := context.WithCancel(fctx)
		ext := as.External()
		as.SetCancel(func(*Steps) { cancel() })
		go func() {
			defer cancel()
			v, err := runAwait(ctx, fn)
			if err == nil {
				ext.Success(v)
				return
			}
			if fctx.Err() != nil {
				// The flow's context is done: its watch ends the whole
				// flow (Canceled, or Timeout past error handlers), which
				// fn's error, likely that very cancellation, must not
				// turn into this step's failure first.
				return
			}
			code, info := InternalError, err.Error()
			var fe *Error
			switch {
			case errors.As(err, &fe):
				code, info = fe.Code, fe.Info
			case errors.Is(err, context.DeadlineExceeded):
				code = Timeout
			}
			ext.fail(code, info, err)
		}()
	}, onerror...)
}

// runAwait calls fn, turning a panic into an error so a failing awaited
// function fails its step instead of the process.
func runAwait(ctx context.Context, fn func(ctx context.Context) (Value, error)) (v Value, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = &PanicError{Value: p}
		}
	}()
	return fn(ctx)
}

// AwaitChan adds a step that receives one value from ch and succeeds with
// Obj(v). A closed channel counts as receiving the zero value, as <-ch does.
// A value already waiting is taken at once; otherwise a goroutine waits,
// and stops when the step is canceled.
func AwaitChan[T any](as *Steps, ch <-chan T, onerror ...ErrorFunc) *Steps {
	if as == nil {
		return nil
	}
	return as.Add(func(as *Steps) {
		select {
		case v := <-ch:
			as.Success(Obj(v))
			return
		default:
		}
		ext := as.External()
		done := make(chan struct{})
		as.SetCancel(func(*Steps) { close(done) })
		go func() {
			select {
			case v := <-ch:
				ext.Success(Obj(v))
			case <-done:
			}
		}()
	}, onerror...)
}
