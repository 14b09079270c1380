package engine_test

import (
	"math"
	"reflect"
	"testing"

	"github.com/asyncsteps/asyncsteps/engine"
)

// TestValueConversions reads every kind of Value through every accessor,
// as Value's documentation says each conversion goes: one row per Value,
// one column per accessor.
func TestValueConversions(t *testing.T) {
	type want struct {
		kind  engine.Kind
		i     int64
		u     uint64
		f     float64
		b     bool
		s     string
		bytes []byte
		obj   any
	}
	sl := []byte("ab")
	neg := -2.75 // a variable: converting a negative float to uint64 is what the platform does at run time
	for _, tc := range []struct {
		name string
		v    engine.Value
		want want
	}{
		{"zero Value", engine.Value{}, want{kind: engine.KindNone}},
		{"Int -3", engine.Int(-3), want{engine.KindInt, -3, math.MaxUint64 - 2, -3, true, "", nil, int64(-3)}},
		{"Int 0", engine.Int(0), want{engine.KindInt, 0, 0, 0, false, "", nil, int64(0)}},
		{"Uint max", engine.Uint(math.MaxUint64), want{engine.KindUint, -1, math.MaxUint64, math.MaxUint64, true, "", nil, uint64(math.MaxUint64)}},
		{"Float -2.75", engine.Float(-2.75), want{engine.KindFloat, -2, uint64(neg), -2.75, true, "", nil, -2.75}},
		{"Float 0", engine.Float(0), want{engine.KindFloat, 0, 0, 0, false, "", nil, 0.0}},
		{"Bool true", engine.Bool(true), want{engine.KindBool, 1, 1, 0, true, "", nil, true}},
		{"Bool false", engine.Bool(false), want{engine.KindBool, 0, 0, 0, false, "", nil, false}},
		{"Str", engine.Str("ab"), want{engine.KindStr, 0, 0, 0, false, "ab", []byte("ab"), "ab"}},
		{"Str empty", engine.Str(""), want{engine.KindStr, 0, 0, 0, false, "", nil, ""}},
		{"Bytes", engine.Bytes(sl), want{engine.KindBytes, 0, 0, 0, false, "ab", sl, sl}},
		{"Obj string", engine.Obj("ab"), want{engine.KindObj, 0, 0, 0, false, "ab", nil, "ab"}},
		{"Obj []byte", engine.Obj(sl), want{engine.KindObj, 0, 0, 0, false, "", sl, sl}},
		{"Obj int", engine.Obj(5), want{engine.KindObj, 0, 0, 0, false, "", nil, 5}},
		{"Obj nil", engine.Obj(nil), want{engine.KindObj, 0, 0, 0, false, "", nil, nil}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, w := tc.v, tc.want
			if v.Kind() != w.kind {
				t.Errorf("Kind = %v, want %v", v.Kind(), w.kind)
			}
			if v.Int() != w.i {
				t.Errorf("Int = %d, want %d", v.Int(), w.i)
			}
			if v.Uint() != w.u {
				t.Errorf("Uint = %d, want %d", v.Uint(), w.u)
			}
			if v.Float() != w.f {
				t.Errorf("Float = %v, want %v", v.Float(), w.f)
			}
			if v.Bool() != w.b {
				t.Errorf("Bool = %v, want %v", v.Bool(), w.b)
			}
			if v.Str() != w.s {
				t.Errorf("Str = %q, want %q", v.Str(), w.s)
			}
			if got := v.Bytes(); string(got) != string(w.bytes) || (got == nil) != (w.bytes == nil) {
				t.Errorf("Bytes = %q (nil %v), want %q (nil %v)", got, got == nil, w.bytes, w.bytes == nil)
			}
			if got := v.Obj(); !reflect.DeepEqual(got, w.obj) {
				t.Errorf("Obj = %#v, want %#v", got, w.obj)
			}
		})
	}
}

// Every Kind prints its name; KindBinary included (a value of the binary
// interface with no Go kind), and a number that is no Kind prints itself.
func TestKindString(t *testing.T) {
	for _, c := range []struct {
		k    engine.Kind
		want string
	}{
		{engine.KindNone, "None"}, {engine.KindInt, "Int"}, {engine.KindUint, "Uint"},
		{engine.KindFloat, "Float"}, {engine.KindBool, "Bool"}, {engine.KindStr, "Str"},
		{engine.KindBytes, "Bytes"}, {engine.KindObj, "Obj"}, {engine.KindBinary, "Binary"},
		{engine.KindBinary + 1, "Kind(9)"},
	} {
		if got := c.k.String(); got != c.want {
			t.Errorf("Kind(%d).String() = %q, want %q", uint8(c.k), got, c.want)
		}
	}
}
