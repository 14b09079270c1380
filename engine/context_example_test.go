//go:build linux

package engine_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"time"

	"github.com/asyncsteps/asyncsteps/engine"
	"github.com/asyncsteps/asyncsteps/reactor"
)

// An HTTP handler that runs one flow per request, tied to the request's
// context: when the client goes away, the flow is canceled at once - its
// cancel handler stops the slow backend call - instead of running on for
// nobody.
func ExampleSteps_SetContext() {
	r, err := reactor.New(reactor.Options{CPU: -1})
	if err != nil {
		panic(err)
	}
	go r.Run()
	defer r.Close()

	events := make(chan string, 2)
	handler := func(w http.ResponseWriter, req *http.Request) {
		ms, _ := strconv.Atoi(req.URL.Query().Get("ms"))
		root := engine.New(r)
		defer root.Release()
		root.SetName("GET /slow") // its CPU profile label and metrics name
		root.SetContext(req.Context())
		root.Add(func(as *engine.Steps) {
			// A slow backend call, here a timer on the reactor.
			ext := as.External()
			h := as.Reactor().Deferred(time.Duration(ms)*time.Millisecond, func() { ext.Success(engine.Str("done")) })
			as.SetCancel(func(as *engine.Steps) {
				as.Reactor().Cancel(h)
				events <- "cancel handler: backend call stopped"
			})
		})
		args, err := root.Promise().Wait()
		if err != nil {
			events <- "flow ended: " + err.Error()
			return
		}
		fmt.Fprintln(w, args.At(0).Str())
	}
	srv := httptest.NewServer(http.HandlerFunc(handler))
	defer srv.Close()

	// A patient client gets its answer.
	resp, err := http.Get(srv.URL + "?ms=10")
	if err != nil {
		panic(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Print("client 1: ", string(body))

	// An impatient one gives up after 50ms of a 10s call.
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"?ms=10000", nil)
	_, err = http.DefaultClient.Do(req)
	fmt.Println("client 2 gave up:", errors.Is(err, context.DeadlineExceeded))
	fmt.Println(<-events)
	fmt.Println(<-events)
	// Output:
	// client 1: done
	// client 2 gave up: true
	// cancel handler: backend call stopped
	// flow ended: Canceled: context canceled
}
