package cast

import (
	"reflect"
	"testing"
	"unsafe"
)

type point struct{ x, y int }

func (p *point) sum(aux uint64) uint64 { return uint64(p.x+p.y) + aux }

func topLevel(p *point, aux uint64) uint64 { return p.sum(aux) }

func TestFuncPC(t *testing.T) {
	k := 7
	closure := func(p *point, aux uint64) uint64 { return uint64(k) + aux }
	var nilFunc func(*point, uint64) uint64
	p := &point{1, 2}
	for _, tc := range []struct {
		name string
		f    func(*point, uint64) uint64
	}{
		{"top-level", topLevel},
		{"closure", closure},
		{"method expression", (*point).sum},
		{"nil", nilFunc},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := reflect.ValueOf(tc.f).Pointer()
			if got := PCOf(tc.f); got != want {
				t.Errorf("PCOf = %#x, want reflect's %#x", got, want)
			}
			if got := FuncPC(FuncPtr(tc.f)); got != want {
				t.Errorf("FuncPC(FuncPtr) = %#x, want %#x", got, want)
			}
			if tc.f == nil {
				if FuncPtr(tc.f) != nil {
					t.Error("FuncPtr(nil) is not nil")
				}
				return
			}
			// The round trip through a pointer-typed signature calls the same code.
			g := Func[func(unsafe.Pointer, uint64) uint64](FuncPtr(tc.f))
			if got, want := g(unsafe.Pointer(p), 10), tc.f(p, 10); got != want {
				t.Errorf("through Func: %d, want %d", got, want)
			}
		})
	}
	// A method value is a closure over its receiver: its PC is a wrapper's,
	// still equal to what reflect reports.
	mv := p.sum
	if got, want := PCOf(mv), reflect.ValueOf(mv).Pointer(); got != want {
		t.Errorf("method value: PCOf = %#x, want %#x", got, want)
	}
}

func TestStringBytes(t *testing.T) {
	for _, s := range []string{"", "a", "hello, world"} {
		b := StringBytes(s)
		if string(b) != s || len(b) != len(s) || cap(b) != len(s) {
			t.Errorf("StringBytes(%q) = %q (len %d cap %d)", s, b, len(b), cap(b))
		}
		if len(s) > 0 && unsafe.StringData(s) != &b[0] {
			t.Errorf("StringBytes(%q) copied the bytes", s)
		}
	}
}

var sink uintptr

func TestNoAllocs(t *testing.T) {
	k := 3
	f := func(p *point, aux uint64) uint64 { return uint64(k) }
	p := &point{}
	s := "some bytes"
	if n := testing.AllocsPerRun(100, func() {
		g := Func[func(unsafe.Pointer, uint64) uint64](FuncPtr(f))
		sink += uintptr(g(unsafe.Pointer(p), 1)) + PCOf(f) + uintptr(len(StringBytes(s)))
	}); n != 0 {
		t.Errorf("%v allocations, want 0", n)
	}
}
