package proxy

import (
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unsafe"

	"listingproxy/cache"
)

// Header values shared by every response, allocated once.
//
// There is no Cache-Control: every response answers a request with an
// Authorization header, which shared caches must not store (RFC 9111
// §3.5), and with no freshness information and no Last-Modified a private
// cache must revalidate (If-None-Match, answered 304) before reuse.
var (
	hdrVary = []string{"Accept-Encoding, Authorization"}
	// hdrHeldFetch is the Cache-Status of a body rendered from a shared
	// fetch the cache already held (another format or permission level of
	// the same request): no backend call was made, so a hit (RFC 9211:
	// not forwarded), though this variant's body was new.
	hdrHeldFetch   = []string{"listingproxy; hit; detail=shared-fetch"}
	hdrGzip        = []string{"gzip"}
	hdrCacheStatus = func() (h [cache.Bypass + 1][]string) {
		for o := range h {
			h[o] = []string{cacheStatus(cache.Outcome(o))}
		}
		return h
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

// tierStatuses are the Cache-Status values of the answers a second tier
// gave (cache.FromSecond, by outcome) or waited for (cache.FromPeer),
// built once by New. RFC 9211 lists one member per cache that handled the
// request, the one nearest the origin first: the second tier (named
// "listingproxy-shared" for Redis, "listingproxy-disk"), then this
// process's memory, which did not hold the body (fwd=miss) and stored the
// one it was given. A client that reads the first member's hit, or looks
// for "hit" anywhere, counts a second tier's hit as a hit; the last member
// tells it this process's memory did not hold it.
type tierStatuses struct {
	second [cache.Bypass + 1][]string
	peer   []string
}

func newTierStatuses(tier string) *tierStatuses {
	name := "listingproxy-" + tier
	t := &tierStatuses{peer: []string{name + "; fwd=miss; collapsed, listingproxy; fwd=miss; stored"}}
	for o := range t.second {
		own := strings.TrimPrefix(cacheStatus(cache.Outcome(o)), "listingproxy")
		t.second[o] = []string{name + own + ", listingproxy; fwd=miss; stored"}
	}
	return t
}

// tierStatus is the Cache-Status of an answer from src with outcome o:
// nil (the outcome's own) for this process's.
func (s *Server) tierStatus(o cache.Outcome, src cache.Source) []string {
	switch {
	case s.tiers == nil:
		return nil
	case src == cache.FromSecond:
		return s.tiers.second[o]
	case src == cache.FromPeer:
		return s.tiers.peer
	}
	return nil
}

// entryHeaders are the header values of one stored entry, built once when
// the entry is filled so that a hit allocates none of them. Each header is
// a one-element slice of vals (see the methods).
//
// The values' bytes sit in the struct too (bytes), and the loaders
// allocate it with its entry (cache.NewEntryWith): a hit on an entry that
// fell out of the CPU caches reads its headers from lines of the object it
// already reads, where the values' bytes in a string of their own were one
// more cold read, made only after the values were read (net/http's parse
// of Content-Length held ~0.6% of a 2 KB Zipf hit's samples under perf;
// bench/NOTES.md, "The hit's chain of cold reads"; earlier, one string per
// value: "Cold entries"). A string over a field takes unsafe.String:
// the values are set once, by fill, before h is shared, and never written
// again, so the strings are as immutable as any; the GC keeps h alive
// while a string points into it. Values that do not fit (an ETag of
// unusual length from a second tier) get a string of their own.
type entryHeaders struct {
	vals  [5]string // Content-Type, ETag, Content-Length, and the gzip form's ETag and Content-Length
	held  bool      // rendered from a shared fetch the cache held (loader)
	bytes [entryHeaderBytes]byte
}

// entryHeaderBytes holds an entry's ETag (34 bytes), its gzip form's (37)
// and their lengths (up to 10 digits each).
const entryHeaderBytes = 96

// outcomeHeldFetch is the cache outcome (access log, tenant metrics) of a
// body rendered from a shared fetch the cache already held, in place of
// "miss": no backend call was made for it.
const outcomeHeldFetch = "shared-fetch"

func (h *entryHeaders) contentType() []string { return h.vals[0:1:1] }
func (h *entryHeaders) etag() []string        { return h.vals[1:2:2] }
func (h *entryHeaders) length() []string      { return h.vals[2:3:3] }
func (h *entryHeaders) etagGzip() []string    { return h.vals[3:4:4] }
func (h *entryHeaders) lengthGzip() []string  { return h.vals[4:5:5] }

// ageHeader is an Age header value for a whole number of seconds.
type ageHeader struct {
	seconds int64
	value   []string
}

// ageTable holds the Age values of 0 to 4095 seconds (past the default
// TTL and stale windows), their digits cut from one string: a hit's value
// is a one-element slice of it, computed without a read of memory, and
// net/http's write of it reads the table's element and its digits. Where
// ages (below) cost a hit a chain of four cold reads among many keys (its
// slot, the value, the value's slice, its digits; ~0.2% of a 2 KB Zipf
// hit's samples under perf, bench/NOTES.md, "The hit's chain of cold
// reads"), this is two: 80 KB, made at start.
var ageTable = func() *[4096]string {
	var t [4096]string
	var digits []byte
	ends := make([]int, len(t))
	for i := range t {
		digits = strconv.AppendInt(digits, int64(i), 10)
		ends[i] = len(digits)
	}
	all, start := string(digits), 0
	for i := range t {
		t[i], start = all[start:ends[i]], ends[i]
	}
	return &t
}()

// ages holds the last Age value built for each number of seconds (modulo
// its size) past ageTable's. Every entry of the same age shares one, so a
// hit allocates nothing for its Age and, among many hot keys, reads a
// value that other hits keep in the CPU caches rather than one of its
// entry's own.
var ages [1024]atomic.Pointer[ageHeader]

// ageValue returns the Age header value for age.
func ageValue(age time.Duration) []string {
	secs := max(int64(age/time.Second), 0)
	if secs < int64(len(ageTable)) {
		return ageTable[secs : secs+1 : secs+1]
	}
	slot := &ages[secs%int64(len(ages))]
	if a := slot.Load(); a != nil && a.seconds == secs {
		return a.value
	}
	a := &ageHeader{seconds: secs, value: []string{strconv.FormatInt(secs, 10)}}
	slot.Store(a)
	return a.value
}

// PrepareEntry attaches to e the precomputed header values the proxy's
// loaders attach at fill time. cmd passes it as cache.Options.Adopt, so an
// entry read from the shared tier is served by a first-tier hit as cheaply
// as one this process filled.
func PrepareEntry(e *cache.Entry) { e.Meta = newEntryHeaders(e) }

func newEntryHeaders(e *cache.Entry) *entryHeaders {
	h := &entryHeaders{}
	h.fill(e)
	return h
}

// fill sets h's values from e's, once, before h is shared. The loaders
// allocate h with e (cache.NewEntryWith), so a hit reads them next to the
// entry's fields.
func (h *entryHeaders) fill(e *cache.Entry) {
	etagGzip, lengthGzip := "", ""
	if e.Gzip != nil {
		etagGzip, lengthGzip = gzipETag(e.ETag), strconv.Itoa(len(e.Gzip))
	}
	length := strconv.Itoa(len(e.Body))
	h.vals[0] = e.ContentType
	vals := [...]string{e.ETag, length, etagGzip, lengthGzip}
	if len(vals[0])+len(vals[1])+len(vals[2])+len(vals[3]) > len(h.bytes) {
		copy(h.vals[1:], vals[:])
		return
	}
	b := h.bytes[:0]
	for i, v := range vals {
		n := len(b)
		b = append(b, v...) // within h.bytes: no new array
		if len(v) > 0 {
			h.vals[1+i] = unsafe.String(&h.bytes[n], len(v))
		}
	}
}

// dateHeader is a Date header value for one whole second.
type dateHeader struct {
	unix  int64
	value []string
}

// dateValue returns the Date header value for now, shared by every response
// within the same second. Setting Date spares net/http its own clock
// reading and formatting per response (RFC 9110 §6.6.1 asks for the time
// the message was generated, to the second).
func (s *Server) dateValue(now time.Time) []string {
	sec := now.Unix()
	if d := s.date.Load(); d != nil && d.unix == sec {
		return d.value
	}
	d := &dateHeader{unix: sec, value: []string{now.UTC().Format(http.TimeFormat)}}
	s.date.Store(d)
	return d.value
}

// writeEntry writes a stored body at time now (the clock reading the cache
// judged it by): Date, ETag, Cache-Status and Age, 304 for a matching
// If-None-Match, and the gzip copy for clients that accept it. It does no
// work proportional to the body size. status, when not nil, is the
// Cache-Status (a second tier's answer: tierStatus); nil: the outcome's.
func (s *Server) writeEntry(w http.ResponseWriter, r *http.Request, e *cache.Entry, o cache.Outcome, now time.Time, status []string) {
	eh, ok := e.Meta.(*entryHeaders)
	if !ok {
		eh = newEntryHeaders(e)
	}
	h := w.Header()
	aged := o != cache.Miss && o != cache.Bypass
	if status == nil {
		status = hdrCacheStatus[o]
		if o == cache.Miss && eh.held { // no backend call: a hit, as old as its fetch
			status, aged = hdrHeldFetch, true
		}
	}
	gzipped := e.Gzip != nil && acceptsGzip(r.Header["Accept-Encoding"])
	if !gzipped || !aged {
		// With Content-Encoding and Age, Date would be the header map's
		// ninth key (X-Request-Id is the first): a Go map holds eight in
		// its first group and grows past them, and net/http then clones
		// the grown map too, six allocations and ~1.2 KB per response
		// (bench/NOTES.md, "The stored gzip form"). There net/http
		// writes Date itself, outside the map.
		h["Date"] = s.dateValue(now)
	}
	h["Content-Type"] = eh.contentType()
	h["Vary"] = hdrVary
	h["Cache-Status"] = status
	if aged {
		h["Age"] = ageValue(now.Sub(e.StoredAt))
	}
	body, etag, length := e.Body, eh.etag(), eh.length()
	if gzipped {
		body, etag, length = e.Gzip, eh.etagGzip(), eh.lengthGzip()
		h["Content-Encoding"] = hdrGzip
	}
	h["Etag"] = etag
	if inm := r.Header["If-None-Match"]; len(inm) > 0 && etagMatches(inm, etag[0], cachedFor(e, o)) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	h["Content-Length"] = length
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

// cachedFor reports whether e was a representation the cache already held
// for this caller (its key includes the tenant and permissions) and not an
// error body: only then does If-None-Match: * match. A body this request
// filled (Miss) or fetched without the cache (Bypass) was not held, and a
// not-found answer is no representation of the resource.
func cachedFor(e *cache.Entry, o cache.Outcome) bool {
	return !e.Negative && o != cache.Miss && o != cache.Bypass
}

// etagMatches implements If-None-Match's weak comparison; "*" matches only
// when star is set.
func etagMatches(values []string, etag string, star bool) bool {
	for _, v := range values {
		for part := range strings.SplitSeq(v, ",") {
			t := strings.TrimSpace(part)
			if (t == "*" && star) || strings.TrimPrefix(t, "W/") == etag {
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
