package engine_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/asyncsteps/asyncsteps/engine"
	"github.com/asyncsteps/asyncsteps/reactor"
)

func TestValueString(t *testing.T) {
	type pt struct{ X, Y int }
	cases := []struct {
		v    engine.Value
		want string
	}{
		{engine.Value{}, "None()"},
		{engine.Int(-42), "Int(-42)"},
		{engine.Uint(math.MaxUint64), "Uint(18446744073709551615)"},
		{engine.Float(1.5), "Float(1.5)"},
		{engine.Float(math.Inf(-1)), "Float(-Inf)"},
		{engine.Bool(true), "Bool(true)"},
		{engine.Str("guest \"1\""), `Str("guest \"1\"")`},
		{engine.Str(""), `Str("")`},
		{engine.Bytes([]byte{0, 'a'}), `Bytes("\x00a")`},
		{engine.Obj(pt{1, 2}), "Obj({1 2})"},
		{engine.Obj(nil), "Obj(<nil>)"},
		{engine.Obj(""), `Obj("")`},
		{engine.Obj("a b"), `Obj("a b")`},
	}
	for _, c := range cases {
		if got := c.v.String(); got != c.want {
			t.Errorf("%s Value: String() = %s, want %s", c.v.Kind(), got, c.want)
		}
		if got := fmt.Sprint(c.v); got != c.want {
			t.Errorf("%s Value: fmt.Sprint = %s, want %s", c.v.Kind(), got, c.want)
		}
	}
}

// Args print as the Values a flow ended with: what fmt.Println(p.Wait())
// shows a user, a nil *Args (a failed flow's) included.
func TestArgsString(t *testing.T) {
	r := reactor.NewManual()
	cases := []struct {
		name string
		step engine.ExecFunc
		want string
	}{
		{"none", func(as *engine.Steps) {}, "[]"},
		{"two", func(as *engine.Steps) { as.Success(engine.Int(7), engine.Str("x")) }, `[Int(7) Str("x")]`},
		{"gap", func(as *engine.Steps) { as.Success(engine.Value{}, engine.Bool(false)) }, "[None() Bool(false)]"},
		{"failed", func(as *engine.Steps) { as.Error("NotFound") }, "[]"},
	}
	for _, c := range cases {
		root := engine.New(r)
		root.Add(c.step)
		p := root.Promise()
		r.RunUntilIdle()
		a, _ := p.Wait()
		if got := a.String(); got != c.want {
			t.Errorf("%s: Args.String() = %s, want %s", c.name, got, c.want)
		}
		if got := fmt.Sprint(a); got != c.want {
			t.Errorf("%s: fmt.Sprint(*Args) = %s, want %s", c.name, got, c.want)
		}
		root.Release()
	}
}
