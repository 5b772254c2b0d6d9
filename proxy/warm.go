package proxy

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"

	"listingproxy/cache"
	"listingproxy/upstream"
	"listingproxy/wire"
)

// The warm-up: the requests that fill the cache most often are recorded
// (hotKeys, on the fill path only: a fresh hit records nothing), and
// WarmUp replays such requests after a start or a hard purge.
//
// Why requests and not cache keys: a key is the caller's tenant,
// permissions, country, format and criteria, and only the handler turns a
// caller and a request into a key and a body. A replay therefore goes
// through the same handler as the caller the body was filled for (a
// principal built from the configured user, without credentials: no route
// reaches it), so a warmed body lands under the key that caller's own
// request would compute and holds what that caller may see, whatever
// changed in the configuration meanwhile (a user gone is skipped, a user
// whose permissions changed fills the key of the new permissions). Nothing
// recorded is a credential: a username and the request's path and query.

// DefaultHotKeys is Options.HotKeys's default.
const DefaultHotKeys = 1000

// WarmTarget is a request to replay as its user: a recorded hot request,
// or a line of a request log.
type WarmTarget struct {
	// User is the configured username the request is made as.
	User string `json:"user"`
	// Target is the request's path and query ("/au/properties.xml?limit=5").
	Target string `json:"target"`
	// Hits is how often its key was filled (with decay: see hotKeys);
	// it orders the targets.
	Hits uint32 `json:"hits,omitempty"`
}

// WarmStats counts the warm-up's targets since New: Done were answered
// from a fill (a backend call, or the disk or shared tier), Failed met an
// error (the backend's, a refused background call, a target that is no
// request of the API), Skipped needed nothing (the user is unknown, or
// the key was already fresh).
type WarmStats struct{ Done, Failed, Skipped uint64 }

// WarmStats returns the warm-up's counters.
func (s *Server) WarmStats() WarmStats {
	return WarmStats{Done: s.warmSt[0].Load(), Failed: s.warmSt[1].Load(), Skipped: s.warmSt[2].Load()}
}

// HotTargets returns at most n recorded hot requests, the most often
// filled first; with tenant set, only that tenant's.
func (s *Server) HotTargets(n int, tenant string) []WarmTarget {
	if s.hot == nil {
		return nil
	}
	return s.hot.top(n, tenant)
}

// WarmUp replays targets in order as their users, each on a background
// context (upstream.Background: the backend's decorators run it on idle
// capacity only), after wait lets it: the budget of the user's tenant's
// backend (nil: no pacing). It stops when ctx ends or wait fails, and
// returns the counts of this run (also added to WarmStats).
//
// No client request reaches it: it is a method of the Server, called by
// the program that wires it.
func (s *Server) WarmUp(ctx context.Context, targets []WarmTarget, wait func(ctx context.Context, tenant string) error) WarmStats {
	var run WarmStats
	count := func(i int, n *uint64) {
		s.warmSt[i].Add(1)
		*n++
	}
	failed := func(t WarmTarget, err error) {
		s.log.Debug("warm-up request failed", "user", t.User, "target", t.Target, "err", err)
		count(1, &run.Failed)
	}
	for _, t := range targets {
		if ctx.Err() != nil {
			break
		}
		who := s.live.Load().auth.principalOf(t.User)
		if who == nil {
			count(2, &run.Skipped)
			continue
		}
		// The key first, with no backend call: a target that is no
		// request fails, and a key held fresh is skipped, before the
		// budget is asked, so neither spends a background call's token.
		w := &warmCall{keyOnly: true}
		if _, err := s.warmOne(ctx, who, t, w); err != nil {
			failed(t, err)
			continue
		}
		if s.cache != nil {
			if _, _, _, fresh := s.cache.Fresh(w.k, s.live.Load().policy(w.k.Resource)); fresh {
				s.noteWarm(w.k, t)
				count(2, &run.Skipped)
				continue
			}
		}
		if wait != nil {
			if err := wait(ctx, who.tenant.Name); err != nil {
				break
			}
		}
		w = &warmCall{}
		outcome, err := s.warmOne(ctx, who, t, w)
		switch {
		case err != nil:
			failed(t, err)
			continue
		case outcome == cache.StaleIfError.String():
			failed(t, errors.New("the fill failed; an old body answered"))
		case outcome == cache.Hit.String() || outcome == cache.Negative.String():
			count(2, &run.Skipped) // filled meanwhile, or a tier's copy now in memory
		default:
			count(0, &run.Done) // filled (miss, bypass), or a refresh started (stale)
		}
		s.noteWarm(w.k, t)
	}
	return run
}

// warmCall is a warm-up request's link with its handler: the handler
// stores the request's cache key in it and, with keyOnly, returns then,
// before the cache or the backend.
type warmCall struct {
	keyOnly bool
	k       cache.Key
}

// key records k and reports whether the handler should stop there.
func (w *warmCall) key(k cache.Key) bool {
	w.k = k
	return w.keyOnly
}

// warmRoute is an API handler as WarmUp calls it: a list's format is its
// pattern's; a single's comes from its file's extension.
type warmRoute struct {
	h      apiHandler
	format wire.Format
	single bool
}

// errNotAPI is a warm target that names no request of the API.
var errNotAPI = errors.New("not a GET of the API's four paths")

// warmOne serves t as who through its route's handler, writing the
// answer nowhere, and returns the cache outcome; w receives the key.
func (s *Server) warmOne(ctx context.Context, who *principal, t WarmTarget, w *warmCall) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, t.Target, nil)
	if err != nil || req.URL.IsAbs() || !cleanPath(req.URL.Path) {
		return "", fmt.Errorf("proxy: warm target %q: %w", t.Target, errNotAPI)
	}
	if _, ok := s.route(req); !ok {
		return "", fmt.Errorf("proxy: warm target %q: %w", t.Target, errNotAPI)
	}
	wr := s.warmRoutes[req.Pattern]
	f := wr.format
	if wr.single {
		var ok bool
		if f, ok = requestFormat(req.URL.Path); !ok {
			return "", fmt.Errorf("proxy: warm target %q: %w", t.Target, errNotAPI)
		}
	}
	rq := request{Request: req, ctx: upstream.Background(ctx), st: s.live.Load(), who: who, format: f, warm: w}
	rq.country = pathValue(req, "country")
	if rq.loc = s.countries[rq.country]; rq.loc == nil {
		return "", fmt.Errorf("proxy: warm target %q: unknown country", t.Target)
	}
	done, err := wr.h(discard{}, rq)
	if err != nil {
		return done.cache, fmt.Errorf("proxy: warm target %q as %s: %w", t.Target, t.User, err)
	}
	return done.cache, nil
}

// noteWarm records a replayed target under its key, keeping its rank.
func (s *Server) noteWarm(k cache.Key, t WarmTarget) {
	if s.hot != nil && k.Resource != "" {
		s.hot.record(k, WarmTarget{User: t.User, Target: t.Target, Hits: max(t.Hits, 1)}, true)
	}
}

// noteHot records a client request that went to the cache's fill path
// (a miss, or a stale body refreshed), unless it failed.
func (s *Server) noteHot(r *request, k cache.Key, err error) {
	if s.hot == nil || r.warm != nil || err != nil || (r.cache != cache.Miss.String() && r.cache != cache.Stale.String()) {
		return
	}
	s.hot.record(k, WarmTarget{User: r.who.username, Target: r.URL.RequestURI(), Hits: 1}, false)
}

// discard is the ResponseWriter of a warm-up request: the answer is in the
// cache, nobody reads it.
type discard struct{}

func (discard) Header() http.Header         { return http.Header{} }
func (discard) Write(b []byte) (int, error) { return len(b), nil }
func (discard) WriteHeader(int)             {}

// hotKeys counts fills per cache key, each with one request that made it.
// It holds at most 4×n keys; when full, every count is halved and the keys
// at zero go (a decay that lets new hot keys in and old ones out, as an
// LFU with aging does), and a new key that still finds no room is not
// recorded. Hand-written because it is a map and a sort: a library LFU
// would keep per-hit structures this, called on fills only, does not need.
type hotKeys struct {
	n   int
	mu  sync.Mutex
	byK map[cache.Key]*hotEntry
}

type hotEntry struct {
	tenant string
	t      WarmTarget
}

func newHotKeys(n int) *hotKeys {
	return &hotKeys{n: n, byK: make(map[cache.Key]*hotEntry)}
}

// record counts a fill of k by t's request: t.Hits more, or, for a replay
// (atLeast), at least t.Hits (a target read back at start keeps its rank).
func (h *hotKeys) record(k cache.Key, t WarmTarget, atLeast bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if e := h.byK[k]; e != nil {
		if atLeast {
			e.t.Hits = max(e.t.Hits, t.Hits)
		} else if e.t.Hits < 1<<31 {
			e.t.Hits += t.Hits
		}
		return
	}
	if len(h.byK) >= 4*h.n {
		for key, e := range h.byK {
			if e.t.Hits /= 2; e.t.Hits == 0 {
				delete(h.byK, key)
			}
		}
		if len(h.byK) >= 4*h.n {
			return
		}
	}
	h.byK[k] = &hotEntry{tenant: k.Tenant, t: t}
}

// top returns at most n targets, the most often filled first (then by
// user and target, for a stable order); only tenant's when it is set.
func (h *hotKeys) top(n int, tenant string) []WarmTarget {
	h.mu.Lock()
	ts := make([]WarmTarget, 0, len(h.byK))
	for _, e := range h.byK {
		if tenant == "" || e.tenant == tenant {
			ts = append(ts, e.t)
		}
	}
	h.mu.Unlock()
	slices.SortFunc(ts, func(a, b WarmTarget) int {
		return cmp.Or(cmp.Compare(b.Hits, a.Hits), cmp.Compare(a.User, b.User), cmp.Compare(a.Target, b.Target))
	})
	return ts[:min(n, len(ts))]
}
