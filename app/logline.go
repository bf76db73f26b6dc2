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
	w       io.Writer
	striped stripedWriter // w, when it takes lines in stripes
	json    bool
	lines   sync.Pool // *logLine
}

func newLogHandler(w io.Writer, json bool, opts *slog.HandlerOptions) *logHandler {
	h := &logHandler{w: w, json: json}
	h.striped, _ = w.(stripedWriter)
	if json {
		h.Handler = slog.NewJSONHandler(w, opts)
	} else {
		h.Handler = slog.NewTextHandler(w, opts)
	}
	h.lines.New = func() any { return &logLine{b: make([]byte, 0, 256), json: json} }
	return h
}

func (h *logHandler) line() *logLine { return h.lines.Get().(*logLine) }

// stripedWriter takes lines in stripes (logBuffer): those written with one key keep their order.
type stripedWriter interface {
	WriteFrom(p []byte, key uint64)
}

// doneFrom writes the line of the source key (a connection), in one Write (whole in the output), through
// the writer's stripe for the key when it has stripes, and keeps the line's buffer for the next one.
func (h *logHandler) doneFrom(l *logLine, key uint64) {
	if h.striped != nil {
		h.striped.WriteFrom(l.b, key)
	} else {
		_, _ = h.w.Write(l.b)
	}
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
		l.b = appendLogTime(l.b, t, true)
		l.b = append(l.b, `","level":"`...)
		l.b = append(l.b, level...)
		l.b = append(l.b, '"')
		l.str("msg", msg)
		return
	}
	l.b = append(l.b, "time="...)
	l.b = appendLogTime(l.b, t, false)
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

// appendLogTime appends t as slog writes it: RFC 3339 with milliseconds in text, with nanoseconds (trailing
// zeros left out) in JSON.
func appendLogTime(b []byte, t time.Time, nanos bool) []byte {
	s := lastLogSecond.Load()
	if s == nil || s.unix != t.Unix() {
		full := t.AppendFormat(nil, "2006-01-02T15:04:05Z07:00")
		s = &logSecond{unix: t.Unix(), head: full[:19], zone: full[19:]}
		lastLogSecond.Store(s)
	}
	b = append(b, s.head...)
	if nanos {
		b = appendFraction(b, int64(t.Nanosecond()), 9, true)
	} else {
		b = appendFraction(b, int64(t.Nanosecond())/int64(time.Millisecond), 3, false)
	}
	return append(b, s.zone...)
}

// appendFraction appends '.' and f as digits decimals, its trailing zeros left out when trim (and then
// nothing at all for 0).
func appendFraction(b []byte, f int64, digits int, trim bool) []byte {
	var d [9]byte
	for i := digits - 1; i >= 0; i-- {
		d[i] = byte('0' + f%10)
		f /= 10
	}
	n := digits
	for trim && n > 0 && d[n-1] == '0' {
		n--
	}
	if n == 0 {
		return b
	}
	return append(append(b, '.'), d[:n]...)
}

// appendDuration appends d as time.Duration's String writes it ("725.123µs", "1.5ms"), without the string.
func appendDuration(b []byte, d time.Duration) []byte {
	var unit time.Duration // the unit written, in nanoseconds
	var digits int         // a fraction's digits: nanoseconds below the unit
	var suffix string
	switch {
	case d < 0 || d >= time.Minute:
		return append(b, d.String()...) // not a request's latency: rare, and String knows minutes
	case d == 0:
		return append(b, "0s"...)
	case d < time.Microsecond:
		return append(strconv.AppendInt(b, int64(d), 10), "ns"...)
	case d < time.Millisecond:
		unit, digits, suffix = time.Microsecond, 3, "µs"
	case d < time.Second:
		unit, digits, suffix = time.Millisecond, 6, "ms"
	default:
		unit, digits, suffix = time.Second, 9, "s"
	}
	b = strconv.AppendInt(b, int64(d/unit), 10)
	b = appendFraction(b, int64(d%unit), digits, true)
	return append(b, suffix...)
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

// duration is written as slog writes a time.Duration: nanoseconds in JSON, its String in text.
func (l *logLine) duration(k string, d time.Duration) {
	l.key(k)
	if l.json {
		l.b = strconv.AppendInt(l.b, int64(d), 10)
		return
	}
	l.b = appendDuration(l.b, d)
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
