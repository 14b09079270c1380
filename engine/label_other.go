//go:build !linux

package engine

// cpuProfiling reports true where the engine cannot tell whether a CPU
// profile is being recorded: LabelsWhileProfiling then labels every named
// flow, as LabelsAlways does.
func cpuProfiling() bool { return true }
