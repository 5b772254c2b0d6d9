package proxy

import (
	"sync"

	"listingproxy/normalize"
)

// criteriaMemo remembers the canonical criteria of raw query strings that
// parsed cleanly, so a cache hit does not parse the query again. Criteria
// are immutable and do not depend on the caller, so one memo serves every
// tenant. It is bounded: when full it starts over.
type criteriaMemo struct {
	mu sync.RWMutex
	m  map[memoKey]*normalize.Criteria
}

type memoKey struct {
	resource normalize.Resource
	max      int // normalize.Options.MaxResults: tenants may differ
	raw      string
}

const (
	memoEntries  = 4096
	memoMaxQuery = 2048 // longer queries are parsed every time
)

func (cm *criteriaMemo) get(res normalize.Resource, max int, raw string) (*normalize.Criteria, bool) {
	cm.mu.RLock()
	c, ok := cm.m[memoKey{res, max, raw}]
	cm.mu.RUnlock()
	return c, ok
}

func (cm *criteriaMemo) put(res normalize.Resource, max int, raw string, c *normalize.Criteria) {
	if len(raw) > memoMaxQuery {
		return
	}
	cm.mu.Lock()
	if cm.m == nil || len(cm.m) >= memoEntries {
		cm.m = make(map[memoKey]*normalize.Criteria, 256)
	}
	cm.m[memoKey{res, max, raw}] = c
	cm.mu.Unlock()
}
