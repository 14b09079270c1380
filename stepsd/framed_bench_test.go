//go:build linux

package stepsd

import (
	"strconv"
	"testing"
)

// BenchmarkPipelinedFramed is BenchmarkPipelined with requests as RESP
// arrays, as every client library and redis-benchmark send them: a read
// of them is answered by a direct run (applyTo), the path that
// BenchmarkPipelined's inline commands do not take. SET and GET hit keys
// that exist (GET's key is the SET's before it), ECHO and PING between.
func BenchmarkPipelinedFramed(b *testing.B) {
	for _, depth := range []int{1, 64} {
		b.Run("reactors=1/depth="+strconv.Itoa(depth), func(b *testing.B) {
			var batch, prime []byte
			for i := 0; i < depth; i++ {
				k := strconv.Itoa(i / 4 % 100)
				switch i % 4 {
				case 0:
					batch = append(batch, resp("SET", "key"+k, "value"+k)...)
				case 1:
					batch = append(batch, resp("GET", "key"+k)...)
				case 2:
					batch = append(batch, resp("ECHO", "hello")...)
				default:
					batch = append(batch, resp("PING")...)
				}
			}
			if depth == 1 {
				batch = []byte(resp("GET", "key0"))
				prime = []byte(resp("SET", "key0", "value0"))
			}
			benchBatches(b, 1, depth, batch, prime)
		})
	}
}
