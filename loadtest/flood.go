package loadtest

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// A connection flood, as issue 28's attacker makes one: many connections from many addresses, each
// sending half a request and then a header line every few seconds, opened again when the server closes
// them. It sends to loopback addresses only.

// FloodOptions say how big a flood is and where it comes from.
type FloodOptions struct {
	Target  string        // host:port of the server, on loopback
	Conns   int           // connections held at once, at most
	Sources int           // source addresses, 127.0.2.1 and on (Linux routes all of 127/8 to lo)
	Trickle time.Duration // a header line this often on each connection
	For     time.Duration // how long the flood lasts
	Health  []string      // URLs of /healthz to ask every 100 ms during the flood
}

// FloodReport is what a flood saw.
type FloodReport struct {
	Opened         int64 // connections the server accepted (the handshake completed)
	MaxHeld        int64 // the most held open at once
	HeldAtRefusal  int64 // connections held when the server first answered one with a refusal (0: never)
	Refused        map[int]int64
	ClosedByServer int64 // connections the server closed without answering (timeouts, shedding)
	DialErrors     int64
	Health         []HealthReport
}

// HealthReport is how one /healthz answered during a flood.
type HealthReport struct {
	URL          string
	Asked, OK    int
	P50, Max     time.Duration // of the answers that came
	FirstOKAfter time.Duration // from the flood's start to the first 200 (0: none)
}

func (r *FloodReport) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "flood: %d connections opened, at most %d held at once, %d closed by the server, %d dials failed; ",
		r.Opened, r.MaxHeld, r.ClosedByServer, r.DialErrors)
	if r.HeldAtRefusal == 0 {
		b.WriteString("never refused")
	} else {
		codes := make([]int, 0, len(r.Refused))
		for c := range r.Refused {
			codes = append(codes, c)
		}
		sort.Ints(codes)
		fmt.Fprintf(&b, "first refusal with %d held", r.HeldAtRefusal)
		for _, c := range codes {
			fmt.Fprintf(&b, ", %d × %d", r.Refused[c], c)
		}
	}
	for _, h := range r.Health {
		fmt.Fprintf(&b, "\n  %s: %d of %d answered 200, p50 %v, max %v, first 200 after %v", h.URL, h.OK, h.Asked,
			h.P50.Round(time.Millisecond), h.Max.Round(time.Millisecond), h.FirstOKAfter.Round(time.Millisecond))
	}
	return b.String()
}

// Flood runs a connection flood until o.For has passed or ctx ends.
func Flood(ctx context.Context, o FloodOptions) *FloodReport {
	ctx, cancel := context.WithTimeout(ctx, o.For)
	defer cancel()
	start := time.Now()
	rep := &FloodReport{Refused: map[int]int64{}}
	var held, maxHeld, opened, closed, dialErrs, heldAtRefusal atomic.Int64
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := range o.Conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			src := &net.TCPAddr{IP: net.IPv4(127, 0, 2, byte(1+i%max(min(o.Sources, 250), 1)))}
			// Spread the first dials over the first second, as a real flood ramps.
			if !sleep(ctx, time.Duration(i)*time.Second/time.Duration(o.Conns)) {
				return
			}
			for ctx.Err() == nil {
				d := net.Dialer{LocalAddr: src, Timeout: 2 * time.Second}
				c, err := d.DialContext(ctx, "tcp", o.Target)
				if err != nil {
					dialErrs.Add(1)
					sleep(ctx, 100*time.Millisecond)
					continue
				}
				opened.Add(1)
				n := held.Add(1)
				for m := maxHeld.Load(); n > m && !maxHeld.CompareAndSwap(m, n); m = maxHeld.Load() {
				}
				code := trickle(ctx, c, o.Trickle)
				h := held.Add(-1)
				switch {
				case code > 0:
					heldAtRefusal.CompareAndSwap(0, h+1)
					mu.Lock()
					rep.Refused[code]++
					mu.Unlock()
					sleep(ctx, 50*time.Millisecond)
				case ctx.Err() == nil:
					closed.Add(1)
				}
			}
		}()
	}
	var hw sync.WaitGroup
	for _, u := range o.Health {
		hr := &HealthReport{URL: u}
		rep.Health = append(rep.Health, HealthReport{})
		idx := len(rep.Health) - 1
		hw.Add(1)
		go func() {
			defer hw.Done()
			client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
			var took []time.Duration
			tick := time.NewTicker(100 * time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-ctx.Done():
					sort.Slice(took, func(i, j int) bool { return took[i] < took[j] })
					if len(took) > 0 {
						hr.P50, hr.Max = took[len(took)/2], took[len(took)-1]
					}
					mu.Lock()
					rep.Health[idx] = *hr
					mu.Unlock()
					return
				case <-tick.C:
				}
				t0 := time.Now()
				hr.Asked++
				resp, err := client.Get(u)
				if err != nil {
					continue
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					hr.OK++
					took = append(took, time.Since(t0))
					if hr.FirstOKAfter == 0 {
						hr.FirstOKAfter = time.Since(start)
					}
				}
			}
		}()
	}
	wg.Wait()
	hw.Wait()
	rep.Opened, rep.MaxHeld, rep.ClosedByServer, rep.DialErrors, rep.HeldAtRefusal = opened.Load(), maxHeld.Load(), closed.Load(), dialErrs.Load(), heldAtRefusal.Load()
	return rep
}

// trickle sends half a request on c and then a header line every interval, until the server closes c
// (0) or answers it (the answer's status: a refusal), or ctx ends.
func trickle(ctx context.Context, c net.Conn, interval time.Duration) int {
	defer c.Close()
	answered := make(chan int, 1)
	go func() {
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			answered <- 0
			return
		}
		resp.Body.Close()
		answered <- resp.StatusCode
	}()
	if _, err := io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: flood\r\n"); err != nil {
		return <-answered
	}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case code := <-answered:
			return code
		case <-ctx.Done():
			return 0
		case <-tick.C:
			_ = c.SetWriteDeadline(time.Now().Add(time.Second))
			if _, err := io.WriteString(c, "X-Trickle: 1\r\n"); err != nil {
				_ = c.SetReadDeadline(time.Now().Add(time.Second))
				return <-answered
			}
		}
	}
}
