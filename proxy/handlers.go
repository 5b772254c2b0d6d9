package proxy

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/codes"

	"listingproxy/cache"
	"listingproxy/normalize"
	"listingproxy/upstream"
	"listingproxy/wire"
)

// Resource names: cache keys, policies, metrics.
const (
	resProperties = "properties"
	resProperty   = "property"
	resAgents     = "agents"
	resAgent      = "agent"
)

// loader fetches and renders one response body. negative marks an answer
// that is an error body (not found, criteria rejected by the backend).
// storedAt is when the data behind the body was fetched (zero: now); a
// body rendered from a shared fetch carries the fetch's time. tags name the
// entities the body holds (see tagsOf), for purges by entity. held marks
// a body rendered from a shared fetch the cache already held (no backend
// call was made for it): its Cache-Status is a hit (hdrHeldFetch).
type loader func(ctx context.Context) (body []byte, negative bool, storedAt time.Time, tags []cache.Tag, held bool, err error)

// tagsOf appends the tags of the entities an item's document holds: its
// own and those it embeds (propertyTags, agentTags).
type tagsOf[T any] func(dst []cache.Tag, item *T) []cache.Tag

// listEndpoint makes the handler of a list resource: canonical criteria (or
// the spec's error list), then the cache, filled by one backend call whose
// result is rendered once.
func listEndpoint[T any](s *Server, res normalize.Resource, name string,
	parse func(url.Values, normalize.Options) (normalize.Criteria, normalize.Errors),
	list func(upstream.Backend, context.Context, upstream.Scope, normalize.Criteria) ([]T, error),
	appendList func([]byte, wire.Format, []T, wire.Options) []byte, tags tagsOf[T],
) apiHandler {
	return func(w http.ResponseWriter, r request) (handled, error) {
		pq, unknown, err := s.criteria(&r, res, parse)
		if err != nil {
			return handled{unknown: unknown}, err
		}
		k := s.cacheKey(&r, name, pq.key)
		if r.warm != nil && r.warm.key(k) {
			return handled{}, nil
		}
		if outcome, ok := s.answerFreshHashed(w, &r, k, pq.vh, pq.labels); ok {
			return handled{cache: outcome, unknown: unknown}, nil
		}
		outcome, err := fillList(s, w, r, k, &pq.c, list, appendList, tags)
		return handled{cache: outcome, unknown: unknown}, err
	}
}

// fillList answers a list request that the cache does not hold fresh. It is
// apart from the handler so that only this path moves the request to the
// heap (its loader closures keep it).
func fillList[T any](s *Server, w http.ResponseWriter, r request, k cache.Key, c *normalize.Criteria,
	list func(upstream.Backend, context.Context, upstream.Scope, normalize.Criteria) ([]T, error),
	appendList func([]byte, wire.Format, []T, wire.Options) []byte, tags tagsOf[T],
) (string, error) {
	t, f, o := r.who.tenant, r.format, s.renderOptions(&r, c.Detail())
	scope := upstream.Scope{Tenant: t.Upstream, Country: r.country}
	fetch := func(ctx context.Context) ([]T, error) {
		items, err := list(t.Backend, ctx, scope, *c)
		if err == nil && c.Capped() && len(items) >= c.Limit() {
			s.capped.Add(1)
			s.log.Info("list cut at max_results", "tenant", t.Name, "path", r.URL.Path, "limit", c.Limit())
		}
		return items, err
	}
	listTags := func(items []T) []cache.Tag {
		var ts []cache.Tag
		for i := range items {
			ts = tags(ts, &items[i])
		}
		return ts
	}
	err := s.serve(w, &r, k, func(ctx context.Context) ([]byte, bool, time.Time, []cache.Tag, bool, error) {
		if t.ShareFetch && s.cache != nil {
			return sharedFetch(s, ctx, &r, k, msgNotFound, func(ctx context.Context) ([]byte, []cache.Tag, error) {
				items, err := fetch(ctx)
				if err != nil {
					return nil, nil, err
				}
				return render(func(dst []byte) []byte {
					return appendList(dst, wire.XML, items, wire.SourceOptions(c.Detail(), r.loc))
				}), listTags(items), nil
			}, func(src []byte) ([]byte, error) {
				items, err := wire.ReadSourceList[T](src, r.loc, c.Detail() == normalize.Full)
				if err != nil {
					return nil, err
				}
				return render(func(dst []byte) []byte { return appendList(dst, f, items, o) }), nil
			})
		}
		items, err := fetch(ctx)
		if err != nil {
			body, neg, err := answerOrFail(f, err, msgNotFound)
			return body, neg, time.Time{}, nil, false, err
		}
		return render(func(dst []byte) []byte { return appendList(dst, f, items, o) }), false, time.Time{}, listTags(items), false, nil
	})
	s.noteHot(&r, k, err)
	return r.cache, err
}

// singleEndpoint makes the handler of a single resource (always full
// detail); label names the resource in the not-found message, idTag is
// the tag of the id asked for (a not-found answer carries it too).
func singleEndpoint[T any](s *Server, name, label string,
	get func(upstream.Backend, context.Context, upstream.Scope, int64) (T, error),
	appendOne func([]byte, wire.Format, *T, wire.Options) []byte, idTag func(int64) cache.Tag, tags tagsOf[T],
) apiHandler {
	return func(w http.ResponseWriter, r request) (handled, error) {
		id, err := s.singleID(&r)
		if err != nil {
			return handled{}, err
		}
		sid := strconv.FormatInt(id, 10)
		k := s.cacheKey(&r, name, sid)
		if r.warm != nil && r.warm.key(k) {
			return handled{}, nil
		}
		if outcome, ok := s.answerFresh(w, &r, k); ok {
			return handled{cache: outcome}, nil
		}
		outcome, err := fillOne(s, w, r, k, id, label+" with ID "+sid+" not found", get, appendOne, idTag, tags)
		return handled{cache: outcome}, err
	}
}

// fillOne answers a single-resource request that the cache does not hold
// fresh (see fillList); notFound is the body's message for a missing id.
func fillOne[T any](s *Server, w http.ResponseWriter, r request, k cache.Key, id int64, notFound string,
	get func(upstream.Backend, context.Context, upstream.Scope, int64) (T, error),
	appendOne func([]byte, wire.Format, *T, wire.Options) []byte, idTag func(int64) cache.Tag, tags tagsOf[T],
) (string, error) {
	t, f, o := r.who.tenant, r.format, s.renderOptions(&r, normalize.Full)
	scope := upstream.Scope{Tenant: t.Upstream, Country: r.country}
	err := s.serve(w, &r, k, func(ctx context.Context) ([]byte, bool, time.Time, []cache.Tag, bool, error) {
		if t.ShareFetch && s.cache != nil {
			return sharedFetch(s, ctx, &r, k, notFound, func(ctx context.Context) ([]byte, []cache.Tag, error) {
				item, err := get(t.Backend, ctx, scope, id)
				if err != nil {
					return nil, []cache.Tag{idTag(id)}, err
				}
				return render(func(dst []byte) []byte {
					return appendOne(dst, wire.XML, &item, wire.SourceOptions(normalize.Full, r.loc))
				}), tags([]cache.Tag{idTag(id)}, &item), nil
			}, func(src []byte) ([]byte, error) {
				item, err := wire.ReadSource[T](src, r.loc)
				if err != nil {
					return nil, err
				}
				return render(func(dst []byte) []byte { return appendOne(dst, f, &item, o) }), nil
			})
		}
		item, err := get(t.Backend, ctx, scope, id)
		if err != nil {
			// A not-found answer carries the id's tag: the id's insert
			// purges it.
			body, neg, err := answerOrFail(f, err, notFound)
			return body, neg, time.Time{}, []cache.Tag{idTag(id)}, false, err
		}
		return render(func(dst []byte) []byte { return appendOne(dst, f, &item, o) }), false, time.Time{}, tags([]cache.Tag{idTag(id)}, &item), false, nil
	})
	s.noteHot(&r, k, err)
	return r.cache, err
}

// criteria returns the canonical criteria of the request's query, from the
// memo when this raw query parsed cleanly before, or the spec's error list
// (including the permission check on detail=full, and, for a tenant with
// StrictParams, the parameters the list does not take); and the metric
// labels of those parameters (normalize.ParamLabel), nil when none.
func (s *Server) criteria(r *request, res normalize.Resource, parse func(url.Values, normalize.Options) (normalize.Criteria, normalize.Errors)) (*parsedQuery, []string, error) {
	_, span := s.startSpan(r.ctx, "proxy.normalize")
	pq, unknown, memoised, err := s.canonical(r, res, parse)
	if span.IsRecording() {
		span.SetAttributes(attrMemo.Bool(memoised), attrValid.Bool(err == nil))
	}
	span.End()
	return pq, unknown, err
}

// canonical is criteria without the span; memoised reports a memo hit. The
// parsed query is the memo's own (shared) and must not be modified; a hit
// copies nothing (it is a few hundred bytes).
func (s *Server) canonical(r *request, res normalize.Resource, parse func(url.Values, normalize.Options) (normalize.Criteria, normalize.Errors)) (_ *parsedQuery, unknown []string, memoised bool, _ error) {
	raw := r.URL.RawQuery
	norm := s.normFor(r.who.tenant)
	strict := r.who.tenant.StrictParams
	pq := s.memo.ref(memoKey{res, norm.MaxResults, norm.MaxOffset, raw})
	memoised = pq != nil
	if !memoised {
		q, err := parseQuery(raw)
		if err != nil {
			return nil, nil, false, err
		}
		names := normalize.Unknown(res, q)
		parsed, errs := parse(q, norm)
		if errs != nil {
			err := s.criteriaErrors(r, q, parsed, errs)
			if strict && names != nil {
				err = withUnknown(err, res, names)
			}
			return nil, paramLabels(names), false, err
		}
		parsedQ := newParsedQuery(parsed, names)
		if s.cache != nil {
			parsedQ.vh = s.cache.VariantHash(parsedQ.key)
		}
		s.memo.put(memoKey{res, norm.MaxResults, norm.MaxOffset, raw}, parsedQ)
		pq = &parsedQ
	}
	var err error
	if pq.detail == normalize.Full && r.who.perms&PermFull == 0 {
		err = normalize.Errors{{Field: "detail", Message: msgNeedFull}}
	}
	if strict && pq.unknown != nil {
		err = withUnknown(err, res, pq.unknown)
	}
	return pq, pq.labels, memoised, err
}

// withUnknown adds the errors refusing the unknown parameters names of a
// list of res to err (the spec's error list, or nil), after the others.
func withUnknown(err error, res normalize.Resource, names []string) error {
	var errs normalize.Errors
	errors.As(err, &errs)
	return append(errs[:len(errs):len(errs)], normalize.UnknownErrors(res, names)...)
}

// normFor is the normalisation options of t's lists: the server's, with
// the tenant's caps where it sets its own.
func (s *Server) normFor(t *Tenant) normalize.Options {
	norm := s.norm
	if t.MaxResults != 0 {
		norm.MaxResults = t.MaxResults
	}
	if t.MaxOffset != 0 {
		norm.MaxOffset = t.MaxOffset
	}
	return norm
}

// parseQuery parses a raw query strictly: a query that url.ParseQuery
// rejects (more than 10,000 parameters, a bad %-escape, a ';' separator)
// gets the spec's error list rather than being served as if it were empty.
func parseQuery(raw string) (url.Values, error) {
	q, err := url.ParseQuery(raw)
	if err == nil {
		return q, nil
	}
	msg := "Invalid query string: parameters must be URL-encoded key=value pairs separated by &"
	if strings.Contains(err.Error(), "too many") {
		msg = "Too many parameters: at most 10000 are accepted"
	}
	return nil, normalize.Errors{{Field: "query", Message: msg}}
}

// answerOrFail turns a backend's answer (upstream.IsAnswer) into its error
// body, cached as negative: a criteria rejection becomes the error list, a
// missing record the single error notFound. Every other error is passed on.
func answerOrFail(f wire.Format, err error, notFound string) ([]byte, bool, error) {
	if !upstream.IsAnswer(err) {
		return nil, false, err
	}
	if ce, ok := errors.AsType[*upstream.CriteriaError](err); ok {
		return wire.AppendErrors(nil, f, ce.Errors), true, nil
	}
	if nf, ok := errors.AsType[*wire.NotFoundError](err); ok && nf.Message != "" {
		notFound = nf.Message // the legacy's own words ("Listing 9998 is no longer available")
	}
	return wire.AppendError(nil, f, notFound), true, nil
}

// singleID checks the caller may see full detail (single resources are
// always full) and parses the {id}.{ext} path segment.
func (s *Server) singleID(r *request) (int64, error) {
	_, span := s.startSpan(r.ctx, "proxy.normalize")
	id, err := s.parseID(r)
	if span.IsRecording() {
		span.SetAttributes(attrValid.Bool(err == nil))
	}
	span.End()
	return id, err
}

func (s *Server) parseID(r *request) (int64, error) {
	if r.who.perms&PermFull == 0 {
		return 0, &Error{Status: http.StatusOK, Message: msgNeedFull}
	}
	raw := strings.TrimSuffix(pathValue(r.Request, "file"), "."+r.format.String())
	id, ok := normalize.ParseID(raw)
	if !ok {
		return 0, &Error{Status: http.StatusOK, Message: "ID " + strconv.Quote(truncate(raw, 64)) + " is not a valid number"}
	}
	return id, nil
}

// criteriaErrors merges the parser's errors with the permission check on
// detail=full, keeping the spec's field order (detail comes before limit,
// offset and order).
func (s *Server) criteriaErrors(r *request, q url.Values, c normalize.Criteria, errs normalize.Errors) error {
	needFull := r.who.perms&PermFull == 0 && !hasField(errs, "detail")
	if needFull {
		if errs == nil {
			needFull = c.Detail() == normalize.Full
		} else {
			needFull = wantsFull(q)
		}
	}
	if !needFull {
		if errs != nil {
			return errs
		}
		return nil
	}
	at := len(errs)
	for i, fe := range errs {
		if fe.Field == "limit" || fe.Field == "offset" || fe.Field == "order" {
			at = i
			break
		}
	}
	out := make(normalize.Errors, 0, len(errs)+1)
	out = append(out, errs[:at]...)
	out = append(out, normalize.FieldError{Field: "detail", Message: msgNeedFull})
	return append(out, errs[at:]...)
}

func hasField(errs normalize.Errors, field string) bool {
	for _, fe := range errs {
		if fe.Field == field {
			return true
		}
	}
	return false
}

func wantsFull(q url.Values) bool {
	for _, k := range [...]string{"detail", "detail[]"} {
		for _, v := range q[k] {
			if strings.EqualFold(strings.TrimSpace(v), "full") {
				return true
			}
		}
	}
	return false
}

func (s *Server) renderOptions(r *request, d normalize.Detail) wire.Options {
	t, c := r.who.tenant, &r.who.compat
	return wire.Options{Detail: d, Prices: r.who.perms&PermPrices != 0, Location: r.loc, SingleObject: c.SingleObject,
		SingleObjectItems: c.SingleObjectItems, NumericIDs: c.NumericIDs, VideoURL: c.VideoURL,
		// Upstream users hold full and prices (docs/crm.md): a caller with
		// both is no narrower than the upstream user.
		Unknown: r.who.perms&(PermFull|PermPrices) == PermFull|PermPrices, Extra: t.ExtraFields, Now: s.now()}
}

// scopeKey names the part of a cache key that depends on the caller's
// permissions and the request path; Server.scopes holds its strings,
// built once, so that a hit builds no key string.
type scopeKey struct {
	perms   Permissions
	country string
	format  wire.Format
	compat  string // the caller's compatibility switches (JSON only)
}

// scopeOf is the scope of a cache key: permissions, country, format, and
// for JSON the compatibility switches when there are any.
func scopeOf(variant, country string, f wire.Format, compat string) string {
	s := variant + "|" + country + "|" + f.String()
	if f == wire.JSON && compat != "" {
		s += "|" + compat
	}
	return s
}

// cacheKey is the cache key of a request: the tenant, the caller's
// permissions, the country, the resource, the format, the caller's
// compatibility switches (JSON) and the canonical criteria (or id), so
// tenants, permission levels and client programs needing other shapes
// never share a body.
func (s *Server) cacheKey(r *request, resource, criteria string) cache.Key {
	compat := r.who.compatKey
	if r.format != wire.JSON {
		compat = "" // XML has no switches: every caller shares it
	}
	scope, ok := s.scopes[scopeKey{r.who.perms, r.country, r.format, compat}]
	if !ok { // a set New did not list (a reload's): build it (never shared wrongly)
		scope = scopeOf(r.who.variant, r.country, r.format, compat)
	}
	return cache.Key{Tenant: r.who.tenant.Name, Resource: resource, Scope: scope, Variant: criteria}
}

// answerFresh writes the stored body of k when it is fresh, before any
// loader is built, and returns the cache outcome: the common hit allocates
// no closures. With tracing on it
// leaves everything to serve, whose cache.lookup span records the outcome.
func (s *Server) answerFresh(w http.ResponseWriter, r *request, k cache.Key) (outcome string, ok bool) {
	if s.cache == nil {
		return "", false
	}
	return s.answerFreshHashed(w, r, k, s.cache.VariantHash(k.Variant), nil)
}

// answerFreshHashed is answerFresh with k.Variant's VariantHash given (the
// criteria memo keeps it), and the request's unknown parameters' labels
// for its front entry (frontMemo), which a fresh hit makes.
func (s *Server) answerFreshHashed(w http.ResponseWriter, r *request, k cache.Key, vh uint64, labels []string) (outcome string, ok bool) {
	if s.cache == nil || s.tracer != nil {
		return "", false
	}
	p := r.st.policy(k.Resource)
	e, o, now, h, ok := s.cache.FreshHashedHint(k, vh, p)
	if !ok {
		return "", false
	}
	s.remember(r, h, p, labels)
	s.writeEntry(w, r.Request, e, o, now, nil)
	return o.String(), true
}

// serve answers k from the cache, filling it through load on a miss.
func (s *Server) serve(w http.ResponseWriter, r *request, k cache.Key, load loader) error {
	now := s.now
	fill := func(ctx context.Context) (*cache.Entry, error) {
		if cache.Background(ctx) {
			// A refresh no client waits for: the backend's decorators run
			// it on idle capacity only (upstream/breaker).
			ctx = upstream.Background(ctx)
		}
		body, negative, storedAt, tags, held, err := load(ctx)
		if err != nil {
			return nil, err
		}
		if storedAt.IsZero() {
			storedAt = now()
		}
		e, eh := cache.NewEntryWith[entryHeaders](body, r.format.ContentType(), negative, storedAt)
		e.Tags = withURLTag(tags, k, r.country)
		eh.fill(e)
		eh.held = held
		return e, nil
	}
	if s.cache == nil {
		r.cache = cache.Bypass.String()
		e, err := fill(r.ctx)
		if err != nil {
			return err
		}
		s.writeEntry(w, r.Request, e, cache.Bypass, s.now(), nil)
		return nil
	}
	ctx, span := s.startSpan(r.ctx, "cache.lookup")
	e, outcome, from, err := s.cache.GetSource(ctx, k, r.st.policy(k.Resource), fill)
	r.cache = outcome.String()
	if span.IsRecording() {
		span.SetAttributes(attrCacheResult.String(r.cache), attrResource.String(k.Resource))
		if err != nil {
			span.SetStatus(codes.Error, "no answer from the backend")
		}
	}
	span.End()
	if err != nil {
		return err
	}
	if eh, ok := e.Meta.(*entryHeaders); ok && eh.held && outcome == cache.Miss {
		r.cache = outcomeHeldFetch
	}
	s.writeEntry(w, r.Request, e, outcome, s.now(), s.tierStatus(outcome, from))
	return nil
}

// fetchScope is the cache-key scope of a shared fetch (Tenant.ShareFetch):
// the backend's answer to a request, kept once for every format and
// permission level of it. No caller's scope is ever this (theirs are
// "permissions|country|format"), so no client is ever served it.
const fetchScope = "fetch|"

// sharedFetch renders the body of k from the shared fetch of its request:
// an entry of the same cache under the same tenant, resource and criteria
// (so purges and coalescing cover it), holding the backend's answer as an
// unfiltered XML document (source writes it). The body is rendered from it
// for k's caller by render, and carries the fetch's StoredAt: a body made
// from a stale fetch is as old as the fetch. A backend answer (not found,
// criteria rejected) is kept as its XML error document and rendered in
// k's format. held reports that the fetch was already in the cache (any
// outcome but a miss): the body was made without a backend call.
func sharedFetch(s *Server, ctx context.Context, r *request, k cache.Key, notFound string,
	source func(context.Context) ([]byte, []cache.Tag, error), render func(src []byte) ([]byte, error),
) (_ []byte, _ bool, _ time.Time, _ []cache.Tag, held bool, _ error) {
	fk := cache.Key{Tenant: k.Tenant, Resource: k.Resource, Scope: fetchScope + r.country, Variant: k.Variant}
	fe, fo, err := s.cache.Get(ctx, fk, r.st.policy(k.Resource), func(ctx context.Context) (*cache.Entry, error) {
		src, tags, err := source(ctx)
		negative := false
		if err != nil {
			if src, negative, err = answerOrFail(wire.XML, err, notFound); err != nil {
				return nil, err
			}
		}
		e := cache.NewEntry(src, wire.XML.ContentType(), negative, s.now())
		e.Tags = withURLTag(tags, k, r.country) // the fetch is purged with the bodies made from it
		return e, nil
	})
	if err != nil {
		return nil, false, time.Time{}, nil, false, err
	}
	held = fo != cache.Miss
	if fe.Negative {
		aerr := wire.ReadAnswer(fe.Body)
		body, neg, err := answerOrFail(r.format, aerr, notFound)
		return body, neg, fe.StoredAt, fe.Tags, held, err
	}
	body, err := render(fe.Body)
	if err != nil {
		return nil, false, time.Time{}, nil, false, fmt.Errorf("proxy: rendering from the shared fetch: %w", err)
	}
	return body, false, fe.StoredAt, fe.Tags, held, nil
}
