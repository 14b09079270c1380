package main

import (
	"fmt"
	"io"
)

// profileAll and profileOne are make profile (profile_linux.go... below).
func profileAll(o *options, root string, cases []caseSpec, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "benchtable: -profile: not yet")
	return 2
}

func profileOne(o *options, stderr io.Writer) int {
	fmt.Fprintln(stderr, "benchtable: -profile-one: not yet")
	return 2
}
