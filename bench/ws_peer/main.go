// ws_peer: the WebSocket load client that bench/websocket.py sets beside reqlife. It does what
// `reqlife run ws://... --data TEXT -c N -d D` does: N connections, opened and upgraded first,
// each with one message in flight: it sends a text message, reads the next data message (the
// echo), and sends again (a closed loop), for the duration. With -rate R it is an open loop
// instead: the messages are due at R per second in all, evenly spaced and spread over the
// connections in turn (connection k's i-th message at start + (k + i*N)/R); a connection still
// waiting for a reply when its next message is due sends it as soon as the reply came (the
// message is late, and its latency is counted from when it was due).
//
// gorilla/websocket (k6's WebSocket library too), a goroutine per connection; each message's
// latency (send to reply, or due time to reply) goes to a log-linear histogram (1/32
// resolution) of its connection, so that the client, like reqlife, records every message.
// Pinned to one core (taskset), Go's runtime takes GOMAXPROCS=1 from the affinity mask.
//
// It prints one JSON object on stdout: messages (replies received), errors, seconds (from the
// start of sending to the last reply), mps (messages per second), p50_us, p99_us, max_us.
//
//	ws_peer -url ws://127.0.0.1:PORT/ [-c 10] [-d 5s] [-data hello | -size 1024] [-rate 10000]
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/bits"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"
)

// hist is a log-linear histogram of nanoseconds: values below 32 exactly, above them 32
// buckets per power of two.
type hist struct {
	counts [62 * 32]uint64
	max    uint64
}

func bucket(v uint64) int {
	if v < 32 {
		return int(v)
	}
	shift := bits.Len64(v) - 6
	return (shift+1)*32 + int(v>>uint(shift)) - 32
}

// lowest value of bucket i
func bucketValue(i int) uint64 {
	if i < 32 {
		return uint64(i)
	}
	shift := i/32 - 1
	return uint64(i%32+32) << uint(shift)
}

func (h *hist) record(d time.Duration) {
	v := uint64(0)
	if d > 0 {
		v = uint64(d)
	}
	h.counts[bucket(v)]++
	if v > h.max {
		h.max = v
	}
}

func (h *hist) add(o *hist) {
	for i, c := range o.counts {
		h.counts[i] += c
	}
	if o.max > h.max {
		h.max = o.max
	}
}

func (h *hist) quantile(q float64) float64 {
	var n uint64
	for _, c := range h.counts {
		n += c
	}
	if n == 0 {
		return 0
	}
	rank := uint64(q*float64(n) + 0.5)
	if rank < 1 {
		rank = 1
	}
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			return float64(bucketValue(i))
		}
	}
	return float64(h.max)
}

type result struct {
	messages uint64
	errors   uint64
	hist     hist
	lastErr  error
}

// run drives one connection until deadline: closed loop when interval is 0, else each message
// due at first + i*interval.
func run(conn *websocket.Conn, msg []byte, start, deadline time.Time, first time.Duration,
	interval time.Duration, res *result) {
	buf := make([]byte, 64<<10)
	due := start.Add(first)
	for {
		var sent time.Time
		if interval > 0 {
			if !due.Before(deadline) {
				return
			}
			now := time.Now()
			if now.Before(due) {
				time.Sleep(due.Sub(now))
			}
			sent = due // latency from the due time: coordinated omission corrected
			due = due.Add(interval)
		} else {
			sent = time.Now()
			if !sent.Before(deadline) {
				return
			}
		}
		if err := conn.WriteMessage(websocket.TextMessage, msg); err != nil {
			res.errors++
			res.lastErr = err
			return
		}
		_, rd, err := conn.NextReader()
		if err != nil {
			res.errors++
			res.lastErr = err
			return
		}
		for {
			_, err = rd.Read(buf)
			if err != nil {
				break
			}
		}
		if err != io.EOF {
			res.errors++
			res.lastErr = err
			return
		}
		res.hist.record(time.Since(sent))
		res.messages++
	}
}

func main() {
	url := flag.String("url", "", "ws:// URL of the echo server")
	conns := flag.Int("c", 10, "connections, one message in flight each")
	dur := flag.Duration("d", 5*time.Second, "how long to send for")
	data := flag.String("data", "hello", "the message (a text frame)")
	size := flag.Int("size", 0, "send a text message of this many bytes instead of -data")
	rate := flag.Float64("rate", 0, "open loop: messages per second in all (0: closed loop)")
	flag.Parse()
	if *url == "" || *conns < 1 || *dur <= 0 || *rate < 0 {
		fmt.Fprintln(os.Stderr, "usage: ws_peer -url ws://HOST:PORT/PATH [-c N] [-d DUR] "+
			"[-data TEXT | -size BYTES] [-rate MSGS_PER_S]")
		os.Exit(2)
	}
	msg := []byte(*data)
	if *size > 0 {
		msg = []byte(strings.Repeat("x", *size))
	}

	dialer := websocket.Dialer{ReadBufferSize: 4096, WriteBufferSize: 4096,
		HandshakeTimeout: 10 * time.Second}
	cs := make([]*websocket.Conn, *conns)
	for i := range cs {
		c, _, err := dialer.Dial(*url, nil)
		if err != nil {
			fmt.Fprintf(os.Stderr, "connection %d: %v\n", i+1, err)
			os.Exit(1)
		}
		c.SetReadLimit(64 << 20)
		cs[i] = c
	}

	results := make([]result, *conns)
	var interval time.Duration
	if *rate > 0 {
		interval = time.Duration(float64(*conns) / *rate * 1e9)
	}
	start := time.Now()
	deadline := start.Add(*dur)
	var wg sync.WaitGroup
	for i, c := range cs {
		var first time.Duration
		if *rate > 0 {
			first = time.Duration(float64(i) / *rate * 1e9)
		}
		wg.Add(1)
		go func(i int, c *websocket.Conn, first time.Duration) {
			defer wg.Done()
			run(c, msg, start, deadline, first, interval, &results[i])
		}(i, c, first)
	}
	wg.Wait()
	elapsed := time.Since(start)
	for _, c := range cs {
		c.WriteControl(websocket.CloseMessage,
			websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""),
			time.Now().Add(time.Second))
		c.Close()
	}

	var all hist
	var messages, errors uint64
	var lastErr error
	for i := range results {
		all.add(&results[i].hist)
		messages += results[i].messages
		errors += results[i].errors
		if results[i].lastErr != nil {
			lastErr = results[i].lastErr
		}
	}
	if lastErr != nil {
		fmt.Fprintf(os.Stderr, "%d errors, the last: %v\n", errors, lastErr)
	}
	mode := "closed"
	if *rate > 0 {
		mode = "open"
	}
	out := map[string]any{
		"mode": mode, "connections": *conns, "message_bytes": len(msg), "rate": *rate,
		"messages": messages, "errors": errors, "seconds": elapsed.Seconds(),
		"mps":    float64(messages) / elapsed.Seconds(),
		"p50_us": all.quantile(0.50) / 1e3, "p99_us": all.quantile(0.99) / 1e3,
		"max_us": float64(all.max) / 1e3,
	}
	json.NewEncoder(os.Stdout).Encode(out)
	if messages == 0 {
		os.Exit(1)
	}
}
