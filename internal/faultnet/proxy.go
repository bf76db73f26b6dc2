// Package faultnet is a TCP proxy that can cut the network between a process and a server, as a broken
// link or a firewall would: the chaos run and the tests put it between the app and PostgreSQL or Redis.
package faultnet

import (
	"net"
	"sync"
)

// Proxy forwards every connection it accepts to its target, until it is cut.
type Proxy struct {
	target string
	ln     net.Listener
	mu     sync.Mutex
	conns  map[net.Conn]bool
	healed chan struct{} // closed while the link is up; a fresh one while it is cut
	refuse bool          // while cut: connections are closed, not stalled
}

// Listen starts a proxy to target on addr ("127.0.0.1:0" for any free port). It keeps its port for good:
// while cut it still accepts, so no other process can take the port before the link is back.
func Listen(addr, target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	up := make(chan struct{})
	close(up)
	p := &Proxy{target: target, ln: ln, conns: map[net.Conn]bool{}, healed: up}
	go p.serve()
	return p, nil
}

// Addr is the address the proxy listens on.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

func (p *Proxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		go p.forward(c)
	}
}

// state answers the channel closed when the link is up, and whether it refuses.
func (p *Proxy) state() (chan struct{}, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.healed, p.refuse
}

func (p *Proxy) track(c net.Conn, on bool) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if on && p.conns == nil {
		return false // closed
	}
	if on {
		p.conns[c] = true
	} else {
		delete(p.conns, c)
	}
	return true
}

func (p *Proxy) forward(c net.Conn) {
	if !p.track(c, true) {
		c.Close()
		return
	}
	defer p.track(c, false)
	healed, refuse := p.state()
	if refuse {
		c.Close()
		return
	}
	<-healed // a connection made while the link is down waits, as its SYN would be retried
	s, err := net.Dial("tcp", p.target)
	if err != nil {
		c.Close()
		return
	}
	if !p.track(s, true) {
		c.Close()
		s.Close()
		return
	}
	defer p.track(s, false)
	var wg sync.WaitGroup
	wg.Go(func() { p.pipe(s, c) })
	p.pipe(c, s)
	wg.Wait()
}

// pipe copies src to dst; while the link is cut the bytes wait (TCP would retransmit them), and they
// arrive once it is back, unless an end gave up meanwhile.
func (p *Proxy) pipe(dst, src net.Conn) {
	defer dst.Close()
	defer src.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			healed, refuse := p.state()
			if refuse {
				return
			}
			<-healed
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// Cut breaks the link. refuse: every connection is closed and new ones are closed at once (a server
// gone, a firewall that rejects). Otherwise the link goes silent: bytes and new connections wait until
// Heal, and the clients' own timeouts decide (a cable pulled, a partition).
func (p *Proxy) Cut(refuse bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.healed:
		p.healed = make(chan struct{})
	default:
	}
	p.refuse = refuse
	if refuse {
		for c := range p.conns {
			c.Close()
		}
	}
}

// Heal lets connections through again.
func (p *Proxy) Heal() {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.healed:
	default:
		close(p.healed)
	}
	p.refuse = false
}

// Close stops the proxy and closes every connection.
func (p *Proxy) Close() error {
	err := p.ln.Close()
	p.mu.Lock()
	conns := p.conns
	p.conns = nil
	p.mu.Unlock()
	for c := range conns {
		c.Close()
	}
	p.Heal()
	return err
}
