// The known-truth server of tests/probes.rs in Go (built by the test with `go build`): each
// connection on its goroutine, keep-alive; each request passes parse (50 µs), handle
// (200 µs, with a 64 KiB frame), respond (50 µs), each a busy wait, and finish. Prints its
// port.
package main

import (
	"bytes"
	"fmt"
	"net"
	"time"
)

func spin(us int) {
	t := time.Now()
	for time.Since(t) < time.Duration(us)*time.Microsecond {
	}
}

//go:noinline
func parse() { spin(50) }

// handle's frame holds 64 KiB, so a goroutine's stack grows at its entry on its first call
// (and after the GC shrinks it): runtime.morestack then runs the function's entry again and a
// uprobe on it fires twice for one call, as in real Go servers with deep frames.
//
//go:noinline
func handle() {
	var scratch [64 << 10]byte
	touch(scratch[:])
	spin(200)
}

//go:noinline
func touch(b []byte) { b[len(b)-1] = 1 }

//go:noinline
func respond() { spin(50) }

//go:noinline
func finish() {}

func serve(c net.Conn) {
	defer c.Close()
	var buf []byte
	chunk := make([]byte, 4096)
	for {
		n, err := c.Read(chunk)
		if n <= 0 || err != nil {
			return
		}
		buf = append(buf, chunk[:n]...)
		for {
			end := bytes.Index(buf, []byte("\r\n\r\n"))
			if end < 0 {
				break
			}
			parse()
			handle()
			respond()
			finish()
			c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"))
			buf = buf[end+4:]
		}
	}
}

func main() {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	fmt.Println(l.Addr().(*net.TCPAddr).Port)
	for {
		c, err := l.Accept()
		if err == nil {
			go serve(c)
		}
	}
}
