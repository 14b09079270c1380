//go:build cgo

package apicheck

import (
	"unsafe"

	"github.com/asyncsteps/asyncsteps/abi"
	"github.com/asyncsteps/asyncsteps/engine"
)

// abi's Go entry points (CONTRACT.md, "abi"); abi needs cgo, so this file
// is built only with it (the C entry points are pinned by abi/ctests).
var (
	_ func(*engine.Steps) unsafe.Pointer = abi.Binary
	_ func(unsafe.Pointer) *engine.Steps = abi.Wrap
	_ func(unsafe.Pointer) engine.Value  = abi.ToValue
)
