//go:build !asyncsteps_polling

package reactor

// forcePolling, when true, makes Run use gnet's Polling even where the
// poller's epoll descriptor is readable (pollerFD): the fallback loop that
// a gnet upgrade moving that private field would silently select. Only
// the asyncsteps_polling build tag sets it (`make test` runs the
// real-reactor suites under it once), so that the fallback stays tested.
const forcePolling = false
