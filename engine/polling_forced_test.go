//go:build asyncsteps_polling

package engine_test

// pollingFallback: see polling_default_test.go.
const pollingFallback = true
