package proxy

import (
	"net/http"
	"strconv"
	"strings"

	"listingproxy/cache"
)

// Header values shared by every response, allocated once.
var (
	hdrVary         = []string{"Accept-Encoding, Authorization"}
	hdrCacheControl = []string{"private, no-cache"}
	hdrGzip         = []string{"gzip"}
	hdrCacheStatus  = func() map[cache.Outcome][]string {
		m := map[cache.Outcome][]string{}
		for _, o := range []cache.Outcome{cache.Hit, cache.Stale, cache.StaleIfError, cache.Miss, cache.Negative, cache.Bypass} {
			m[o] = []string{cacheStatus(o)}
		}
		return m
	}()
)

// cacheStatus is the RFC 9211 Cache-Status value of an outcome.
func cacheStatus(o cache.Outcome) string {
	switch o {
	case cache.Hit:
		return "listingproxy; hit"
	case cache.Stale:
		return "listingproxy; hit; detail=stale-while-revalidate"
	case cache.StaleIfError:
		return "listingproxy; hit; detail=stale-if-error"
	case cache.Negative:
		return "listingproxy; hit; detail=negative"
	case cache.Miss:
		return "listingproxy; fwd=miss; stored"
	}
	return "listingproxy; fwd=bypass"
}

// writeEntry writes a stored body: ETag, Cache-Status and Age, 304 for a
// matching If-None-Match, and the gzip copy for clients that accept it.
// It does no work proportional to the body size.
func (s *Server) writeEntry(w http.ResponseWriter, r *http.Request, e *cache.Entry, o cache.Outcome) {
	h := w.Header()
	h["Content-Type"] = []string{e.ContentType}
	h["Vary"] = hdrVary
	h["Cache-Control"] = hdrCacheControl
	h["Cache-Status"] = hdrCacheStatus[o]
	if o != cache.Miss && o != cache.Bypass {
		age := int64(s.now().Sub(e.StoredAt).Seconds())
		h["Age"] = []string{strconv.FormatInt(max(age, 0), 10)}
	}
	body, etag := e.Body, e.ETag
	if e.Gzip != nil && acceptsGzip(r.Header["Accept-Encoding"]) {
		body, etag = e.Gzip, gzipETag(e.ETag)
		h["Content-Encoding"] = hdrGzip
	}
	h["Etag"] = []string{etag}
	if inm := r.Header["If-None-Match"]; len(inm) > 0 && etagMatches(inm, etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	h["Content-Length"] = []string{strconv.Itoa(len(body))}
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(body)
	}
}

// acceptsGzip reports whether an Accept-Encoding header admits gzip: listed
// (or covered by "*") with a non-zero quality.
func acceptsGzip(values []string) bool {
	star := false
	for _, v := range values {
		for part := range strings.SplitSeq(v, ",") {
			name, params, _ := strings.Cut(part, ";")
			name = strings.TrimSpace(name)
			zero := qualityZero(params)
			switch {
			case strings.EqualFold(name, "gzip"):
				return !zero
			case name == "*":
				star = !zero
			}
		}
	}
	return star
}

func qualityZero(params string) bool {
	for p := range strings.SplitSeq(params, ";") {
		k, v, ok := strings.Cut(strings.TrimSpace(p), "=")
		if ok && strings.EqualFold(k, "q") {
			q, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return err == nil && q == 0
		}
	}
	return false
}

// etagMatches implements If-None-Match's weak comparison.
func etagMatches(values []string, etag string) bool {
	for _, v := range values {
		for part := range strings.SplitSeq(v, ",") {
			t := strings.TrimSpace(part)
			if t == "*" || strings.TrimPrefix(t, "W/") == etag {
				return true
			}
		}
	}
	return false
}

// gzipETag derives the strong ETag of an entry's gzip representation, which
// must differ from the identity representation's.
func gzipETag(etag string) string {
	if len(etag) < 2 {
		return etag
	}
	return etag[:len(etag)-1] + `-gz"`
}
