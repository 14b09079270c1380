//go:build asyncsteps_polling

package reactor

// forcePolling: see polling_default.go. This build runs every real loop
// through gnet's Polling.
const forcePolling = true
