//go:build linux

package stepsd

import (
	"bufio"
	"net"
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
			s, err := Start(Config{Addr: "127.0.0.1:0", Reactors: 1})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Shutdown(0)
			c, err := net.Dial("tcp", s.Addr().String())
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			br := bufio.NewReaderSize(c, 64<<10)
			var batch []byte
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
				if _, err := c.Write([]byte(resp("SET", "key0", "value0"))); err != nil {
					b.Fatal(err)
				}
				if _, err := skipReply(br); err != nil {
					b.Fatal(err)
				}
			}
			run := func(n int) {
				for done := 0; done < n; done += depth {
					if _, err := c.Write(batch); err != nil {
						b.Fatal(err)
					}
					for i := 0; i < depth; i++ {
						kind, err := skipReply(br)
						if err != nil {
							b.Fatal(err)
						}
						if kind == '-' {
							b.Fatal("error reply")
						}
					}
				}
			}
			run(10 * depth)
			b.ReportAllocs()
			b.ResetTimer()
			run(b.N)
		})
	}
}
