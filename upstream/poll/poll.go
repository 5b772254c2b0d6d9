// Package poll is the change poller ("poll" feed): for a legacy endpoint
// that follows the spec but tells nobody what changed, it reads each
// tenant's short property list (which carries id and last_updated) every
// Interval, paged by id, compares it with the list it saw last, and reports
// the properties whose last_updated changed (an update), that appeared (an
// insert: their lists are purged too) and that disappeared (a delete).
//
// It reads through the backend as the proxy calls it, breakers and
// concurrency limits included, so a poll never adds to a failing backend's
// load beyond what the breakers allow, and it runs at most one poll at a
// time per tenant and country. Its cost is one list call per PageSize
// properties of each tenant and country per Interval; Calls counts them.
//
// Agents are not polled: the spec's agent list carries no last_updated.
//
// It imports upstream and normalize only.
package poll

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"slices"
	"strconv"
	"sync"
	"time"

	"listingproxy/normalize"
	"listingproxy/upstream"
)

// DefaultPageSize is the limit of each list call of a poll.
const DefaultPageSize = 100

// maxNamed is the most ids one reported change names; past it the change
// names none, which purges the tenant (as the PostgreSQL trigger does past
// 300 rows): a bulk change is cheaper to refill than to purge by entity.
const maxNamed = 300

// maxPages bounds one poll: a legacy that answers every page with new
// ids (or ignores offset) cannot keep a poll running forever.
const maxPages = 10000

// Options configure a Poller. Backend, Scopes and Interval are required.
type Options struct {
	// Backend is what the poller reads: the backend as the proxy calls
	// it (with its breakers).
	Backend upstream.Backend
	// Scopes are the tenants and countries polled, each on its own.
	Scopes []upstream.Scope
	// Interval is the time from the end of one poll of a scope to the
	// start of its next.
	Interval time.Duration
	// PageSize is each list call's limit. Default DefaultPageSize.
	PageSize int
	// Calls, when set, is told of every list call made (metrics).
	Calls func(s upstream.Scope)
	// After waits between polls. Default time.After; tests pass their
	// own to poll on demand.
	After func(time.Duration) <-chan time.Time
	// Logger defaults to discarding.
	Logger *slog.Logger
}

// Poller is a change feed that polls.
type Poller struct {
	o Options
}

// New returns a Poller of o.
func New(o Options) (*Poller, error) {
	switch {
	case o.Backend == nil:
		return nil, errors.New("poll: no backend")
	case len(o.Scopes) == 0:
		return nil, errors.New("poll: no tenants")
	case o.Interval <= 0:
		return nil, fmt.Errorf("poll: interval %s: must be positive", o.Interval)
	}
	if o.PageSize <= 0 {
		o.PageSize = DefaultPageSize
	}
	if o.After == nil {
		o.After = time.After
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &Poller{o: o}, nil
}

// Name implements upstream.ChangeFeed.
func (*Poller) Name() string { return "poll" }

// Watch implements upstream.ChangeFeed: it polls every scope until ctx
// ends. The first poll of a scope (at start, or when this replica takes
// the feed over) knows nothing of what came before, so it reports a Gap of
// the tenant; later polls report what changed. A failed poll is reported
// as Live(err) and its scope's last list is kept, so the next successful
// poll reports everything that changed since the last good one.
func (p *Poller) Watch(ctx context.Context, sink upstream.ChangeSink) error {
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex // one sink call at a time
		errs = make([]error, len(p.o.Scopes))
	)
	report := func(i int, err error, cs []upstream.Change) {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range cs {
			sink.Changed(c)
		}
		errs[i] = err
		sink.Live(errors.Join(errs...))
	}
	for i, s := range p.o.Scopes {
		wg.Go(func() { p.watch(ctx, i, s, report) })
	}
	wg.Wait()
	return nil
}

// watch polls one scope until ctx ends.
func (p *Poller) watch(ctx context.Context, i int, s upstream.Scope, report func(int, error, []upstream.Change)) {
	var last map[int64]time.Time // nil until a poll succeeds
	for ctx.Err() == nil {
		seen, err := p.list(ctx, s)
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			p.o.Logger.Warn("change poll failed", "upstream_tenant", s.Tenant, "country", s.Country, "error", err)
			report(i, fmt.Errorf("%s/%s: %w", s.Tenant, s.Country, err), nil)
		case last == nil:
			last = seen
			report(i, nil, []upstream.Change{{Tenant: s.Tenant, Country: s.Country, Gap: true}})
		default:
			cs := diff(s, last, seen)
			last = seen
			report(i, nil, cs)
		}
		select {
		case <-ctx.Done():
			return
		case <-p.o.After(p.o.Interval):
		}
	}
}

// list reads the scope's whole short list: id and last_updated of every
// property, by id, a page at a time.
func (p *Poller) list(ctx context.Context, s upstream.Scope) (map[int64]time.Time, error) {
	seen := map[int64]time.Time{}
	for page := 0; page < maxPages; page++ {
		q := url.Values{"limit": {strconv.Itoa(p.o.PageSize)}, "offset": {strconv.Itoa(page * p.o.PageSize)}, "order": {"id"}}
		c, errs := normalize.ParseProperties(q, normalize.Options{MaxResults: -1})
		if errs != nil {
			return nil, fmt.Errorf("criteria: %v", errs)
		}
		if p.o.Calls != nil {
			p.o.Calls(s)
		}
		props, err := p.o.Backend.ListProperties(ctx, s, c)
		if err != nil {
			return nil, err
		}
		added := 0
		for _, pr := range props {
			if _, dup := seen[pr.ID]; !dup {
				added++
			}
			seen[pr.ID] = pr.LastUpdated
		}
		// A short page is the last; so is one larger than asked (a legacy
		// that ignores limit sent everything) or one with nothing new (one
		// that ignores offset).
		if len(props) < p.o.PageSize || len(props) > p.o.PageSize || added == 0 {
			return seen, nil
		}
	}
	return nil, fmt.Errorf("more than %d pages of %d properties", maxPages, p.o.PageSize)
}

// diff reports what changed from last to seen in s: an update naming the
// properties whose last_updated changed, an insert naming those that
// appeared, a delete naming those that disappeared (each omitted when
// empty).
func diff(s upstream.Scope, last, seen map[int64]time.Time) []upstream.Change {
	var updated, inserted, deleted []int64
	for id, lu := range seen {
		prev, ok := last[id]
		switch {
		case !ok:
			inserted = append(inserted, id)
		case !prev.Equal(lu):
			updated = append(updated, id)
		}
	}
	for id := range last {
		if _, ok := seen[id]; !ok {
			deleted = append(deleted, id)
		}
	}
	var out []upstream.Change
	for _, c := range []struct {
		op  string
		ids []int64
	}{{upstream.OpUpdate, updated}, {upstream.OpInsert, inserted}, {upstream.OpDelete, deleted}} {
		if len(c.ids) == 0 {
			continue
		}
		slices.Sort(c.ids)
		ch := upstream.Change{Tenant: s.Tenant, Country: s.Country, Resource: upstream.ResourceProperties, Op: c.op, Properties: c.ids}
		if len(c.ids) > maxNamed {
			ch.Properties = nil
		}
		out = append(out, ch)
	}
	return out
}
