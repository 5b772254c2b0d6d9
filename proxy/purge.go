package proxy

import (
	"fmt"
	"net/url"
	"path"
	"slices"
	"strconv"
	"strings"

	"listingproxy/cache"
	"listingproxy/normalize"
	"listingproxy/upstream"
	"listingproxy/wire"
)

// PropertyTag is the cache tag of every body that holds property id: its
// single resource, every list that includes it, and the documents of the
// agents that embed it. A purge by it (cache.Store.PurgeTags) is a purge by
// entity.
func PropertyTag(id int64) cache.Tag { return cache.IDTag(resProperty, id) }

// AgentTag is the cache tag of every body that holds agent id: its single
// resource, every agent list that includes it, and every property
// document that embeds it.
func AgentTag(id int64) cache.Tag { return cache.IDTag(resAgent, id) }

// EntityTag is PropertyTag (kind "property") or AgentTag (any other kind:
// admin checks the kind).
func (s *Server) EntityTag(kind string, id int64) cache.Tag {
	if kind == resProperty {
		return PropertyTag(id)
	}
	return AgentTag(id)
}

// propertyTags appends the tags of a property document: the property and
// the agents it embeds.
func propertyTags(dst []cache.Tag, p *upstream.Property) []cache.Tag {
	dst = append(dst, PropertyTag(p.ID))
	for i := range p.Agents {
		dst = append(dst, AgentTag(p.Agents[i].ID))
	}
	return dst
}

// agentTags appends the tags of an agent document: the agent and the
// properties it embeds.
func agentTags(dst []cache.Tag, a *upstream.Agent) []cache.Tag {
	dst = append(dst, AgentTag(a.ID))
	for i := range a.Properties {
		dst = append(dst, PropertyTag(a.Properties[i].ID))
	}
	return dst
}

// urlTag is the tag of one request's bodies in every permission level and
// both formats: the resource, the country and the canonical criteria (or
// id) of its cache key.
func urlTag(resource, country, variant string) cache.Tag {
	return cache.NewTag("url", resource, country, variant)
}

// withURLTag returns tags with the URL tag of k (asked in country) added,
// in a new slice: an entry's tags are immutable once stored.
func withURLTag(tags []cache.Tag, k cache.Key, country string) []cache.Tag {
	u := urlTag(k.Resource, country, k.Variant)
	if slices.Contains(tags, u) {
		return tags
	}
	out := make([]cache.Tag, 0, len(tags)+1)
	return append(append(out, tags...), u)
}

// URLTag returns the cache tag of a request path (with its query) of
// tenant, canonicalised exactly as the request would be (the country
// checked, the criteria normalised with the tenant's max_results: so
// status[]=current and status=current are one URL): purging it purges
// that URL's bodies for every permission level and both formats (the data
// behind them is the same). The tenant is the caller's to name: nothing in
// the URL can reach another tenant's bodies. The error says, for an
// operator, what is wrong with the URL.
func (s *Server) URLTag(tenant, target string) (cache.Tag, error) {
	t := s.tenants[tenant]
	if t == nil {
		return 0, fmt.Errorf("unknown tenant %q", tenant)
	}
	u, err := url.ParseRequestURI(target)
	if err != nil || u.Host != "" || !cleanPath(u.Path) {
		return 0, fmt.Errorf("url %q is not a request path such as /au/properties.xml?status=current", target)
	}
	segs := strings.Split(strings.TrimPrefix(u.Path, "/"), "/")
	if len(segs) < 2 || len(segs) > 3 {
		return 0, fmt.Errorf("url path %q is not one of the API's: /{country}/properties.{xml,json}, /{country}/agents.{xml,json}, /{country}/properties/{id}.{xml,json}, /{country}/agents/{id}.{xml,json}", u.Path)
	}
	country := segs[0]
	if s.countries[country] == nil {
		return 0, fmt.Errorf("url %q: unknown country %q", target, country)
	}
	last := segs[len(segs)-1]
	ext := path.Ext(last)
	if _, ok := wire.ParseFormat(strings.TrimPrefix(ext, ".")); !ok || ext == "" {
		return 0, fmt.Errorf("url path %q must end in .xml or .json", u.Path)
	}
	name := strings.TrimSuffix(last, ext)
	if len(segs) == 3 {
		res := map[string]string{"properties": resProperty, "agents": resAgent}[segs[1]]
		id, ok := normalize.ParseID(name)
		switch {
		case res == "":
			return 0, fmt.Errorf("url path %q is not one of the API's (properties or agents)", u.Path)
		case !ok:
			return 0, fmt.Errorf("url %q: id %q is not a valid number", target, name)
		case u.RawQuery != "":
			return 0, fmt.Errorf("url %q: a single resource takes no query", target)
		}
		return urlTag(res, country, strconv.FormatInt(id, 10)), nil
	}
	norm := s.normFor(t)
	q, err := parseQuery(u.RawQuery)
	if err != nil {
		return 0, fmt.Errorf("url %q: %v", target, err)
	}
	var c normalize.Criteria
	var errs normalize.Errors
	switch name {
	case "properties":
		c, errs = normalize.ParseProperties(q, norm)
	case "agents":
		c, errs = normalize.ParseAgents(q, norm)
	default:
		return 0, fmt.Errorf("url path %q is not one of the API's (properties or agents)", u.Path)
	}
	if errs != nil {
		return 0, fmt.Errorf("url %q: its query is one the API refuses (%v), so nothing of it is cached", target, errs)
	}
	return urlTag(name, country, c.Key()), nil
}
