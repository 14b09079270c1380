//go:build !race

package stepsd

const raceEnabled = false
