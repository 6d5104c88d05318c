// The WebSocket echo server of bench/websocket.py: every data message it receives is sent
// back as it came (same opcode, same payload), on the same connection, in order.
//
// gorilla/websocket, one goroutine per connection (net/http's), the message copied from the
// frame reader to the frame writer through gorilla's buffers (no per-message allocation of
// the payload). Pinned to one core by the bench (taskset), Go's runtime takes GOMAXPROCS=1
// from the affinity mask. It prints "listening PORT" on stdout once it accepts connections,
// then serves until killed.
//
//	echo [-addr 127.0.0.1:0]
package main

import (
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"

	"github.com/gorilla/websocket"
)

var upgrader = websocket.Upgrader{
	ReadBufferSize:  4096,
	WriteBufferSize: 4096,
	// Loopback benchmark: any client may connect.
	CheckOrigin: func(*http.Request) bool { return true },
}

func echo(w http.ResponseWriter, r *http.Request) {
	conn, err := upgrader.Upgrade(w, r, nil)
	if err != nil {
		return // Upgrade has answered the client with an error status
	}
	defer conn.Close()
	conn.SetReadLimit(64 << 20)
	for {
		mt, rd, err := conn.NextReader()
		if err != nil {
			return // closed by the client, or a protocol error
		}
		wr, err := conn.NextWriter(mt)
		if err != nil {
			return
		}
		if _, err := io.Copy(wr, rd); err != nil {
			return
		}
		if err := wr.Close(); err != nil {
			return
		}
	}
}

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "address to listen on (port 0: a free one)")
	flag.Parse()
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("listening %d\n", ln.Addr().(*net.TCPAddr).Port)
	os.Stdout.Sync()
	srv := &http.Server{Handler: http.HandlerFunc(echo)}
	log.Fatal(srv.Serve(ln))
}
