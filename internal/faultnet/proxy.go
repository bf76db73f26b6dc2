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
	conns  map[net.Conn]string // each connection, either end, and the source IP of its client
	healed chan struct{}       // closed while the link is up; a fresh one while it is cut
	refuse bool                // while cut: connections are closed, not stalled
	spared map[string]bool     // while cut: the source addresses (IPs) whose connections still pass
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
	p := &Proxy{target: target, ln: ln, conns: map[net.Conn]string{}, healed: up}
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

// state answers, for a connection from src, the channel closed when the link is up, and whether it
// refuses.
func (p *Proxy) state(src string) (chan struct{}, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.spared[src] {
		return nil, false
	}
	return p.healed, p.refuse
}

// source is the IP a connection comes from.
func source(c net.Conn) string {
	host, _, err := net.SplitHostPort(c.RemoteAddr().String())
	if err != nil {
		return c.RemoteAddr().String()
	}
	return host
}

func (p *Proxy) track(c net.Conn, src string, on bool) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if on && p.conns == nil {
		return false // closed
	}
	if on {
		p.conns[c] = src
	} else {
		delete(p.conns, c)
	}
	return true
}

func (p *Proxy) forward(c net.Conn) {
	src := source(c)
	if !p.track(c, src, true) {
		c.Close()
		return
	}
	defer p.track(c, src, false)
	healed, refuse := p.state(src)
	if refuse {
		c.Close()
		return
	}
	if healed != nil {
		<-healed // a connection made while the link is down waits, as its SYN would be retried
	}
	s, err := net.Dial("tcp", p.target)
	if err != nil {
		c.Close()
		return
	}
	if !p.track(s, src, true) {
		c.Close()
		s.Close()
		return
	}
	defer p.track(s, src, false)
	var wg sync.WaitGroup
	wg.Go(func() { p.pipe(s, c, src) })
	p.pipe(c, s, src)
	wg.Wait()
}

// pipe copies src to dst; while the link is cut the bytes wait (TCP would retransmit them), and they
// arrive once it is back, unless an end gave up meanwhile.
func (p *Proxy) pipe(dst, src net.Conn, from string) {
	defer dst.Close()
	defer src.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			healed, refuse := p.state(from)
			if refuse {
				return
			}
			if healed != nil {
				<-healed
			}
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
func (p *Proxy) Cut(refuse bool) { p.CutExcept(refuse) }

// CutExcept breaks the link as Cut does for every connection but those from the source IPs spared: a
// partition that cuts a server from some of its peers and not from others. On one host every process
// can have a loopback address of its own (127.0.0.2, ...) to come from.
func (p *Proxy) CutExcept(refuse bool, spared ...string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.healed:
		p.healed = make(chan struct{})
	default:
	}
	p.refuse = refuse
	p.spared = map[string]bool{}
	for _, ip := range spared {
		p.spared[ip] = true
	}
	if refuse {
		for c, src := range p.conns {
			if !p.spared[src] {
				c.Close()
			}
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
	p.spared = nil
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
