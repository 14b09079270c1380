//go:build linux

package stepsd_test

import (
	"bufio"
	"fmt"
	"net"

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
	fmt.Fprint(c, "SET greeting hello world\nGET greeting\nSLEEP 20\nDEL nothing\nPING\n")
	br := bufio.NewReader(c)
	for i := 0; i < 5; i++ {
		line, _ := br.ReadString('\n')
		fmt.Print(line)
	}
	// Output:
	// OK
	// VALUE hello world
	// OK
	// NOTFOUND
	// ERR InvalidRequest unknown command
}
