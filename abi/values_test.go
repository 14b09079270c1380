package abi_test

import (
	"testing"
	"unsafe"

	"github.com/asyncsteps/asyncsteps/abi"
	"github.com/asyncsteps/asyncsteps/abi/internal/ctest"
	"github.com/asyncsteps/asyncsteps/engine"
)

// typeOf reads the type pointer of a C FutoInBinaryValue (its first word).
func typeOf(v unsafe.Pointer) unsafe.Pointer { return *(*unsafe.Pointer)(v) }

type valueCase struct {
	name  string
	flags int
	kind  engine.Kind
	check func(v engine.Value) bool
	// shared: the Value's data must be the C payload itself (Str, Bytes).
	shared bool
	// length of a KindBinary value, checked through BinaryParts.
	length uint32
}

var valueCases = []valueCase{
	{"BOOL", ctest.TypeBool, engine.KindBool, func(v engine.Value) bool { return v.Bool() }, false, 0},
	{"INT8", ctest.TypeInt8, engine.KindInt, func(v engine.Value) bool { return v.Int() == -8 }, false, 0},
	{"INT16", ctest.TypeInt16, engine.KindInt, func(v engine.Value) bool { return v.Int() == -16000 }, false, 0},
	{"INT32", ctest.TypeInt32, engine.KindInt, func(v engine.Value) bool { return v.Int() == -2000000000 }, false, 0},
	{"INT64", ctest.TypeInt64, engine.KindInt, func(v engine.Value) bool { return v.Int() == -9000000000000000000 }, false, 0},
	{"UINT8", ctest.TypeUint8, engine.KindUint, func(v engine.Value) bool { return v.Uint() == 250 }, false, 0},
	{"UINT16", ctest.TypeUint16, engine.KindUint, func(v engine.Value) bool { return v.Uint() == 65000 }, false, 0},
	{"UINT32", ctest.TypeUint32, engine.KindUint, func(v engine.Value) bool { return v.Uint() == 4000000000 }, false, 0},
	{"UINT64", ctest.TypeUint64, engine.KindUint, func(v engine.Value) bool { return v.Uint() == 18000000000000000000 }, false, 0},
	{"FLOAT", ctest.TypeFloat, engine.KindFloat, func(v engine.Value) bool { return v.Float() == 1.5 }, false, 0},
	{"DOUBLE", ctest.TypeDouble, engine.KindFloat, func(v engine.Value) bool { return v.Float() == -2.25 }, false, 0},
	{"STRING", ctest.TypeString, engine.KindStr, func(v engine.Value) bool { return v.Str() == "hello" }, true, 0},
	{"UINT8|ARRAY", ctest.TypeUint8 | ctest.TypeArray, engine.KindBytes,
		func(v engine.Value) bool { return string(v.Bytes()) == "\x01\x02\x03\xff" }, true, 0},
	{"INT8|ARRAY", ctest.TypeInt8 | ctest.TypeArray, engine.KindBytes,
		func(v engine.Value) bool { return len(v.Bytes()) == 4 }, true, 0},
	{"STRING16", ctest.TypeString16, engine.KindBinary, nil, false, 2},
	{"STRING32", ctest.TypeString32, engine.KindBinary, nil, false, 3},
	{"INT16|ARRAY", ctest.TypeInt16 | ctest.TypeArray, engine.KindBinary, nil, false, 3},
	{"INT32|ARRAY", ctest.TypeInt32 | ctest.TypeArray, engine.KindBinary, nil, false, 3},
	{"CUSTOM_OBJECT (foreign)", ctest.TypeCustomObject, engine.KindBinary, nil, false, 0},
}

// checkValue checks v, read from Value(c.flags), whether directly or after
// crossing a flow.
func checkValue(t *testing.T, c valueCase, v engine.Value) {
	t.Helper()
	cv := ctest.Value(c.flags)
	if v.Kind() != c.kind {
		t.Fatalf("kind %v, want %v", v.Kind(), c.kind)
	}
	if c.check != nil && !c.check(v) {
		t.Fatalf("value %v is wrong", v)
	}
	if c.shared {
		b := v.Bytes()
		if unsafe.Pointer(unsafe.SliceData(b)) != ctest.ValueData(c.flags) {
			t.Fatalf("data at %p, want the C payload %p (no copy)", unsafe.SliceData(b), ctest.ValueData(c.flags))
		}
		if c.kind == engine.KindStr && unsafe.Pointer(unsafe.StringData(v.Str())) != ctest.ValueData(c.flags) {
			t.Fatalf("Str data at %p, want the C payload %p (no copy)", unsafe.StringData(v.Str()), ctest.ValueData(c.flags))
		}
	}
	if c.kind == engine.KindBinary {
		typ, word, custom, n, binary := engine.X.BinaryParts(v)
		if !binary || typ != typeOf(cv) || n != c.length {
			t.Fatalf("BinaryParts: type %p length %d binary %v, want %p %d true", typ, n, binary, typeOf(cv), c.length)
		}
		if c.flags == ctest.TypeCustomObject {
			if custom != ctest.ValueData(c.flags) {
				t.Fatalf("custom_data %p, want %p", custom, ctest.ValueData(c.flags))
			}
		} else if uintptr(word) != uintptr(ctest.ValueData(c.flags)) {
			t.Fatalf("BinaryParts word %#x, want the payload %p", word, ctest.ValueData(c.flags))
		}
	}
}

func TestToValueEveryType(t *testing.T) {
	if v := abi.ToValue(nil); v.Kind() != engine.KindNone {
		t.Fatalf("ToValue(nil) kind %v, want KindNone", v.Kind())
	}
	zero := ctest.NewCValue()
	defer ctest.Free(zero)
	if v := abi.ToValue(zero); v.Kind() != engine.KindNone {
		t.Fatalf("ToValue(no type) kind %v, want KindNone", v.Kind())
	}
	for _, c := range valueCases {
		t.Run(c.name, func(t *testing.T) {
			if c.shared {
			}
			v := abi.ToValue(ctest.Value(c.flags))
			checkValue(t, c, v)
			if engine.X.Owned(v) {
				t.Fatal("a value whose type has no cleanup is owned")
			}
		})
	}
}

// TestValuesThroughFlow: a C step succeeds with each value; a C step passes
// it on unchanged (C -> C keeps the descriptor); a Go step reads it.
func TestValuesThroughFlow(t *testing.T) {
	for _, c := range valueCases {
		t.Run(c.name, func(t *testing.T) {
			if c.shared {
			}
			h := newHarness(t)
			ctest.Add(h.root, ctest.ValueStep, c.flags, 0)
			ctest.Add(h.root, ctest.Record, 1, 0)
			var got engine.Value
			h.root.Add(func(as *engine.Steps) { got = as.Arg(0) })
			if _, code := h.run(); code != "" {
				t.Fatalf("flow failed: %s (%s)", code, h.root.State().ErrorInfo)
			}
			checkValue(t, c, got)
			if typ, _, _, _, binary := engine.X.BinaryParts(got); !binary || typ != typeOf(ctest.Value(c.flags)) {
				t.Fatalf("after a C step passed it on: type %p binary %v, want the C type %p", typ, binary, typeOf(ctest.Value(c.flags)))
			}
			h.release()
		})
	}
}

func TestOwnedValueToValue(t *testing.T) {
	ctest.Reset()
	p := ctest.NewCValue()
	defer ctest.Free(p)
	ctest.OwnedValue(p, "mine")
	v := abi.ToValue(p)
	if engine.X.Owned(v) || v.Kind() != engine.KindStr || v.Str() != "mine" {
		t.Fatalf("ToValue of an owned string: owned %v kind %v %q, want a borrowed Str", engine.X.Owned(v), v.Kind(), v.Str())
	}
	// ToValue is a view: the C side keeps ownership, even after a flow
	// used the value, so the engine never runs its cleanup.
	h := newHarness(t)
	h.root.Add(func(as *engine.Steps) { as.Success(v) })
	if vals, code := h.run(); code != "" || len(vals) != 1 || vals[0].Str() != "mine" {
		t.Fatalf("result %v %q", vals, code)
	}
	h.release()
	if c := ctest.Count(); c.ValueCleanups != 0 {
		t.Fatalf("cleaned %d times after release, want 0: the caller of ToValue owns it", c.ValueCleanups)
	}
}

// TestOwnedCleanup: a C value whose type has a cleanup is cleaned exactly
// once, whichever way it leaves the flow.
func TestOwnedCleanup(t *testing.T) {
	cleanups := func() int { return ctest.Count().ValueCleanups }
	cases := []struct {
		name string
		// build adds the steps; at checks what the count must be inside the
		// step it adds (-1: nothing added).
		build func(t *testing.T, root *engine.Steps)
		// afterRun: count once the flow ended; afterRelease: once released.
		afterRun, afterRelease int
	}{
		{"replaced by the next success", func(t *testing.T, root *engine.Steps) {
			ctest.Add(root, ctest.Owned, 2, 0)
			root.Add(func(as *engine.Steps) {
				if as.Arg(0).Kind() != engine.KindStr || !engine.X.Owned(as.Arg(0)) {
					t.Errorf("the Go step got %v owned %v", as.Arg(0), engine.X.Owned(as.Arg(0)))
				}
				as.Success(engine.Int(1))
			})
			root.Add(func(as *engine.Steps) {
				if n := cleanups(); n != 2 {
					t.Errorf("after being replaced: %d cleanups, want 2", n)
				}
			})
		}, 2, 2},
		{"replaced by a C success", func(t *testing.T, root *engine.Steps) {
			ctest.Add(root, ctest.Owned, 3, 0)
			ctest.Add(root, ctest.Inc, 0, 0)
		}, 3, 3},
		{"passed on unchanged by C and Go", func(t *testing.T, root *engine.Steps) {
			ctest.Add(root, ctest.Owned, 2, 0)
			ctest.Add(root, ctest.Record, 1, 0)
			root.Add(func(as *engine.Steps) {
				if n := cleanups(); n != 0 {
					t.Errorf("passed on by C: %d cleanups, want 0", n)
				}
				as.Success(as.Arg(0), as.Arg(1))
			})
			root.Add(func(as *engine.Steps) {
				if n := cleanups(); n != 0 {
					t.Errorf("passed on by Go: %d cleanups, want 0", n)
				}
				as.Success(as.Arg(1)) // one kept, one dropped
			})
			root.Add(func(as *engine.Steps) {
				if n := cleanups(); n != 1 {
					t.Errorf("one dropped: %d cleanups, want 1", n)
				}
			})
		}, 2, 2},
		{"held by the root until released", func(t *testing.T, root *engine.Steps) {
			ctest.Add(root, ctest.Owned, 3, 0)
		}, 0, 3},
		{"sub-steps added", func(t *testing.T, root *engine.Steps) {
			ctest.Add(root, ctest.Owned, 1, 0)
			root.Add(func(as *engine.Steps) {
				as.Add(func(as *engine.Steps) {
					if n := cleanups(); n != 1 {
						t.Errorf("in a sub-step: %d cleanups, want 1", n)
					}
				})
			})
		}, 1, 1},
		{"flow failed", func(t *testing.T, root *engine.Steps) {
			ctest.Add(root, ctest.Owned, 2, 0)
			ctest.Add(root, ctest.Fail, 0, 0)
		}, -1, 2}, // -1: not checked before release (dropped at the error or at release)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t)
			c.build(t, h.root)
			h.run()
			if n := cleanups(); c.afterRun >= 0 && n != c.afterRun {
				t.Fatalf("after the flow: %d cleanups, want %d", n, c.afterRun)
			}
			h.release()
			if n := cleanups(); n != c.afterRelease {
				t.Fatalf("after release: %d cleanups, want %d", n, c.afterRelease)
			}
		})
	}
	t.Run("root executed again", func(t *testing.T) {
		h := newHarness(t)
		ctest.Add(h.root, ctest.Owned, 2, 0)
		h.run()
		ctest.Add(h.root, ctest.Inc, 0, 0)
		h.run()
		if n := cleanups(); n != 2 {
			t.Fatalf("after the second run: %d cleanups, want 2", n)
		}
		h.release()
		if n := cleanups(); n != 2 {
			t.Fatalf("after release: %d cleanups, want 2", n)
		}
	})
	t.Run("External success dropped by a cancel", func(t *testing.T) {
		h := newHarness(t)
		ctest.Add(h.root, ctest.Wait, 1, 0)
		h.start()
		h.root.Cancel()              // posted: the step is still waiting
		ctest.CompleteWaitingOwned() // posted after the cancel: dropped
		h.r.RunUntilIdle()
		if _, code := h.result(); code != engine.Canceled {
			t.Fatalf("flow ended with %q, want Canceled", code)
		}
		if n := cleanups(); n != 2 {
			t.Fatalf("%d cleanups of the two dropped values, want 2", n)
		}
		h.release()
		if n := cleanups(); n != 2 {
			t.Fatalf("after release: %d cleanups, want 2", n)
		}
	})
	t.Run("success on a stale waiting step", func(t *testing.T) {
		h := newHarness(t)
		ctest.Add(h.root, ctest.Wait, 1, 0)
		h.start()
		bsi := ctest.WaitingPtr()
		h.root.Cancel()
		h.r.RunUntilIdle() // the step is gone
		ctest.CompleteOwnedOn(bsi)
		h.r.RunUntilIdle()
		if n := cleanups(); n != 2 {
			t.Fatalf("success with two owned values on a step already canceled: %d cleanups, want 2 (see .abi-bugs.md GO3)", n)
		}
		h.release()
	})
}
