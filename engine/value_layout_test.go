package engine

import (
	"testing"
	"unsafe"
)

// The ABI (package abi) hands Args to C as FutoInArgs without copying: these offsets
// are the contract with FTN12 2.7's FutoInBinaryValue on 64-bit platforms.
func TestValueLayoutMatchesFutoInBinaryValue(t *testing.T) {
	if unsafe.Sizeof(uintptr(0)) != 8 {
		t.Skip("layout contract is for 64-bit platforms")
	}
	var v Value
	checks := []struct {
		name      string
		got, want uintptr
	}{
		{"sizeof(Value)", unsafe.Sizeof(v), 32},
		{"offsetof(type)", unsafe.Offsetof(v.typ), 0},
		{"offsetof(union)", unsafe.Offsetof(v.word), 8},
		{"offsetof(custom_data)", unsafe.Offsetof(v.ref), 16},
		{"offsetof(length)", unsafe.Offsetof(v.meta), 24},
		{"sizeof(Args)", unsafe.Sizeof(Args{}), 128},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %d, want %d", c.name, c.got, c.want)
		}
	}
}
