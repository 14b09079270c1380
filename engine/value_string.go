package engine

import (
	"fmt"
	"strconv"
	"strings"
)

// String formats the Value for people (logs, test failures, fmt.Println of
// a step's result): its kind and payload, as in Int(42), Str("guest"),
// Bytes("\x00\x01"), Float(1.5), Bool(true), Obj(&{...}) (a string inside
// quoted: Obj("")) and None() for the zero Value. A value of the binary
// interface that Go cannot read (KindBinary, or a foreign custom object)
// shows its kind and length only. Not for a hot path: it allocates, and an
// Obj's payload goes through fmt.
func (v Value) String() string {
	k := v.Kind()
	switch k {
	case KindNone:
		return "None()"
	case KindInt:
		return "Int(" + strconv.FormatInt(v.Int(), 10) + ")"
	case KindUint:
		return "Uint(" + strconv.FormatUint(v.Uint(), 10) + ")"
	case KindFloat:
		return "Float(" + strconv.FormatFloat(v.Float(), 'g', -1, 64) + ")"
	case KindBool:
		return "Bool(" + strconv.FormatBool(v.Bool()) + ")"
	case KindStr, KindBytes:
		return k.String() + "(" + strconv.Quote(v.Str()) + ")"
	case KindObj:
		if v.meta&metaBinary == 0 {
			if s, ok := v.Obj().(string); ok {
				return "Obj(" + strconv.Quote(s) + ")" // Obj("") is not Obj()
			}
			return fmt.Sprintf("Obj(%v)", v.Obj())
		}
	}
	// Another implementation's value: its payload is not Go's to read.
	return k.String() + "(binary, " + strconv.FormatUint(uint64(v.n()), 10) + " bytes)"
}

// String formats the Values, as in [Int(42) Str("guest")]: Len of them, so
// an empty or nil *Args (a failed flow's Promise.Wait result) is [].
func (a *Args) String() string {
	var b strings.Builder
	b.WriteByte('[')
	for i := range a.Len() {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(a.At(i).String())
	}
	b.WriteByte(']')
	return b.String()
}
