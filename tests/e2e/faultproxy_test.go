package e2e

// A TCP fault proxy for the soak (soak_test.go): one per replica, between it and
// kube-apiserver, so the soak can make that replica's path to the API misbehave while the
// other's stays sound. It passes bytes through untouched (TLS ends at the apiserver; the
// proxy never sees a plaintext byte, holds no key and never verifies or alters anything) and
// only decides when and whether bytes move: stall both ways without closing, trickle the
// server's bytes, cut a response mid-stream, reset every connection, refuse new ones, or
// hold the server's bytes while the client's still flow. It records when it delayed bytes
// towards the server, so the observer can tell a request the proxy itself held back from
// one the replica sent late. Listens on 127.0.0.1 only.

import (
	"net"
	"sync"
	"time"
)

type proxyMode int

const (
	proxyPass     proxyMode = iota
	proxyStall              // neither direction moves; connections stay open
	proxyTrickle            // server bytes pass a few at a time
	proxyHold               // server bytes wait; client bytes pass
	proxyRefuse             // new connections are reset at once; open ones pass
	proxyCutArmed           // the next server bytes on each open connection are cut after a few
)

type faultProxy struct {
	name   string
	ln     net.Listener
	target string

	mu      sync.Mutex
	cond    *sync.Cond
	mode    proxyMode
	conns   map[*proxyConn]struct{}
	closed  bool
	upHeld  []interval // times when client-to-server bytes were held back (stall)
	upSince time.Time
	accepts int
}

type interval struct{ from, to time.Time }

type proxyConn struct {
	client, server net.Conn
	cutAfter       int // >0: close both after this many more server bytes
}

func startFaultProxy(name, target string) (*faultProxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &faultProxy{name: name, ln: ln, target: target, conns: map[*proxyConn]struct{}{}}
	p.cond = sync.NewCond(&p.mu)
	go p.accept()
	go func() { // wakes waiters now and then, so a closed proxy is noticed
		for {
			time.Sleep(200 * time.Millisecond)
			p.mu.Lock()
			closed := p.closed
			p.cond.Broadcast()
			p.mu.Unlock()
			if closed {
				return
			}
		}
	}()
	return p, nil
}

func (p *faultProxy) addr() string { return p.ln.Addr().String() }

func (p *faultProxy) close() {
	p.mu.Lock()
	p.closed = true
	conns := p.conns
	p.conns = map[*proxyConn]struct{}{}
	p.cond.Broadcast()
	p.mu.Unlock()
	p.ln.Close()
	for pc := range conns {
		pc.client.Close()
		pc.server.Close()
	}
}

// set changes the mode for every connection, open or new.
func (p *faultProxy) set(m proxyMode) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	if p.mode == proxyStall && m != proxyStall {
		p.upHeld = append(p.upHeld, interval{p.upSince, now})
	}
	if m == proxyStall && p.mode != proxyStall {
		p.upSince = now
	}
	p.mode = m
	if m == proxyCutArmed {
		for pc := range p.conns {
			pc.cutAfter = 1 + int(now.UnixNano()%4000)
		}
		p.mode = proxyPass
	}
	p.cond.Broadcast()
}

// reset closes every open connection with a TCP reset.
func (p *faultProxy) reset() int {
	p.mu.Lock()
	conns := p.conns
	p.conns = map[*proxyConn]struct{}{}
	p.mu.Unlock()
	for pc := range conns {
		resetConn(pc.client)
		resetConn(pc.server)
	}
	return len(conns)
}

// heldUp returns the intervals in which client-to-server bytes were held.
func (p *faultProxy) heldUp() []interval {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := append([]interval(nil), p.upHeld...)
	if p.mode == proxyStall {
		out = append(out, interval{p.upSince, time.Now()})
	}
	return out
}

func resetConn(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
	c.Close()
}

func (p *faultProxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		mode, closed := p.mode, p.closed
		p.accepts++
		p.mu.Unlock()
		if closed || mode == proxyRefuse {
			resetConn(c)
			continue
		}
		go p.serve(c)
	}
}

func (p *faultProxy) serve(c net.Conn) {
	s, err := net.DialTimeout("tcp", p.target, 5*time.Second)
	if err != nil {
		resetConn(c) // the apiserver is down: the replica sees what it would see without us
		return
	}
	pc := &proxyConn{client: c, server: s}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		c.Close()
		s.Close()
		return
	}
	p.conns[pc] = struct{}{}
	p.mu.Unlock()
	done := make(chan struct{}, 2)
	go func() { p.pump(pc, c, s, true); done <- struct{}{} }()
	go func() { p.pump(pc, s, c, false); done <- struct{}{} }()
	<-done
	// either way ending ends both (an HTTP client never half-closes before its answer)
	p.mu.Lock()
	delete(p.conns, pc)
	p.cond.Broadcast()
	p.mu.Unlock()
	c.Close()
	s.Close()
	<-done
}

// pump copies src to dst, asking before every write whether and how much may pass.
func (p *faultProxy) pump(pc *proxyConn, src, dst net.Conn, up bool) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		b := buf[:n]
		for len(b) > 0 {
			k, ok := p.allow(pc, up, len(b))
			if !ok {
				return
			}
			if _, werr := dst.Write(b[:k]); werr != nil {
				return
			}
			b = b[k:]
			if k < n && !up {
				p.mu.Lock()
				trickle := p.mode == proxyTrickle
				p.mu.Unlock()
				if trickle {
					time.Sleep(100 * time.Millisecond)
				}
			}
		}
		if err != nil {
			return
		}
	}
}

// allow waits while the mode holds this direction and returns how many of n bytes may go;
// false: the connection is to be dropped (cut, or the proxy closed).
func (p *faultProxy) allow(pc *proxyConn, up bool, n int) (int, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for {
		if p.closed {
			return 0, false
		}
		if _, open := p.conns[pc]; !open {
			return 0, false
		}
		switch {
		case p.mode == proxyStall, p.mode == proxyHold && !up:
			p.cond.Wait()
			continue
		}
		break
	}
	if !up && pc.cutAfter > 0 {
		if n >= pc.cutAfter {
			k := pc.cutAfter
			pc.cutAfter = 0
			delete(p.conns, pc)
			go func() { // after these bytes are written, the connection is cut
				time.Sleep(50 * time.Millisecond)
				resetConn(pc.client)
				resetConn(pc.server)
			}()
			return k, true
		}
		pc.cutAfter -= n
	}
	if !up && p.mode == proxyTrickle && n > 64 {
		return 64, true
	}
	return n, true
}
