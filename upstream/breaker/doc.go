// Package breaker owns what stands between listingproxy and a backend that
// is failing or saturated: circuit breakers (sony/gobreaker v2) and each
// backend's concurrency limit, shared out among its tenants, as an
// upstream.Backend decorator (Registry.Wrap).
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
// # Concurrency
//
// Each bounded backend (Backend.Limit > 0) has one limit of calls in
// flight (limit.go): fixed at Limit (a SQL pool's size), or, with
// Backend.Adaptive (a CRM), following the backend's latency between
// MinConcurrency and Limit, starting at InitialConcurrency. Each tenant
// keeps max(1, floor(limit × TenantShare)) of it under contention: below
// its share it takes any free slot; beyond it, under an adaptive limit, it
// borrows free slots only while no tenant below its share waits, and never
// the reserve (an eighth of the limit, at least one slot), so a tenant
// arriving is served at once even when another has borrowed all it could;
// under a fixed limit (a SQL pool of a few connections) it keeps to its
// share. A call that finds no slot
// waits in one FIFO (slots that free go first to the waiters below their
// share) for at most Settings.QueueTimeout, then fails with a *BusyError
// (upstream.ErrBusy, RetryAfter one second). The wait happens after both breakers let the
// call through, and a call that gets no slot is excluded from both
// breakers' counts: waiting for a slot is not a backend failure, so one
// tenant's waits can never open the backend-wide breaker.
//
// The adaptive rule is hand-written, after Netflix concurrency-limits'
// Gradient2 and Envoy's adaptive concurrency filter: two latency averages
// (recent, long-term) and a few comparisons (see limiter). No Go library
// for it is among the project's allowed dependencies, and the rule is
// small enough to test exhaustively with injected latencies.
//
// Outcomes: nil and upstream.IsAnswer errors are successes;
// context.Canceled, or any error once the caller's context was cancelled,
// is not counted (a client that went away says nothing about the backend),
// nor is upstream.ErrInternal (an adapter's own bug while reading an
// answer, recovered and logged by the adapter) or upstream.ErrBusy (a
// bound of listingproxy's own was full); everything else, deadlines and
// panics that reach the breaker included, is a failure. A call the
// breakers refuse returns an *OpenError (errors.Is ErrOpen) whose
// RetryAfter says when a probe will be let through; callers set
// Retry-After from it (and from a *BusyError's) without knowing this
// package.
//
// Settings are reloadable (Registry.Reload): changed settings replace the
// breakers, unchanged ones keep them (an open breaker stays open); the
// concurrency limiters are kept either way (a new TenantShare or
// QueueTimeout applies from the next call).
//
// It imports upstream, gobreaker and the OpenTelemetry trace API only:
// never proxy, cache, config or telemetry.
package breaker
