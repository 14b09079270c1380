//go:build linux

package stepsd_test

import (
	"bufio"
	"fmt"
	"net"
	"strings"

	"github.com/asyncsteps/asyncsteps/stepsd"
)

func ExampleStart() {
	s, err := stepsd.Start(stepsd.Config{Addr: "127.0.0.1:0", Reactors: 2})
	if err != nil {
		panic(err)
	}
	defer s.Shutdown(0)

	c, err := net.Dial("tcp", s.Addr().String())
	if err != nil {
		panic(err)
	}
	defer c.Close()
	// Inline commands, as nc or telnet send them; client libraries send
	// the same as RESP arrays.
	fmt.Fprint(c, "SET greeting \"hello world\"\r\nGET greeting\r\nSLEEP 20\r\nDEL nothing\r\nPING\r\nFLY\r\n")
	br := bufio.NewReader(c)
	for i := 0; i < 7; i++ {
		line, _ := br.ReadString('\n')
		fmt.Println(strings.TrimSuffix(line, "\r\n"))
	}
	// Output:
	// +OK
	// $11
	// hello world
	// +OK
	// :0
	// +PONG
	// -ERR unknown command 'FLY'
}
