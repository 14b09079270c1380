// Command cabi is the C library of asyncsteps: `make cabi` builds it with
// -buildmode=c-archive into build/libasyncsteps.a, whose entry points are
// declared in abi/asyncsteps.h (and the vtable in abi/futoin.h).
package main

import _ "github.com/asyncsteps/asyncsteps/abi"

func main() {}
