package proxy

import (
	"net/http"
	"strings"

	"listingproxy/cache"
)

// frontMemo remembers, per caller and request target, the cache item that
// answered it last: a repeated request of a caller is answered from that
// item (cache.Store.FreshHint) without its criteria, its cache key or a
// cache lookup. Among many hot keys this is one record of the memo's and
// the item's per hit, instead of the criteria memo's, the index's and the
// item's, and no hashing of the key (bench/NOTES.md, "One lookup per
// hit").
//
// The key is the principal (one caller: its tenant, permissions and
// compatibility switches, as the authenticator verified them) and the raw
// request target (path and query as sent). Everything else a hit's answer
// depends on is either in the request and read again per hit (the method,
// Accept-Encoding, If-None-Match: writeEntry) or fixed for the Server's
// life (countries, routes, scopes), or part of the settings snapshot the
// entry records (the authenticator, which made the principal, and the
// freshness policies): an entry of other settings is not used. An entry is
// made only from a fresh hit of the full path, so a request the full path
// would refuse (unknown country, invalid criteria, detail=full without the
// permission, a strict tenant's unknown parameter) never has one.
//
// The item's Hint holds no body: an evicted entry is not kept alive here,
// and a purge (any) makes every Hint taken before it find nothing, so the
// next request takes the full path and replaces the entry. Reload empties
// the memo (its principals are gone).
type frontMemo = clockMemo[frontKey, frontHit]

type frontKey struct {
	who    *principal
	target string // http.Request.RequestURI
}

// frontHit is what a front entry answers with; a hit reads all of it.
type frontHit struct {
	st      *settings
	pattern string // the route pattern that took the request (http.Request.Pattern)
	hint    cache.Hint
	policy  cache.Policy // st's policy for the item's key (fixed with st)
	labels  []string     // handled.unknown of the request (shared with the criteria memo)
}

const (
	frontEntries   = 32768
	frontBytes     = 8 << 20 // with memoBytes, within the 32 MiB the memory limit leaves beyond the cache
	frontMaxTarget = 2048    // longer targets are not kept
	// frontFixed is what an entry costs beyond its target's bytes: the
	// map slot, the ring slot, the entry, the Hint's record.
	frontFixed = 320
)

func newFrontMemo() *frontMemo {
	return newClockMemoCost(frontEntries, frontBytes, frontCost)
}

func frontCost(k frontKey, _ frontHit) int {
	if len(k.target) > frontMaxTarget {
		return frontBytes + 1 // never kept
	}
	return frontFixed + len(k.target)
}

// frontHitHook, when set (tests), is called on each answer from the
// front; frontFirstHook on each of those given before the routing
// (serveFront).
var frontHitHook, frontFirstHook func()

// serveFront answers r from its caller's front entry before any routing,
// and reports whether it did. Only a GET or HEAD whose credentials a memo
// already holds (authenticator.known: no bcrypt, no failure counted), of a
// tenant without a rate limit, can be answered here; anything else, and a
// request without a fresh entry, takes the full path (false), which
// authenticates it from the start. The entry's target is the request's
// raw target, so the route that made the entry is the route of r: its
// pattern, kept in the entry, names r in the metrics and the access log.
//
// Why before the routing: a repeated hit then skips the route's lookup
// and the API handler's set-up (~150 ns in a loop, of the ~1.1 µs
// listingproxy did per hit beyond bench/cmd/bareproxy; bench/NOTES.md,
// "session 24"). ServeHTTP's checks of the request line still come first.
func (s *Server) serveFront(w http.ResponseWriter, r *http.Request) bool {
	if r.Method != http.MethodGet && r.Method != http.MethodHead || s.tracer != nil {
		return false
	}
	rq := request{Request: r, st: s.live.Load()}
	if rq.who = rq.st.auth.known(r); rq.who == nil || rq.who.tenant.limiter != nil {
		return false
	}
	fh := s.front.ref(frontKey{rq.who, r.RequestURI})
	if fh == nil || fh.st != rq.st {
		return false
	}
	outcome, labels, ok := s.answerFrontHit(w, &rq, fh)
	if !ok {
		return false
	}
	r.Pattern = fh.pattern
	if frontFirstHook != nil {
		frontFirstHook()
	}
	if s.observe != nil {
		s.observe(w, RequestInfo{Cache: outcome, UnknownParams: labels,
			Tenant: rq.who.tenant.Name, Backend: rq.who.tenant.BackendName, User: rq.who.username})
	}
	return true
}

// answerFront writes the answer of r's front entry when it has one and its
// item is still fresh, and returns the cache outcome and the unknown
// parameters' labels; ok false when the request must take the full path.
func (s *Server) answerFront(w http.ResponseWriter, r *request) (outcome string, labels []string, ok bool) {
	if s.front == nil || s.tracer != nil {
		return "", nil, false
	}
	fh := s.front.ref(frontKey{r.who, r.RequestURI})
	if fh == nil || fh.st != r.st {
		return "", nil, false
	}
	return s.answerFrontHit(w, r, fh)
}

// answerFrontHit is answerFront once r's entry fh is found.
func (s *Server) answerFrontHit(w http.ResponseWriter, r *request, fh *frontHit) (outcome string, labels []string, ok bool) {
	e, o, now, ok := s.cache.FreshHint(fh.hint, fh.policy)
	if !ok {
		return "", nil, false
	}
	if frontHitHook != nil {
		frontHitHook()
	}
	s.writeEntry(w, r.Request, e, o, now, nil)
	return o.String(), fh.labels, true
}

// remember keeps h, taken by r's fresh hit under policy p, as r's front
// entry.
func (s *Server) remember(r *request, h cache.Hint, p cache.Policy, labels []string) {
	if s.front == nil || h == (cache.Hint{}) || r.warm != nil {
		return
	}
	// A copy of the target: RequestURI shares the request line's bytes.
	s.front.set(frontKey{r.who, strings.Clone(r.RequestURI)}, frontHit{st: r.st, pattern: r.Pattern, hint: h, policy: p, labels: labels})
}
