package testkit

import (
	"slices"
	"sync"
	"testing"
	"time"

	"listingproxy/upstream"
)

// Changes is an upstream.ChangeSink for tests of a change feed: it queues
// every change reported and remembers the feed's last Live state.
type Changes struct {
	ch   chan upstream.Change
	mu   sync.Mutex
	live error
	ups  int // Live(nil) reports
}

// NewChanges returns a sink holding up to 10,000 unread changes.
func NewChanges() *Changes { return &Changes{ch: make(chan upstream.Change, 10000)} }

// Changed implements upstream.ChangeSink.
func (c *Changes) Changed(ch upstream.Change) { c.ch <- ch }

// Live implements upstream.ChangeSink.
func (c *Changes) Live(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.live = err
	if err == nil {
		c.ups++
	}
}

// State returns how many Live(nil) were reported and the last Live
// error.
func (c *Changes) State() (ups int, last error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ups, c.live
}

// Next returns the next change, its ids sorted, failing t if none comes
// within three minutes (a safety net: tests wait on the change itself).
func (c *Changes) Next(t testing.TB) upstream.Change {
	t.Helper()
	select {
	case ch := <-c.ch:
		slices.Sort(ch.Properties)
		slices.Sort(ch.Agents)
		return ch
	case <-time.After(3 * time.Minute):
		t.Fatal("no change reported")
		return upstream.Change{}
	}
}

// Pending returns the changes reported and not read yet, without waiting.
func (c *Changes) Pending() []upstream.Change {
	var out []upstream.Change
	for {
		select {
		case ch := <-c.ch:
			out = append(out, ch)
		default:
			return out
		}
	}
}
