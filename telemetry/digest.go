package telemetry

import (
	"cmp"
	"context"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"
)

// DigestOptions configure NewErrorDigest. The zero value works.
type DigestOptions struct {
	// Logger receives the "backend errors" lines at Error. Default:
	// discard.
	Logger *slog.Logger
	// Interval is the least time between two lines of one backend.
	// Default 10s.
	Interval time.Duration
	// Now is the clock. Default time.Now.
	Now func() time.Time
	// AfterFunc runs f once d has passed (the line that ends an interval
	// with errors left to report). Default time.AfterFunc; tests pass a fake
	// that they fire by hand.
	AfterFunc func(d time.Duration, f func())
}

// ErrorDigest turns the failures behind 5xx answers into one log line per
// backend per interval, with a count, instead of a line per request (a
// backend outage would otherwise flood the log). The first failure of a
// quiet backend is logged at once; the ones within the next Interval are
// counted and logged together when it ends. Per request detail stays
// available at debug level in the proxy's own log.
type ErrorDigest struct {
	log       *slog.Logger
	every     time.Duration
	now       func() time.Time
	afterFunc func(time.Duration, func())

	mu       sync.Mutex
	backends map[string]*backendErrors
}

type backendErrors struct {
	total     uint64    // since start
	pending   uint64    // since the last line
	since     time.Time // first of pending
	lastErr   string
	lastAt    time.Time
	status    int
	quietTill time.Time // no line before this
	scheduled bool      // a flush is due at quietTill
}

// NewErrorDigest returns an ErrorDigest.
func NewErrorDigest(o DigestOptions) *ErrorDigest {
	d := &ErrorDigest{log: o.Logger, every: cmp.Or(o.Interval, 10*time.Second), now: o.Now, afterFunc: o.AfterFunc,
		backends: map[string]*backendErrors{}}
	if d.log == nil {
		d.log = slog.New(slog.DiscardHandler)
	}
	if d.now == nil {
		d.now = time.Now
	}
	if d.afterFunc == nil {
		d.afterFunc = func(d time.Duration, f func()) { time.AfterFunc(d, f) }
	}
	return d
}

// digestLine is one "backend errors" line, built under the lock and
// written outside it.
type digestLine struct {
	backend string
	b       backendErrors
}

// Record notes a failure of backend answered with status.
func (d *ErrorDigest) Record(backend string, status int, err error) {
	now := d.now()
	d.mu.Lock()
	b := d.backends[backend]
	if b == nil {
		b = &backendErrors{}
		d.backends[backend] = b
	}
	b.total++
	if b.pending == 0 {
		b.since = now
	}
	b.pending++
	b.lastErr, b.lastAt, b.status = err.Error(), now, status
	var line *digestLine
	switch {
	case !now.Before(b.quietTill):
		line = d.take(backend, b, now)
	case !b.scheduled:
		b.scheduled = true
		d.afterFunc(b.quietTill.Sub(now), func() { d.flush(backend) })
	}
	d.mu.Unlock()
	d.write(line)
}

// take returns the line for b's pending failures and starts a quiet
// interval. d.mu is held.
func (d *ErrorDigest) take(name string, b *backendErrors, now time.Time) *digestLine {
	line := &digestLine{backend: name, b: *b}
	b.pending = 0
	b.quietTill = now.Add(d.every)
	return line
}

func (d *ErrorDigest) flush(backend string) {
	d.mu.Lock()
	b := d.backends[backend]
	b.scheduled = false
	var line *digestLine
	if b.pending > 0 {
		line = d.take(backend, b, d.now())
	}
	d.mu.Unlock()
	d.write(line)
}

// Flush writes the failures not yet logged (at shutdown).
func (d *ErrorDigest) Flush() {
	d.mu.Lock()
	var lines []*digestLine
	for _, name := range slices.Sorted(maps.Keys(d.backends)) {
		if b := d.backends[name]; b.pending > 0 {
			lines = append(lines, d.take(name, b, d.now()))
		}
	}
	d.mu.Unlock()
	for _, l := range lines {
		d.write(l)
	}
}

func (d *ErrorDigest) write(l *digestLine) {
	if l == nil {
		return
	}
	d.log.LogAttrs(context.Background(), slog.LevelError, "backend errors", // no request: the line spans many
		slog.String("backend", l.backend),
		slog.Uint64("count", l.b.pending),
		slog.Time("since", l.b.since),
		slog.Int("last_status", l.b.status),
		slog.String("last_error", l.b.lastErr),
		slog.Uint64("total", l.b.total),
	)
}

// BackendErrorStats are one backend's failures since start.
type BackendErrorStats struct {
	Backend string
	// Errors counts the 5xx answers its failures caused.
	Errors uint64
	// LastError and LastAt describe the latest.
	LastError string
	LastAt    time.Time
}

// Backends returns the failures of each backend that had any, by name.
func (d *ErrorDigest) Backends() []BackendErrorStats {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]BackendErrorStats, 0, len(d.backends))
	for _, name := range slices.Sorted(maps.Keys(d.backends)) {
		b := d.backends[name]
		out = append(out, BackendErrorStats{Backend: name, Errors: b.total, LastError: b.lastErr, LastAt: b.lastAt})
	}
	return out
}
