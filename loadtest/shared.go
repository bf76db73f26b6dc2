package loadtest

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// The public documents a page polls (the item, the line's state) are the same for every caller and
// cacheable for a second. A crowd's shoppers in one process share one fetch of each a second, as
// browsers behind one caching proxy would: each shopper's poll is counted as a request the shopper made,
// and the fetches, made once, as what the process sent. A hundred thousand shoppers then cost the load
// tool what a hundred thousand pages cost a proxy, and what reaches the instances is what a cache in
// front of them lets through.

// sharedMaxAge is how long a fetched public document is served to the process's shoppers.
const sharedMaxAge = time.Second

// publicDoc is one public document, fetched at most once a sharedMaxAge however many ask.
type publicDoc struct {
	c    *Client
	path string

	mu       sync.Mutex
	at       time.Time     // when last fetched
	last     Answer        // the last answer fetched
	err      error         // the last fetch's error
	fetching chan struct{} // closed when the fetch in flight ends
	line     lineView      // for the line's document: what it said, and since when
	fetched  *atomic.Int64 // the client's count of fetches
}

// public answers the client's shared copy of the public document at path.
func (c *Client) public(path string) *publicDoc {
	if v, ok := c.docs.Load(path); ok {
		return v.(*publicDoc)
	}
	v, _ := c.docs.LoadOrStore(path, &publicDoc{c: c, path: path, fetched: &c.fetched})
	return v.(*publicDoc)
}

// Fetched answers how many times the client fetched a public document for its shoppers.
func (c *Client) Fetched() int64 { return c.fetched.Load() }

// get answers the document as last fetched, fetching it first when it is older than sharedMaxAge; one
// fetch at a time, the others waiting for it (a proxy's cache lock).
func (p *publicDoc) get(ctx context.Context) (Answer, lineView, error) {
	p.mu.Lock()
	if !p.at.IsZero() && time.Since(p.at) < sharedMaxAge {
		defer p.mu.Unlock()
		return p.last, p.line, nil
	}
	if ch := p.fetching; ch != nil { // a fetch is in flight: its answer is everyone's
		p.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return Answer{}, lineView{}, ctx.Err()
		}
		p.mu.Lock()
		defer p.mu.Unlock()
		return p.last, p.line, p.err
	}
	ch := make(chan struct{})
	p.fetching = ch
	p.mu.Unlock()

	a, err := p.c.Do(ctx, http.MethodGet, p.path, nil, nil)
	p.fetched.Add(1)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.fetching, p.err = nil, err
	switch {
	case err == nil && a.Status == http.StatusOK:
		p.last, p.at = a, time.Now()
		var d lineDoc
		if jsonUnmarshal(a.Body, &d) == nil {
			p.line = p.line.with(d)
		}
	case err == nil:
		p.err = &statusError{a}
	}
	close(ch)
	return p.last, p.line, p.err
}

type statusError struct{ a Answer }

func (e *statusError) Error() string { return "answered " + e.a.Kind() }

// lineDoc is the line's public document (GET /api/items/{id}/line).
type lineDoc struct {
	ItemID     int64     `json:"item_id"`
	State      string    `json:"state"`
	LetIn      int64     `json:"let_in"`
	StockLeft  int64     `json:"stock_left"`
	SoldOut    bool      `json:"sold_out"`
	Rate       float64   `json:"rate"`
	Drawn      bool      `json:"drawn"`
	Entrants   int64     `json:"entrants"`
	Readmitted int64     `json:"readmitted"`
	Held       int64     `json:"held"`
	ServerTime time.Time `json:"server_time"`
}

// over reports whether the document says the sale is over for everyone waiting: sold out or ended.
func (d lineDoc) over() bool { return d.SoldOut || d.State == "sold_out" || d.State == "ended" }

// lineView is the line's document as last fetched, with the server times at which this process first
// saw each change a shopper acts on: the line let in past a place, the sale over. A shopper that sees a
// change measures its lag from there: the time the server said it, in the first document that said it,
// to the moment the shopper saw it. It is the server's and the caches' delay, whatever the load tool's
// share of the cores: the shopper reads a document that is already in memory.
type lineView struct {
	doc     lineDoc
	letIns  []letInAt // increasing let_in, with the server time of the first document that showed it
	overAt  time.Time // the server time of the first document that said sold out or ended
	drawnAt time.Time // the server time of the first document that said drawn
}

type letInAt struct {
	letIn int64
	at    time.Time
}

// with answers the view after a new document; the history is shared by copies (append-only).
func (v lineView) with(d lineDoc) lineView {
	v.doc = d
	if n := len(v.letIns); d.LetIn > 0 && (n == 0 || d.LetIn > v.letIns[n-1].letIn) {
		v.letIns = append(v.letIns, letInAt{d.LetIn, d.ServerTime})
	}
	if d.Drawn && v.drawnAt.IsZero() {
		v.drawnAt = d.ServerTime
	}
	if d.over() && v.overAt.IsZero() {
		v.overAt = d.ServerTime
	}
	if !d.over() {
		v.overAt = time.Time{} // a unit came back: the next sold out is a change of its own
	}
	return v
}

// letInSince answers the server time of the first document that let the line in to place pos or past it.
func (v lineView) letInSince(pos int64) (time.Time, bool) {
	i := sort.Search(len(v.letIns), func(i int) bool { return v.letIns[i].letIn >= pos })
	if i == len(v.letIns) {
		return time.Time{}, false
	}
	return v.letIns[i].at, true
}

// LineTimeline is when the line's document, as a process fetched it, first said each change of a sale:
// the server times of the first documents that said drawn, let the line in at all, let it in furthest,
// and sold out (zero: never seen). It tells where a waiting room's time went, apart from the shoppers.
type LineTimeline struct {
	Drawn, FirstLetIn, LastLetIn, Over time.Time
	LetIn                              int64 // the furthest let_in seen
}

// LineTimeline answers the timeline of an item's line's document, as this client fetched it.
func (c *Client) LineTimeline(itemID int64) LineTimeline {
	v, ok := c.docs.Load(linePath(itemID))
	if !ok {
		return LineTimeline{}
	}
	p := v.(*publicDoc)
	p.mu.Lock()
	defer p.mu.Unlock()
	t := LineTimeline{Drawn: p.line.drawnAt, Over: p.line.overAt}
	if n := len(p.line.letIns); n > 0 {
		t.FirstLetIn, t.LastLetIn, t.LetIn = p.line.letIns[0].at, p.line.letIns[n-1].at, p.line.letIns[n-1].letIn
	}
	return t
}

func linePath(itemID int64) string { return fmt.Sprintf("/api/items/%d/line", itemID) }

// Merge answers the timeline of two processes' views: the earliest time each change was seen.
func (t LineTimeline) Merge(o LineTimeline) LineTimeline {
	early := func(a, b time.Time) time.Time {
		if a.IsZero() || !b.IsZero() && b.Before(a) {
			return b
		}
		return a
	}
	out := LineTimeline{Drawn: early(t.Drawn, o.Drawn), FirstLetIn: early(t.FirstLetIn, o.FirstLetIn), Over: early(t.Over, o.Over)}
	out.LetIn, out.LastLetIn = t.LetIn, t.LastLetIn
	if o.LetIn > t.LetIn || o.LetIn == t.LetIn && early(t.LastLetIn, o.LastLetIn).Equal(o.LastLetIn) {
		out.LetIn, out.LastLetIn = o.LetIn, o.LastLetIn
	}
	return out
}
