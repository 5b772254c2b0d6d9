package proxy

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"listingproxy/cache"
	"listingproxy/normalize"
)

// Explain and Keys are the operator's view of the cache (the admin
// listener's GET /cache/explain and GET /cache/keys): metadata only, never
// a body. A key is computed by the request's own handler as the user's
// request would compute it (the warm-up's key-only call: no cache lookup,
// no backend call), so what is explained is exactly what that user's
// request would find.

// Explanation is what the cache holds for one user's request and how the
// next such request would be answered.
type Explanation struct {
	User string `json:"user"`
	// Tenant and Permissions (the permission class: none, full,
	// full+prices) are the user's, as the key holds them.
	Tenant      string `json:"tenant"`
	Permissions string `json:"permissions"`
	URL         string `json:"url"`
	// Key is the canonical cache key (tenant|resource|scope|criteria); the
	// fields after it are its parts.
	Key      string `json:"key"`
	Resource string `json:"resource"`
	Country  string `json:"country"`
	Format   string `json:"format"`
	Criteria string `json:"criteria"`
	// Tags are the held entry's (purges by url, property and agent match
	// them), else those the request's entry would carry at least.
	Tags []ExplainedTag `json:"tags"`
	// Tier is the tier that holds the entry ("first": this process's
	// memory; "shared": Redis; "disk"; "none"); AgeSeconds and
	// TTLLeftSeconds are that entry's (TTL left is negative once past).
	Tier           string   `json:"tier"`
	AgeSeconds     *float64 `json:"age_seconds"`
	TTLLeftSeconds *float64 `json:"ttl_left_seconds"`
	// Next is how the next request would be answered (hit, stale,
	// negative, miss) and From by what (first, shared, disk, backend);
	// Why says why it would not be a hit of this process's memory.
	Next string `json:"next"`
	From string `json:"from"`
	Why  string `json:"why,omitempty"`
	// First and Second are the entry in each tier (null: none).
	First       *ExplainedEntry `json:"first"`
	Second      *ExplainedEntry `json:"second,omitempty"`
	SecondTier  string          `json:"second_tier,omitempty"`
	SecondError string          `json:"second_error,omitempty"`
	// Purge is the latest recorded purge that covered the held entry
	// after its fill or, with none held, the key; Event the latest
	// recorded drop, eviction or expiry of it when this process's memory
	// does not hold it.
	Purge *ExplainedPurge `json:"purge,omitempty"`
	Event *ExplainedEvent `json:"event,omitempty"`
	// SharedFetch is the same explanation of the backend answer this
	// request's body is rendered from (tenants whose one backend call
	// serves every format and permission level: a legacy CRM's).
	SharedFetch *Explanation `json:"shared_fetch,omitempty"`
}

// ExplainedEntry is an entry in one tier.
type ExplainedEntry struct {
	StoredAt       time.Time `json:"stored_at"`
	AgeSeconds     float64   `json:"age_seconds"`
	TTLLeftSeconds float64   `json:"ttl_left_seconds"`
	// State is fresh, stale (served while one refresh runs),
	// stale-if-error (served only when a fill fails) or expired.
	State string `json:"state"`
	// Purged is what purges did to it: "" (nothing), soft or hard.
	Purged   string `json:"purged,omitempty"`
	Negative bool   `json:"negative,omitempty"`
	Bytes    int    `json:"bytes"`
	Tags     int    `json:"tags"`
	// Overlay: held among the just-filled entries the admission policy
	// had not admitted.
	Overlay bool `json:"overlay,omitempty"`
}

// ExplainedTag is a cache tag (a hash) and, where the request names it,
// what it stands for: the URL's tag, a single resource's id. The tags of
// the entities a list holds are hashes of their ids: a purge by
// property=ID or agent=ID matches them.
type ExplainedTag struct {
	Tag  string `json:"tag"`
	Name string `json:"name,omitempty"`
}

// ExplainedPurge is a recorded purge.
type ExplainedPurge struct {
	At    time.Time `json:"at"`
	Scope string    `json:"scope"`
	Mode  string    `json:"mode"`
	// Received: made by another process of the fleet (or before a
	// restart, from the disk tier's record), not through this one.
	Received bool `json:"received,omitempty"`
}

// ExplainedEvent is a recorded drop, eviction or expiry.
type ExplainedEvent struct {
	What     string    `json:"what"`
	At       time.Time `json:"at"`
	StoredAt time.Time `json:"stored_at"`
}

// errNoCache answers explanations and listings when the cache is off.
var errNoCache = errors.New("the cache is disabled")

// Explain returns, as an *Explanation, what the cache holds for user's
// request of target (a path and its query, as the user would send it) and
// how the next such request would be answered. Its error, for an operator,
// says what is wrong with the user or the target.
func (s *Server) Explain(ctx context.Context, user, target string) (any, error) {
	if s.cache == nil {
		return nil, errNoCache
	}
	who := s.live.Load().auth.principalOf(user)
	if who == nil {
		return nil, fmt.Errorf("unknown user %q", user)
	}
	w := &warmCall{keyOnly: true}
	if _, err := s.warmOne(ctx, who, WarmTarget{User: user, Target: target}, w); err != nil {
		var errs normalize.Errors
		var perr *Error
		switch {
		case errors.Is(err, errNotAPI):
			return nil, fmt.Errorf("url %q is not a GET of one of the API's paths (/{country}/properties.{xml,json}, /{country}/properties/{id}.{xml,json}, and the same for agents)", target)
		case errors.As(err, &errs):
			return nil, fmt.Errorf("url %q: the API answers it with the error list (%v), which is never cached", target, errs)
		case errors.As(err, &perr):
			return nil, fmt.Errorf("url %q as %s: the API answers it with an error (%s), which is never cached", target, user, perr.Message)
		}
		return nil, fmt.Errorf("url %q: %v", target, err)
	}
	x := s.explainKey(ctx, w.k, s.live.Load().policy(w.k.Resource))
	x.User, x.Permissions, x.URL = user, who.variant, target
	if who.tenant.ShareFetch && w.k.Resource != "" {
		fk := cache.Key{Tenant: w.k.Tenant, Resource: w.k.Resource, Scope: fetchScope + x.Country, Variant: w.k.Variant}
		x.SharedFetch = s.explainKey(ctx, fk, s.live.Load().policy(fk.Resource))
	}
	return x, nil
}

// explainKey explains k under policy p.
func (s *Server) explainKey(ctx context.Context, k cache.Key, p cache.Policy) *Explanation {
	in := s.cache.Inspect(ctx, k, p)
	x := &Explanation{Tenant: k.Tenant, Key: k.String(), Resource: k.Resource, Criteria: k.Variant,
		Next: in.Next, From: in.From, Why: in.Why, SecondTier: in.SecondTier, Tier: "none"}
	x.Country, x.Format, _ = scopeParts(k.Scope)
	x.First = explainedEntry(in.First)
	x.Second = explainedEntry(in.Second)
	if in.SecondErr != nil {
		x.SecondError = in.SecondErr.Error()
	}
	var tags []cache.Tag
	switch h := cmpOr(x.First, x.Second); {
	case h == nil:
		tags = withURLTag(nil, k, x.Country)
		if k.Resource == resProperty || k.Resource == resAgent {
			if id, err := strconv.ParseInt(k.Variant, 10, 64); err == nil {
				tags = append(tags, s.EntityTag(k.Resource, id))
			}
		}
	default:
		if h == x.First {
			x.Tier, tags = "first", in.First.Tags
		} else {
			x.Tier, tags = in.SecondTier, in.Second.Tags
		}
		x.AgeSeconds, x.TTLLeftSeconds = &h.AgeSeconds, &h.TTLLeftSeconds
	}
	x.Tags = explainedTags(tags, k, x.Country)
	if r := in.Purge; r != nil {
		x.Purge = &ExplainedPurge{At: r.At, Scope: purgeScope(r), Mode: r.Mode.String(), Received: r.Received}
	}
	if e := in.Event; e != nil {
		x.Event = &ExplainedEvent{What: e.What, At: e.At, StoredAt: e.StoredAt}
	}
	return x
}

// cmpOr returns the first of its entries that is not nil.
func cmpOr(es ...*ExplainedEntry) *ExplainedEntry {
	for _, e := range es {
		if e != nil {
			return e
		}
	}
	return nil
}

func explainedEntry(h *cache.Held) *ExplainedEntry {
	if h == nil {
		return nil
	}
	return &ExplainedEntry{StoredAt: h.StoredAt, AgeSeconds: h.Age.Seconds(), TTLLeftSeconds: h.FreshFor.Seconds(),
		State: h.State, Purged: h.Purged, Negative: h.Negative, Bytes: h.Bytes, Tags: len(h.Tags), Overlay: h.Overlay}
}

// explainedTags names the tags of k's entry that the request names.
func explainedTags(tags []cache.Tag, k cache.Key, country string) []ExplainedTag {
	url := urlTag(k.Resource, country, k.Variant)
	var idTag cache.Tag
	id, err := strconv.ParseInt(k.Variant, 10, 64)
	single := err == nil && (k.Resource == resProperty || k.Resource == resAgent)
	if single {
		idTag = cache.IDTag(k.Resource, id)
	}
	out := make([]ExplainedTag, 0, len(tags))
	for _, t := range tags {
		et := ExplainedTag{Tag: fmt.Sprintf("%016x", uint64(t))}
		switch {
		case t == url:
			et.Name = "url " + k.Resource + " " + country + " " + k.Variant
		case single && t == idTag:
			et.Name = k.Resource + " " + k.Variant
		}
		out = append(out, et)
	}
	return out
}

// purgeScope writes a purge's scope as POST /cache/purge names it.
func purgeScope(r *cache.PurgeRecord) string {
	switch {
	case r.All:
		return "all tenants"
	case r.TagCount > 0:
		return fmt.Sprintf("tenant=%s tags=%d (a url, or bodies holding an entity)", r.Tenant, r.TagCount)
	case r.Resource != "":
		return "tenant=" + r.Tenant + " resource=" + r.Resource
	}
	return "tenant=" + r.Tenant + " resource=all"
}

// scopeParts splits a key's scope ("perms|country|format[|compat]", or a
// shared fetch's "fetch|country") into its country and format, and
// reports whether it is a shared fetch's.
func scopeParts(scope string) (country, format string, fetch bool) {
	if rest, ok := strings.CutPrefix(scope, fetchScope); ok {
		return rest, "xml", true
	}
	parts := strings.SplitN(scope, "|", 4)
	if len(parts) >= 3 {
		return parts[1], parts[2], false
	}
	return "", "", false
}

// KeyPage is a page of a tenant's keys (Keys).
type KeyPage struct {
	Tenant string      `json:"tenant"`
	Keys   []ListedKey `json:"keys"`
	// Next is the cursor of the next page (GET /cache/keys's after); ""
	// on the last page.
	Next string `json:"next,omitempty"`
}

// ListedKey is one key of a KeyPage.
type ListedKey struct {
	Key      string `json:"key"`
	Resource string `json:"resource"`
	// Permissions is the permission class of the callers the body is for;
	// "" for a shared fetch (SharedFetch: the backend's answer the
	// bodies of every class are rendered from, never served itself).
	Permissions    string  `json:"permissions"`
	SharedFetch    bool    `json:"shared_fetch,omitempty"`
	Country        string  `json:"country"`
	Format         string  `json:"format"`
	Criteria       string  `json:"criteria"`
	AgeSeconds     float64 `json:"age_seconds"`
	TTLLeftSeconds float64 `json:"ttl_left_seconds"`
	Negative       bool    `json:"negative,omitempty"`
	Bytes          int     `json:"bytes"`
	Tags           int     `json:"tags"`
	Overlay        bool    `json:"overlay,omitempty"`
	// Purged is "soft" when a soft purge covered it since it was filled:
	// the next request waits for a fill (hard-purged keys are not listed).
	Purged string `json:"purged,omitempty"`
}

// MaxKeysPage bounds a page of Keys.
const MaxKeysPage = 1000

// Keys returns, as a *KeyPage, at most limit (1 to MaxKeysPage) of the
// keys of tenant that this process's memory holds, after the key after
// ("" for the first page). Only tenant's keys are ever listed, and only
// their metadata.
func (s *Server) Keys(tenant, after string, limit int) (any, error) {
	if s.cache == nil {
		return nil, errNoCache
	}
	if s.tenants[tenant] == nil {
		return nil, fmt.Errorf("unknown tenant %q", tenant)
	}
	if limit < 1 || limit > MaxKeysPage {
		return nil, fmt.Errorf("limit %d is not between 1 and %d", limit, MaxKeysPage)
	}
	held, more, err := s.cache.Keys(tenant, after, limit)
	if err != nil {
		return nil, fmt.Errorf("after %q is not a key of tenant %s (give the key of the last entry of a page, or its next)", after, tenant)
	}
	page := &KeyPage{Tenant: tenant, Keys: make([]ListedKey, 0, len(held))}
	now := s.now()
	st := s.live.Load()
	for _, h := range held {
		k := h.Key
		p := st.policy(k.Resource)
		ttl := p.TTL
		if h.Negative {
			ttl = p.NegativeTTL
		}
		age := now.Sub(h.StoredAt)
		lk := ListedKey{Key: k.String(), Resource: k.Resource, Criteria: k.Variant, AgeSeconds: age.Seconds(),
			TTLLeftSeconds: (ttl - age).Seconds(), Negative: h.Negative, Bytes: h.Bytes, Tags: h.Tags, Overlay: h.Overlay, Purged: h.Purged}
		lk.Country, lk.Format, lk.SharedFetch = scopeParts(k.Scope)
		if !lk.SharedFetch {
			lk.Permissions, _, _ = strings.Cut(k.Scope, "|")
		}
		page.Keys = append(page.Keys, lk)
	}
	if more && len(page.Keys) > 0 {
		page.Next = page.Keys[len(page.Keys)-1].Key
	}
	return page, nil
}
