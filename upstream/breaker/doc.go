// Package breaker owns what stands between listingproxy and a backend that
// is failing or saturated: circuit breakers (sony/gobreaker v2) and
// concurrency bulkheads, as an upstream.Backend decorator (Registry.Wrap).
//
// Each backend gets one breaker per tenant (keyed by Scope.Tenant, the
// tenant's identity at the backend) and one backend-wide breaker, so that
// one tenant's failing or pathological queries open that tenant's breaker
// only, while a backend that is really down still opens for everyone
// within a few calls:
//
//   - A tenant breaker counts every outcome of that tenant's calls.
//   - The backend breaker counts successes of any tenant; it counts a
//     failure only when it cannot be one tenant's own doing: a
//     connection-level error (refused, unreachable, DNS, a dead pooled
//     connection: nothing ran, so no query caused it), or any failure once
//     at least two distinct tenants have failed within the window with no
//     success in between. A lone tenant's failures are excluded there.
//   - A call needs both breakers to let it through.
//
// A bulkhead gives each tenant at most max(1, floor(limit × TenantShare))
// concurrent calls, where limit is the backend's own concurrency (the SQL
// pool's max_open_conns, the CRM's max_concurrency); a tenant that holds
// all its slots waits for one of its own, never another tenant's. The
// backend keeps its own limit beneath.
//
// Outcomes: nil and upstream.IsAnswer errors are successes;
// context.Canceled, or any error once the caller's context was cancelled,
// is not counted (a client that went away says nothing about the backend),
// nor is upstream.ErrInternal (an adapter's own bug while reading an
// answer, recovered and logged by the adapter); everything else, deadlines
// and panics that reach the breaker included, is a failure. A call the
// breakers refuse returns an *OpenError (errors.Is ErrOpen) whose
// RetryAfter says when a probe will be let through; callers set
// Retry-After from it without knowing this package.
//
// Settings are reloadable (Registry.Reload): changed settings replace the
// breakers, unchanged ones keep them (an open breaker stays open).
//
// It imports upstream, gobreaker and the OpenTelemetry trace API only:
// never proxy, cache, config or telemetry.
package breaker
