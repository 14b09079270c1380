//go:build !linux

package main

import (
	"errors"
	"os/exec"
	"runtime"
)

var errNoAffinity = errors.New("CPU sets (-server-cpus, -load-cpus) need Linux's sched_setaffinity")

// allowedCPUs lists every CPU: without sched_getaffinity, this process may
// run anywhere.
func allowedCPUs() ([]int, error) {
	cpus := make([]int, runtime.NumCPU())
	for i := range cpus {
		cpus[i] = i
	}
	return cpus, nil
}

func pinSelf([]int) error { return errNoAffinity }

func startOn(cmd *exec.Cmd, cpus []int) error {
	if cpus != nil {
		return errNoAffinity
	}
	return cmd.Start()
}

func pidCPUs(int) ([]int, error) { return nil, errNoAffinity }
