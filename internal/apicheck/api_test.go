package apicheck

import (
	"context"
	"testing"
	"time"
	"unsafe"

	"github.com/asyncsteps/asyncsteps/engine"
	"github.com/asyncsteps/asyncsteps/reactor"
	"github.com/asyncsteps/asyncsteps/syncprim"
)

// Each assignment fails to compile if a signature drifts from CONTRACT.md.
var (
	// reactor
	_ reactor.Options                                              = reactor.Options{CPU: -1, Tick: time.Millisecond, RingSize: 0}
	_ func(reactor.Options) (*reactor.Reactor, error)              = reactor.New
	_ func() *reactor.Reactor                                      = reactor.NewManual
	_ func(*reactor.Reactor) error                                 = (*reactor.Reactor).Run
	_ func(*reactor.Reactor) error                                 = (*reactor.Reactor).Close
	_ func(*reactor.Reactor) bool                                  = (*reactor.Reactor).Iterate
	_ func(*reactor.Reactor)                                       = (*reactor.Reactor).RunUntilIdle
	_ func(*reactor.Reactor, time.Duration)                        = (*reactor.Reactor).Advance
	_ func(*reactor.Reactor, func()) reactor.Handle                = (*reactor.Reactor).Immediate
	_ func(*reactor.Reactor, time.Duration, func()) reactor.Handle = (*reactor.Reactor).Deferred
	_ func(*reactor.Reactor, reactor.Handle)                       = (*reactor.Reactor).Cancel
	_ func(*reactor.Reactor, reactor.Handle) bool                  = (*reactor.Reactor).IsValid
	_ func(*reactor.Reactor) bool                                  = (*reactor.Reactor).IsSameThread
	_ func(*reactor.Reactor) time.Time                             = (*reactor.Reactor).Now

	// engine: common API
	_ func(*reactor.Reactor) *engine.Steps                                                 = engine.New
	_ func(*engine.Steps, engine.ExecFunc, ...engine.ErrorFunc) *engine.Steps              = (*engine.Steps).Add
	_ func(*engine.Steps, ...engine.ErrorFunc) *engine.Steps                               = (*engine.Steps).Parallel
	_ func(*engine.Steps) *engine.State                                                    = (*engine.Steps).State
	_ func(*engine.Steps, string) any                                                      = (*engine.Steps).Get
	_ func(*engine.Steps, string, any)                                                     = (*engine.Steps).Set
	_ func(*engine.Steps, string) bool                                                     = (*engine.Steps).Exists
	_ func(*engine.Steps, string)                                                          = (*engine.Steps).Unset
	_ func(*engine.Steps, *engine.Steps) *engine.Steps                                     = (*engine.Steps).CopyFrom
	_ func(*engine.Steps) *engine.Steps                                                    = (*engine.Steps).Clone
	_ func(*engine.Steps, engine.Sync, engine.ExecFunc, ...engine.ErrorFunc) *engine.Steps = (*engine.Steps).Sync
	_ func(*engine.Steps, ...engine.Value) *engine.Steps                                   = (*engine.Steps).SuccessStep
	_ func(*engine.Steps) *engine.Steps                                                    = (*engine.Steps).NewInstance
	_ func(*engine.Steps) bool                                                             = (*engine.Steps).Valid
	_ func(*engine.Steps) uintptr                                                          = (*engine.Steps).RootID
	_ func(*engine.Steps)                                                                  = (*engine.Steps).Release

	// engine: execution API
	_ func(*engine.Steps, ...engine.Value)   = (*engine.Steps).Success
	_ func(*engine.Steps, string, ...string) = (*engine.Steps).Error
	_ func(*engine.Steps, time.Duration)     = (*engine.Steps).SetTimeout
	_ func(*engine.Steps, engine.CancelFunc) = (*engine.Steps).SetCancel
	_ func(*engine.Steps)                    = (*engine.Steps).WaitExternal
	_ func(*engine.Steps) engine.External    = (*engine.Steps).External
	_ func(*engine.Steps) *engine.Args       = (*engine.Steps).Args
	_ func(*engine.Steps, int) engine.Value  = (*engine.Steps).Arg
	_ func(*engine.Steps) *struct{ X int }   = engine.Stack[struct{ X int }]

	// engine: loops
	_ func(*engine.Steps, engine.ExecFunc, ...string)                                  = (*engine.Steps).Loop
	_ func(*engine.Steps, int, func(*engine.Steps, int), ...string)                    = (*engine.Steps).Repeat
	_ func(*engine.Steps, []string, func(*engine.Steps, int, string), ...string)       = engine.ForEach[string]
	_ func(*engine.Steps, map[string]int, func(*engine.Steps, string, int), ...string) = engine.ForEachMap[string, int]
	_ func(*engine.Steps, ...string)                                                   = (*engine.Steps).Break
	_ func(*engine.Steps, ...string)                                                   = (*engine.Steps).Continue

	// engine: control API
	_ func(*engine.Steps)                         = (*engine.Steps).Execute
	_ func(*engine.Steps)                         = (*engine.Steps).Cancel
	_ func(*engine.Steps) *engine.Promise         = (*engine.Steps).Promise
	_ func(*engine.Promise) <-chan struct{}       = (*engine.Promise).Done
	_ func(*engine.Promise) (*engine.Args, error) = (*engine.Promise).Wait

	// engine: await
	_ func(*engine.Steps, func(context.Context) (engine.Value, error), ...engine.ErrorFunc) *engine.Steps = engine.AwaitFunc
	_ func(*engine.Steps, <-chan int, ...engine.ErrorFunc) *engine.Steps                                  = engine.AwaitChan[int]

	// engine: External
	_ func(engine.External, ...engine.Value) bool   = engine.External.Success
	_ func(engine.External, string, ...string) bool = engine.External.Error

	// engine: values
	_ func(int64) engine.Value             = engine.Int
	_ func(uint64) engine.Value            = engine.Uint
	_ func(float64) engine.Value           = engine.Float
	_ func(bool) engine.Value              = engine.Bool
	_ func(string) engine.Value            = engine.Str
	_ func([]byte) engine.Value            = engine.Bytes
	_ func(any) engine.Value               = engine.Obj
	_ func(engine.Value) engine.Kind       = engine.Value.Kind
	_ func(engine.Value) int64             = engine.Value.Int
	_ func(engine.Value) uint64            = engine.Value.Uint
	_ func(engine.Value) float64           = engine.Value.Float
	_ func(engine.Value) bool              = engine.Value.Bool
	_ func(engine.Value) string            = engine.Value.Str
	_ func(engine.Value) []byte            = engine.Value.Bytes
	_ func(engine.Value) any               = engine.Value.Obj
	_ func(*engine.Args) int               = (*engine.Args).Len
	_ func(*engine.Args, int) engine.Value = (*engine.Args).At
	_                                      = [...]engine.Kind{engine.KindNone, engine.KindInt, engine.KindUint, engine.KindFloat, engine.KindBool, engine.KindStr, engine.KindBytes, engine.KindObj}

	// engine: state and errors
	_       = engine.State{ErrorInfo: "", LastException: nil, AsyncStack: []uintptr(nil), User: nil}
	_ error = &engine.Error{Code: "", Info: ""}
	_ error = &engine.PanicError{Value: nil}
	_       = [...]string{engine.InternalError, engine.Timeout, engine.DefenseRejected, engine.NotImplemented, engine.Canceled,
		engine.ConnectError, engine.CommError, engine.UnknownInterface, engine.NotSupportedVersion, engine.Unauthorized,
		engine.InvokerError, engine.InvalidRequest, engine.PleaseReauth, engine.SecurityError}

	// syncprim
	_                                                                    = syncprim.Unlimited
	_ func(int, int) *syncprim.Mutex                                     = syncprim.NewMutex
	_ func(*reactor.Reactor, int, time.Duration, int) *syncprim.Throttle = syncprim.NewThrottle
	_ func(*reactor.Reactor, syncprim.LimiterOptions) *syncprim.Limiter  = syncprim.NewLimiter
	_                                                                    = syncprim.LimiterOptions{Concurrent: 1, MaxQueue: 0, Rate: 1, Period: time.Second, Burst: 0}
	_ engine.Sync                                                        = (*syncprim.Mutex)(nil)
	_ engine.Sync                                                        = (*syncprim.Throttle)(nil)
	_ engine.Sync                                                        = (*syncprim.Limiter)(nil)
)

// Handle is comparable and small; Value is at most 32 bytes.
func TestHandleAndValueShape(t *testing.T) {
	var h reactor.Handle
	if h != (reactor.Handle{}) {
		t.Fatal("zero Handle not comparable to itself")
	}
	if s := unsafe.Sizeof(engine.Value{}); s > 32 {
		t.Fatalf("Value is %d bytes, CONTRACT.md says at most 32", s)
	}
}
