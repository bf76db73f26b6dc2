package faultnet_test

import (
	"bufio"
	"net"
	"testing"
	"time"

	"seckill/internal/faultnet"
)

// echo serves lines back on a free port.
func echo(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					c.Write([]byte(line))
				}
			}()
		}
	}()
	return ln.Addr().String()
}

func ask(t *testing.T, c net.Conn, r *bufio.Reader, line string, within time.Duration) (string, error) {
	t.Helper()
	if _, err := c.Write([]byte(line + "\n")); err != nil {
		return "", err
	}
	c.SetReadDeadline(time.Now().Add(within))
	got, err := r.ReadString('\n')
	return got, err
}

// A silent cut holds the bytes of a connection and new connections until it heals, then delivers them
// (as TCP retransmits); a refusing cut closes them.
func TestCutsAsTheClientSeesThem(t *testing.T) {
	p, err := faultnet.Listen("127.0.0.1:0", echo(t))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := bufio.NewReader(c)
	if got, err := ask(t, c, r, "one", time.Second); err != nil || got != "one\n" {
		t.Fatalf("through the proxy: %q %v", got, err)
	}

	p.Cut(false)
	if got, err := ask(t, c, r, "two", 300*time.Millisecond); err == nil {
		t.Fatalf("an answer across a silent cut: %q", got)
	}
	late, err := net.Dial("tcp", p.Addr()) // accepted, then silent
	if err != nil {
		t.Fatal(err)
	}
	defer late.Close()
	lr := bufio.NewReader(late)
	if got, err := ask(t, late, lr, "new", 300*time.Millisecond); err == nil {
		t.Fatalf("a new connection answered across a silent cut: %q", got)
	}
	p.Heal()
	c.SetReadDeadline(time.Now().Add(time.Second))
	if got, err := r.ReadString('\n'); err != nil || got != "two\n" {
		t.Errorf("the bytes held by the cut after it healed: %q %v", got, err)
	}
	late.SetReadDeadline(time.Now().Add(time.Second))
	if got, err := lr.ReadString('\n'); err != nil || got != "new\n" {
		t.Errorf("the connection made during the cut after it healed: %q %v", got, err)
	}

	p.Cut(true)
	if _, err := ask(t, c, r, "three", time.Second); err == nil {
		t.Error("a connection still answers after a refusing cut")
	}
	refused, err := net.Dial("tcp", p.Addr())
	if err == nil {
		rr := bufio.NewReader(refused)
		if got, err := ask(t, refused, rr, "x", time.Second); err == nil {
			t.Errorf("a new connection answered during a refusing cut: %q", got)
		}
		refused.Close()
	}
	p.Heal()
	again, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if got, err := ask(t, again, bufio.NewReader(again), "back", time.Second); err != nil || got != "back\n" {
		t.Errorf("after healing: %q %v", got, err)
	}
}

// A cut that spares a source cuts every other one: a server cut from its peers and not from its clients.
func TestCutExceptSparesItsSources(t *testing.T) {
	p, err := faultnet.Listen("127.0.0.1:0", echo(t))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	from := func(ip string) (net.Conn, *bufio.Reader) {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
		c, err := d.Dial("tcp", p.Addr())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c, bufio.NewReader(c)
	}
	client, cr := from("127.0.0.1")
	peer, pr := from("127.0.0.2")
	p.CutExcept(false, "127.0.0.1")
	if got, err := ask(t, client, cr, "client", time.Second); err != nil || got != "client\n" {
		t.Errorf("a spared source across the cut: %q %v", got, err)
	}
	if got, err := ask(t, peer, pr, "peer", 300*time.Millisecond); err == nil {
		t.Errorf("a source not spared answered across the cut: %q", got)
	}
	late, lr := from("127.0.0.1")
	if got, err := ask(t, late, lr, "late", time.Second); err != nil || got != "late\n" {
		t.Errorf("a spared source's new connection during the cut: %q %v", got, err)
	}
	p.Heal()
	peer.SetReadDeadline(time.Now().Add(time.Second))
	if got, err := pr.ReadString('\n'); err != nil || got != "peer\n" {
		t.Errorf("the cut source's bytes after it healed: %q %v", got, err)
	}
}
