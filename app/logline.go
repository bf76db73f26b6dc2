package app

import (
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// logHandler is the server's slog handler (text or JSON, on the log buffer) that also lets the access
// log write its lines itself, in the same format, without slog's records.
type logHandler struct {
	slog.Handler
	w     io.Writer
	json  bool
	lines sync.Pool // *logLine
}

func newLogHandler(w io.Writer, json bool, opts *slog.HandlerOptions) *logHandler {
	h := &logHandler{w: w, json: json}
	if json {
		h.Handler = slog.NewJSONHandler(w, opts)
	} else {
		h.Handler = slog.NewTextHandler(w, opts)
	}
	h.lines.New = func() any { return &logLine{b: make([]byte, 0, 256), json: json} }
	return h
}

func (h *logHandler) line() *logLine { return h.lines.Get().(*logLine) }

// done writes the line (one Write: whole in the output) and keeps its buffer for the next one.
func (h *logHandler) done(l *logLine) {
	_, _ = h.w.Write(l.b)
	if cap(l.b) <= 4<<10 {
		l.b = l.b[:0]
		h.lines.Put(l)
	}
}

// logLine is one log line being written as slog's text handler (key=value, quoted when need be) or its
// JSON handler would write it.
type logLine struct {
	b    []byte
	json bool
}

func (l *logLine) start(t time.Time, level, msg string) {
	if l.json {
		l.b = append(l.b, `{"time":"`...)
		l.b = appendLogTime(l.b, t)
		l.b = append(l.b, `","level":"`...)
		l.b = append(l.b, level...)
		l.b = append(l.b, '"')
		l.str("msg", msg)
		return
	}
	l.b = append(l.b, "time="...)
	l.b = appendLogTime(l.b, t)
	l.b = append(l.b, " level="...)
	l.b = append(l.b, level...)
	l.str("msg", msg)
}

// logSecond is a second's time as a log line starts it, up to the seconds, and its zone: formatted once
// a second, not once a line.
type logSecond struct {
	unix       int64
	head, zone []byte
}

var lastLogSecond atomic.Pointer[logSecond]

// appendLogTime appends t as slog's text handler writes it (RFC 3339, milliseconds).
func appendLogTime(b []byte, t time.Time) []byte {
	s := lastLogSecond.Load()
	if s == nil || s.unix != t.Unix() {
		full := t.AppendFormat(nil, "2006-01-02T15:04:05Z07:00")
		s = &logSecond{unix: t.Unix(), head: full[:19], zone: full[19:]}
		lastLogSecond.Store(s)
	}
	b = append(b, s.head...)
	ms := t.Nanosecond() / int(time.Millisecond)
	b = append(b, '.', byte('0'+ms/100), byte('0'+ms/10%10), byte('0'+ms%10))
	return append(b, s.zone...)
}

func (l *logLine) key(k string) {
	if l.json {
		l.b = append(l.b, ',', '"')
		l.b = append(l.b, k...)
		l.b = append(l.b, '"', ':')
		return
	}
	l.b = append(l.b, ' ')
	l.b = append(l.b, k...)
	l.b = append(l.b, '=')
}

func (l *logLine) str(k, v string) {
	l.key(k)
	l.b = appendLogString(l.b, v, l.json)
}

func (l *logLine) bytes(k string, v []byte) {
	l.key(k)
	l.b = appendLogString(l.b, v, l.json)
}

func (l *logLine) int(k string, v int64) {
	l.key(k)
	l.b = strconv.AppendInt(l.b, v, 10)
}

// duration is written as slog writes a time.Duration: nanoseconds in JSON; in text, a duration Go
// parses, in milliseconds ("0.850ms").
func (l *logLine) duration(k string, d time.Duration) {
	l.key(k)
	if l.json {
		l.b = strconv.AppendInt(l.b, int64(d), 10)
		return
	}
	us := max(int64(d/time.Microsecond), 0)
	l.b = strconv.AppendInt(l.b, us/1000, 10)
	frac := us % 1000
	l.b = append(l.b, '.', byte('0'+frac/100), byte('0'+frac/10%10), byte('0'+frac%10), 'm', 's')
}

func (l *logLine) ip(k string, ip net.IP) {
	l.key(k)
	if l.json {
		l.b = append(l.b, '"')
	}
	if a, ok := netip.AddrFromSlice(ip); ok {
		l.b = a.Unmap().AppendTo(l.b)
	}
	if l.json {
		l.b = append(l.b, '"')
	}
}

func (l *logLine) end() {
	if l.json {
		l.b = append(l.b, '}', '\n')
		return
	}
	l.b = append(l.b, '\n')
}

// appendLogString appends s as a value: in JSON a string; in text bare, or quoted when it is empty or
// holds a space, '=', '"', a control character or a byte beyond ASCII (slog's text handler quotes fewer
// of those; quoted is never wrong).
func appendLogString[S string | []byte](b []byte, s S, asJSON bool) []byte {
	plain := len(s) > 0
	for i := 0; i < len(s) && plain; i++ {
		ch := s[i]
		plain = ch > ' ' && ch < 0x7f && ch != '"' && ch != '\\' && (asJSON || ch != '=')
	}
	switch {
	case plain && asJSON:
		b = append(b, '"')
		b = append(b, s...)
		return append(b, '"')
	case plain:
		return append(b, s...)
	case asJSON:
		q, _ := json.Marshal(string(s)) // escapes what JSON needs, and replaces bytes that are not UTF-8
		return append(b, q...)
	}
	return strconv.AppendQuote(b, string(s))
}
