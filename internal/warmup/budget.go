package warmup

import (
	"context"

	"golang.org/x/time/rate"

	"listingproxy/cache"
)

// Budgets are each backend's budget of background calls, by the tenants
// it serves: refreshes ahead of expiry (Allow) and the warm-up's replays
// (Wait) share one limiter per backend, so neither adds more than
// perSecond calls a second to a backend clients already load.
type Budgets map[string]*rate.Limiter

// NewBudgets makes one limiter of perSecond calls a second (burst
// max(1, perSecond)) per backend of backendOf (tenant → backend).
func NewBudgets(perSecond float64, backendOf map[string]string) Budgets {
	byBackend := map[string]*rate.Limiter{}
	b := Budgets{}
	for tenant, backend := range backendOf {
		if byBackend[backend] == nil {
			byBackend[backend] = rate.NewLimiter(rate.Limit(perSecond), max(1, int(perSecond)))
		}
		b[tenant] = byBackend[backend]
	}
	return b
}

// Allow is cache.Options.RefreshBudget: a refresh ahead of expiry goes
// only when the key's tenant's backend has a token; it never waits.
func (b Budgets) Allow(k cache.Key) bool {
	l := b[k.Tenant]
	return l != nil && l.Allow()
}

// Wait is Options.Wait: each replay waits for a token of its tenant's
// backend; a tenant without a budget does not wait.
func (b Budgets) Wait(ctx context.Context, tenant string) error {
	l := b[tenant]
	if l == nil {
		return nil
	}
	return l.Wait(ctx)
}
