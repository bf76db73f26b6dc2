package main

import (
	"bytes"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// balancer spreads requests over the instances in turn, as nginx in front of them does: a request that
// cannot reach an instance (nothing listens: it died) goes to the next; one whose instance dies while it
// is being answered gets 502, as a proxy answers it.
type balancer struct {
	backends []*instance
	next     atomic.Uint64
	client   *http.Client

	mu   sync.Mutex
	buys []buyAnswer // the buys it answered since the last take
}

// buyAnswer is a buy the balancer answered: when it came and went, and what it said.
type buyAnswer struct {
	item           string // the item's id, from the path
	sent, answered time.Time
	status         int
	unconfirmed    bool // a 202 that said unconfirmed: taken, but no replica had it in time
}

// takeBuys answers the buys answered since it was last called.
func (b *balancer) takeBuys() []buyAnswer {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := b.buys
	b.buys = nil
	return out
}

// buyItem answers the item of a buy's path (/api/items/ID/buy/PATH), or "".
func buyItem(r *http.Request) string {
	if r.Method != http.MethodPost {
		return ""
	}
	rest, ok := strings.CutPrefix(r.URL.Path, "/api/items/")
	if !ok {
		return ""
	}
	id, tail, ok := strings.Cut(rest, "/")
	if !ok || !strings.HasPrefix(tail, "buy/") {
		return ""
	}
	return id
}

func newBalancer(backends []*instance) *balancer {
	// Idle connections are kept for long: connections opened and closed with every burst of load would
	// read, in the soak, as the instances' descriptors and goroutines coming and going.
	tr := &http.Transport{MaxIdleConnsPerHost: 1000, MaxConnsPerHost: 1000, IdleConnTimeout: 30 * time.Minute,
		DialContext: (&net.Dialer{Timeout: 2 * time.Second}).DialContext}
	return &balancer{backends: backends, client: &http.Client{Transport: tr, Timeout: 30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

// hop-by-hop headers a proxy does not pass on.
var hopHeaders = []string{"Connection", "Keep-Alive", "Proxy-Connection", "Transfer-Encoding", "Upgrade", "Te", "Trailer"}

func (b *balancer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20))
	if err != nil {
		http.Error(w, "request too large", http.StatusRequestEntityTooLarge)
		return
	}
	sent, item := time.Now(), buyItem(r)
	first := int(b.next.Add(1))
	for i := range b.backends {
		in := b.backends[(first+i)%len(b.backends)]
		req, err := http.NewRequestWithContext(r.Context(), r.Method, in.base()+r.URL.RequestURI(), bytes.NewReader(body))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		req.Header = r.Header.Clone()
		for _, h := range hopHeaders {
			req.Header.Del(h)
		}
		req.Host = r.Host
		resp, err := b.client.Do(req)
		if err != nil {
			if errors.Is(err, syscall.ECONNREFUSED) {
				continue // nothing listens there: it never saw the request
			}
			http.Error(w, "bad gateway", http.StatusBadGateway)
			return
		}
		for k, v := range resp.Header {
			w.Header()[k] = v
		}
		for _, h := range hopHeaders {
			w.Header().Del(h)
		}
		if item == "" {
			w.WriteHeader(resp.StatusCode)
			_, _ = io.Copy(w, resp.Body)
			resp.Body.Close()
			return
		}
		// A buy's answer is read whole (a few bytes) to tell a 202 queued from a 202 unconfirmed.
		answer, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		b.mu.Lock()
		b.buys = append(b.buys, buyAnswer{item: item, sent: sent, answered: time.Now(), status: resp.StatusCode,
			unconfirmed: resp.StatusCode == http.StatusAccepted && bytes.Contains(answer, []byte(`"unconfirmed"`))})
		b.mu.Unlock()
		w.WriteHeader(resp.StatusCode)
		_, _ = w.Write(answer)
		return
	}
	http.Error(w, "bad gateway: no instance is up", http.StatusBadGateway)
}
