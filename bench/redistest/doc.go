// Package redistest drives stepsd with real Redis clients: go-redis, and
// redis-cli, redis-benchmark and twemproxy (nutcracker) where installed.
// It holds tests only; it lives in the bench module so that go-redis stays
// out of the library's own go.mod.
package redistest
