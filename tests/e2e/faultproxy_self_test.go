package e2e

// The fault proxy's own test (no control plane): each mode does what the soak counts on, against
// a loopback server that answers "N\n" with N bytes. Runs with the soak
// (NODERECOVER_E2E_RUN=TestSoak), not in the ordinary e2e run. Never sends beyond loopback.

import (
	"bufio"
	"io"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestSoakFaultProxy(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var received atomic.Int64
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func(c net.Conn) {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					received.Add(1)
					n, _ := strconv.Atoi(strings.TrimSpace(line))
					if _, err := c.Write([]byte(strings.Repeat("x", n))); err != nil {
						return
					}
				}
			}(c)
		}
	}()
	p, err := startFaultProxy("self", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer p.close()
	dial := func() net.Conn {
		c, err := net.Dial("tcp", p.addr())
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	// ask sends "n\n" and reads n bytes within limit; returns what it read and how long it took.
	ask := func(c net.Conn, n int, limit time.Duration) (int, time.Duration, error) {
		t0 := time.Now()
		c.SetDeadline(t0.Add(limit))
		if _, err := c.Write([]byte(strconv.Itoa(n) + "\n")); err != nil {
			return 0, 0, err
		}
		got, err := io.ReadFull(c, make([]byte, n))
		return got, time.Since(t0), err
	}

	c := dial()
	if got, _, err := ask(c, 1000, 5*time.Second); got != 1000 || err != nil {
		t.Fatalf("pass: %d bytes, %v", got, err)
	}

	// hold: the request reaches the server, the answer waits until the hold ends
	before := received.Load()
	p.set(proxyHold)
	if got, _, err := ask(c, 10, 700*time.Millisecond); got != 0 || err == nil {
		t.Errorf("hold: %d bytes came through (%v)", got, err)
	}
	if received.Load() != before+1 {
		t.Errorf("hold: the request did not reach the server")
	}
	p.set(proxyPass)
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if got, err := io.ReadFull(c, make([]byte, 10)); got != 10 || err != nil {
		t.Errorf("hold released: %d bytes, %v", got, err)
	}

	// stall: not even the request moves; it is recorded as held towards the server
	before = received.Load()
	p.set(proxyStall)
	if got, _, _ := ask(c, 10, 700*time.Millisecond); got != 0 || received.Load() != before {
		t.Errorf("stall: %d bytes back, requests %d -> %d", got, before, received.Load())
	}
	p.set(proxyPass)
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if got, err := io.ReadFull(c, make([]byte, 10)); got != 10 || err != nil {
		t.Errorf("stall released: %d bytes, %v", got, err)
	}
	if h := p.heldUp(); len(h) != 1 || h[0].to.Sub(h[0].from) < 600*time.Millisecond {
		t.Errorf("stall: held intervals %v", h)
	}

	// trickle: 1280 bytes at 64 a tenth of a second take about 2 s
	p.set(proxyTrickle)
	got, took, err := ask(c, 1280, 10*time.Second)
	p.set(proxyPass)
	if got != 1280 || err != nil || took < time.Second {
		t.Errorf("trickle: %d bytes in %s (%v), want all, slowly", got, took, err)
	}

	// cut: a long answer ends early, with the connection
	p.set(proxyCutArmed)
	if got, _, err := ask(c, 200000, 5*time.Second); got >= 200000 || err == nil {
		t.Errorf("cut: %d bytes of 200000 (%v), want fewer and an error", got, err)
	}

	// refuse: a new connection is reset at once, an open one still works
	c = dial()
	if got, _, err := ask(c, 5, 5*time.Second); got != 5 || err != nil {
		t.Fatalf("after the cut, a new connection: %d, %v", got, err)
	}
	p.set(proxyRefuse)
	r := dial()
	if got, _, err := ask(r, 5, 2*time.Second); got != 0 || err == nil || isTimeout(err) {
		t.Errorf("refuse: %d bytes (%v), want an at-once reset", got, err)
	}
	if got, _, err := ask(c, 5, 5*time.Second); got != 5 || err != nil {
		t.Errorf("refuse: the open connection: %d, %v", got, err)
	}
	p.set(proxyPass)

	// reset: open connections end
	if n := p.reset(); n < 1 {
		t.Errorf("reset: %d connections", n)
	}
	if got, _, err := ask(c, 5, 2*time.Second); got != 0 || err == nil || isTimeout(err) {
		t.Errorf("reset: %d bytes (%v), want an error", got, err)
	}
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}
