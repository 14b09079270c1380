package engine_test

import (
	"testing"

	"github.com/asyncsteps/asyncsteps/engine"
	"github.com/asyncsteps/asyncsteps/reactor"
)

// Execute's doc: on a closed reactor (a Group closed, here) a flow ends at
// once with InternalError "reactor closed", where one that was waiting when
// it closed ends Canceled; neither Promise hangs.
func TestExecuteOnClosedGroup(t *testing.T) {
	g, err := reactor.NewGroup(1, reactor.Options{})
	if err != nil {
		t.Fatal(err)
	}
	g.Start()
	waiting := engine.New(g.Next())
	started := make(chan struct{})
	waiting.Add(func(as *engine.Steps) { as.WaitExternal(); close(started) })
	pw := waiting.Promise()
	<-started
	late := engine.New(g.Next())
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := pw.Wait(); codeOf(err) != engine.Canceled {
		t.Errorf("a flow waiting at Close: %v, want Canceled", err)
	}
	late.Add(func(as *engine.Steps) { t.Error("a step ran on a closed reactor") })
	_, err = late.Promise().Wait()
	if codeOf(err) != engine.InternalError || late.State().ErrorInfo != "reactor closed" {
		t.Errorf("a flow executed after Close: %v (%q), want InternalError: reactor closed", err, late.State().ErrorInfo)
	}
}
