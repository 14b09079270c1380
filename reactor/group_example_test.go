package reactor_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"

	"github.com/asyncsteps/asyncsteps/engine"
	"github.com/asyncsteps/asyncsteps/reactor"
)

// A server's reactors: a Group started once, flows started on it from
// ordinary goroutines (an HTTP handler waiting for its flow's result, and
// fire-and-forget flows from many goroutines), closed at the end. Nothing
// runs before Start: a flow executed earlier waits for it.
func ExampleNewGroup() {
	g, err := reactor.NewGroup(2, reactor.Options{}) // 0: one reactor per CPU
	if err != nil {
		panic(err)
	}
	g.Start()
	defer g.Close() // flows still waiting end with Canceled

	// An HTTP handler: one flow per request, on the next reactor, tied
	// to the request's context (a client that goes away cancels it).
	hello := func(w http.ResponseWriter, req *http.Request) {
		root := engine.New(g.Next())
		root.SetContext(req.Context())
		root.Add(func(as *engine.Steps) {
			as.Success(engine.Str("hello, " + req.URL.Query().Get("name")))
		})
		p := root.Promise()   // Execute, and a way to wait
		args, err := p.Wait() // from the handler's goroutine: never on a loop
		root.Release()        // the Promise and args stay valid
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		io.WriteString(w, args.At(0).Str())
	}
	rec := httptest.NewRecorder()
	hello(rec, httptest.NewRequest("GET", "/?name=gopher", nil))
	fmt.Println(rec.Code, rec.Body.String())

	// Fire and forget from many goroutines: New, Add, Execute,
	// ReleaseAtEnd; the root goes back to its pool when the flow ends.
	var ran atomic.Int64
	var wg sync.WaitGroup
	for range 100 {
		wg.Add(1)
		go func() {
			root := engine.New(g.Next())
			root.Add(func(as *engine.Steps) {
				ran.Add(1)
				wg.Done()
			})
			root.Execute()
			root.ReleaseAtEnd()
		}()
	}
	wg.Wait()
	fmt.Println("flows run:", ran.Load())
	// Output:
	// 200 hello, gopher
	// flows run: 100
}
