package testkit

import (
	"context"
	"sync"
	"sync/atomic"

	"listingproxy/normalize"
	"listingproxy/upstream"
)

// Backend is a fake upstream.Backend: it serves fixed records per tenant
// and country, counts calls, and can be made to fail or to wait. Set its
// exported fields before the first call; Fail, Block and the counters are
// safe for concurrent use.
type Backend struct {
	// Properties and Agents are the records served, by
	// Scope.Tenant+"/"+Scope.Country. A get of an id not there is
	// upstream.ErrNotFound.
	Properties map[string][]upstream.Property
	Agents     map[string][]upstream.Agent
	// Result, when set, decides each call's error from its context and
	// scope, after Fail.
	Result func(ctx context.Context, s upstream.Scope) error

	calls atomic.Int64
	mu    sync.Mutex
	fail  error
	block chan struct{}
	per   map[string]int // calls by tenant
}

// Fail makes every call return err from now on (nil: succeed again).
func (b *Backend) Fail(err error) {
	b.mu.Lock()
	b.fail = err
	b.mu.Unlock()
}

// Block makes calls wait (or end with their context) until release is
// called.
func (b *Backend) Block() (release func()) {
	ch := make(chan struct{})
	b.mu.Lock()
	b.block = ch
	b.mu.Unlock()
	return func() {
		b.mu.Lock()
		if b.block == ch {
			b.block = nil
		}
		b.mu.Unlock()
		close(ch)
	}
}

// Calls is how many calls the backend received.
func (b *Backend) Calls() int64 { return b.calls.Load() }

// TenantCalls is how many calls the backend received for tenant.
func (b *Backend) TenantCalls(tenant string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.per[tenant]
}

// call counts a call, waits while blocked and returns its error.
func (b *Backend) call(ctx context.Context, s upstream.Scope) error {
	b.calls.Add(1)
	b.mu.Lock()
	if b.per == nil {
		b.per = map[string]int{}
	}
	b.per[s.Tenant]++
	block, fail := b.block, b.fail
	b.mu.Unlock()
	if block != nil {
		select {
		case <-block:
		case <-ctx.Done():
			return ctx.Err()
		}
		b.mu.Lock()
		fail = b.fail
		b.mu.Unlock()
	}
	if fail != nil {
		return fail
	}
	if b.Result != nil {
		return b.Result(ctx, s)
	}
	return nil
}

// ListProperties implements upstream.Backend: the scope's properties, only
// those of the criteria's ids when it names some.
func (b *Backend) ListProperties(ctx context.Context, s upstream.Scope, c normalize.Criteria) ([]upstream.Property, error) {
	if err := b.call(ctx, s); err != nil {
		return nil, err
	}
	all := b.Properties[s.Tenant+"/"+s.Country]
	ids := c.Property().IDs
	if len(ids) == 0 {
		return all, nil
	}
	var out []upstream.Property
	for _, p := range all {
		for _, id := range ids {
			if p.ID == id {
				out = append(out, p)
			}
		}
	}
	return out, nil
}

// GetProperty implements upstream.Backend.
func (b *Backend) GetProperty(ctx context.Context, s upstream.Scope, id int64) (upstream.Property, error) {
	if err := b.call(ctx, s); err != nil {
		return upstream.Property{}, err
	}
	for _, p := range b.Properties[s.Tenant+"/"+s.Country] {
		if p.ID == id {
			return p, nil
		}
	}
	return upstream.Property{}, upstream.ErrNotFound
}

// ListAgents implements upstream.Backend.
func (b *Backend) ListAgents(ctx context.Context, s upstream.Scope, _ normalize.Criteria) ([]upstream.Agent, error) {
	if err := b.call(ctx, s); err != nil {
		return nil, err
	}
	return b.Agents[s.Tenant+"/"+s.Country], nil
}

// GetAgent implements upstream.Backend.
func (b *Backend) GetAgent(ctx context.Context, s upstream.Scope, id int64) (upstream.Agent, error) {
	if err := b.call(ctx, s); err != nil {
		return upstream.Agent{}, err
	}
	for _, a := range b.Agents[s.Tenant+"/"+s.Country] {
		if a.ID == id {
			return a, nil
		}
	}
	return upstream.Agent{}, upstream.ErrNotFound
}
