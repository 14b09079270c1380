//go:build !asyncsteps_polling

package engine_test

// pollingFallback is set in the asyncsteps_polling build, where every
// real loop runs through gnet's Polling and never parks: Promise.Wait
// then never assists.
const pollingFallback = false
