package cache

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"github.com/klauspost/compress/gzip"
	"sync"
	"time"
)

// MinGzipSize is the body size under which NewEntry does not store a gzip
// form: below it the gzip framing costs more than it saves.
const MinGzipSize = 256

// Entry is one stored response. An Entry is immutable once a Loader has
// returned it: the Store shares it between callers and goroutines, so nobody
// may modify it or the slices it holds.
//
// The fields a hit reads (Body, Gzip, StoredAt, Negative, Meta) come last,
// Meta at the end: with NewEntryWith the Meta value follows it in the same
// object, and a hit on an entry that fell out of the CPU's caches reads
// one run of adjacent lines.
type Entry struct {
	// ETag is a strong, quoted entity tag derived from a hash of Body.
	ETag string
	// ContentType is the Content-Type header value for Body.
	ContentType string
	// Tags name what the body holds (the entities it renders) and answers
	// for (its URL): a purge by tags (Store.PurgeTags) covers the entries
	// of its tenant that carry any of them. Set by the Loader; a second
	// tier stores them with the entry.
	Tags []Tag
	// Body is the rendered response body.
	Body []byte
	// Gzip is Body gzip-compressed at GzipLevel, or nil when Body is smaller than
	// MinGzipSize or does not shrink. Serve it only to clients that asked.
	Gzip []byte
	// StoredAt is when the body was produced; the Age header is
	// Now() - StoredAt. A zero StoredAt is set to the Store's Now() when the
	// fill completes.
	StoredAt time.Time
	// Negative marks a "not found" answer, kept for Policy.NegativeTTL.
	Negative bool
	// Meta is opaque to the cache: a Loader may attach values derived from
	// the entry once, at fill time (the proxy keeps its precomputed response
	// headers here). It is as immutable as the rest of the Entry.
	Meta any
}

// GzipLevel is the compression level of an entry's gzip form, written with
// github.com/klauspost/compress/gzip (the standard library's API, a faster
// deflate). At level 1 it makes BenchmarkNewEntry's 45 KB list in a median
// 0.61 of compress/gzip's level-1 time (five interleaved rounds on a
// loaded machine, bench/NOTES.md) and a smaller form (4,848 bytes against
// 5,305). Compression is made once per fill, and was a quarter of a miss's
// CPU with the standard library.
const GzipLevel = 1

// gzipWriters recycles gzip writers, with the buffer each writes to,
// between fills: a new writer allocates and clears hundreds of KB of
// compressor state, which cost more CPU than compressing a 45 KB body
// (bench/NOTES.md, "Misses"); the entry keeps an exactly sized copy
// of the buffer. A pool rather than a field because NewEntry is a function
// of its arguments, like the recorders' pool in telemetry.
var gzipWriters sync.Pool // of *gzipWriter

type gzipWriter struct {
	buf bytes.Buffer
	zw  *gzip.Writer
}

// maxPooledGzip bounds the buffer a pooled gzip writer keeps.
const maxPooledGzip = 256 << 10

// NewEntry builds an Entry, computing its ETag and gzip form once.
func NewEntry(body []byte, contentType string, negative bool, now time.Time) *Entry {
	e := &Entry{}
	e.init(body, contentType, negative, now)
	return e
}

// entryWith is an Entry and its Meta value in one object (NewEntryWith).
type entryWith[M any] struct {
	e    Entry
	meta M
}

// NewEntryWith is NewEntry with a zero value of type M allocated in the
// same object as the Entry and attached as its Meta (a *M), which it also
// returns for the caller to set before the Loader returns the Entry. A hit
// that reads an entry and its Meta then reads adjacent lines of one
// object, where two objects of different sizes sit in different spans,
// pages apart: among many hot keys, one cache miss and one TLB miss less
// per hit (bench/NOTES.md, "the entry and its headers in one object").
// The Entry keeps the object alive, and the object holds nothing but the
// two.
func NewEntryWith[M any](body []byte, contentType string, negative bool, now time.Time) (*Entry, *M) {
	x := &entryWith[M]{}
	x.e.init(body, contentType, negative, now)
	x.e.Meta = &x.meta
	return &x.e, &x.meta
}

// init sets e up as NewEntry's Entry.
func (e *Entry) init(body []byte, contentType string, negative bool, now time.Time) {
	sum := sha256.Sum256(body)
	var tag [2 + 32]byte
	tag[0] = '"'
	hex.Encode(tag[1:33], sum[:16])
	tag[33] = '"'
	*e = Entry{
		Body:        body,
		ETag:        string(tag[:]),
		ContentType: contentType,
		Negative:    negative,
		StoredAt:    now,
	}
	if len(body) >= MinGzipSize {
		w, _ := gzipWriters.Get().(*gzipWriter)
		if w == nil {
			w = &gzipWriter{}
			w.zw, _ = gzip.NewWriterLevel(&w.buf, GzipLevel) // a valid level: no error
		} else {
			w.buf.Reset()
			w.zw.Reset(&w.buf)
		}
		// Writes to a bytes.Buffer cannot fail.
		_, _ = w.zw.Write(body)
		_ = w.zw.Close()
		if w.buf.Len() < len(body) {
			e.Gzip = bytes.Clone(w.buf.Bytes())
		}
		if w.buf.Cap() > maxPooledGzip {
			w.buf = bytes.Buffer{} // do not keep a huge body's buffer
		}
		gzipWriters.Put(w)
	}
}

// entryOverhead approximates the bytes an entry costs beyond its byte slices
// and strings: the Entry and item structs, the proxy's precomputed headers
// (Meta), allocation rounding of the key's strings, ristretto's item, map
// slot, expiry bucket and the policy's counters. 768 keeps the heap within
// ±5% of MaxBytes for bodies from 64 bytes to 40 KB
// (TestMaxBytesBoundsTheHeap); 256 let small entries take 1.8 times it.
const entryOverhead = 768

// cost is what an entry counts against Options.MaxBytes. The byte slices
// count by capacity: a body built by appending holds up to a quarter more
// memory than its length, and the process's memory limit is derived from
// MaxBytes.
func cost(k Key, e *Entry) int64 {
	return int64(cap(e.Body)+cap(e.Gzip)+8*cap(e.Tags)+len(e.ETag)+len(e.ContentType)+
		len(k.Tenant)+len(k.Resource)+len(k.Scope)+len(k.Variant)) + entryOverhead
}

// Key identifies a stored response. Two requests share an entry only when
// all four fields are equal.
type Key struct {
	// Tenant is the tenant the response belongs to; Purge works per tenant.
	Tenant string
	// Resource names what was asked for (e.g. "au/properties/123.json" or
	// "au/properties"); Purge can target one resource of a tenant.
	Resource string
	// Scope holds what the body depends on about the caller and the request
	// path (permissions, country, format); a caller can keep these strings
	// precomputed. It is opaque to the cache.
	Scope string
	// Variant holds everything else the body depends on (the canonical
	// criteria). It is opaque to the cache.
	Variant string
}

// Policy says how long a response stays usable. A Policy may differ per
// call, but calls for one Key should use the same Policy.
type Policy struct {
	// TTL is how long an entry is fresh. TTL <= 0 disables caching for the
	// call: Get loads (still coalesced) and returns Bypass.
	TTL time.Duration
	// StaleWhileRevalidate is how long after TTL the stored body is served
	// while one background refresh runs.
	StaleWhileRevalidate time.Duration
	// StaleIfError is how long after TTL the stored body may be served when
	// a fill fails or the breaker is open.
	StaleIfError time.Duration
	// NegativeTTL is how long a negative entry is served. Zero means
	// negative entries are not stored.
	NegativeTTL time.Duration
	// FillTimeout bounds one fill (the loader's context). Zero means
	// Options.FillTimeout.
	FillTimeout time.Duration
	// RefreshAhead, between 0 and 1, is the share of TTL after which a
	// hot entry (RefreshHits hits or more) is fetched again in the
	// background, before it expires, by the first hit that finds it
	// there: through the flight of a miss (coalesced, safe against a purge
	// that lands meanwhile, through the backend's breakers), within
	// Options.RefreshBudget. Zero: off.
	RefreshAhead float64
	// RefreshHits is how many hits make an entry hot for RefreshAhead.
	// Zero means DefaultRefreshHits.
	RefreshHits int
}

// DefaultRefreshHits is Policy.RefreshHits's default.
const DefaultRefreshHits = 2

func (p Policy) refreshHits() int {
	if p.RefreshHits > 0 {
		return p.RefreshHits
	}
	return DefaultRefreshHits
}

// refreshAt is the age after which a hot entry is refreshed ahead.
func (p Policy) refreshAt() time.Duration {
	return time.Duration(float64(p.TTL) * min(p.RefreshAhead, 1))
}

// lifetime is how long an entry stored under p stays useful at all: its
// freshness plus the longer stale window. A negative entry has no
// stale-while-revalidate phase but is kept for stale-if-error like any
// answer; with NegativeTTL zero negatives are not stored at all.
func (p Policy) lifetime(e *Entry) time.Duration {
	if e.Negative {
		if p.NegativeTTL <= 0 {
			return 0
		}
		return p.NegativeTTL + max(p.StaleIfError, 0)
	}
	return p.TTL + max(p.StaleWhileRevalidate, p.StaleIfError, 0)
}

// servableOnError reports whether e, at age, may be served when a fill
// fails or the backend refuses: within its freshness (TTL, or NegativeTTL
// for a not-found answer) plus StaleIfError. A not-found answer is an
// answer like any other: during an outage the cached "not found" is served
// stale rather than turned into a 503.
func (p Policy) servableOnError(e *Entry, age time.Duration) bool {
	if e.Negative {
		return p.NegativeTTL > 0 && age < p.NegativeTTL+p.StaleIfError
	}
	return age < p.TTL+p.StaleIfError
}

// fresh reports whether e may be served without any fill.
func (p Policy) fresh(e *Entry, now time.Time) bool {
	age := now.Sub(e.StoredAt)
	if e.Negative {
		return age < p.NegativeTTL
	}
	return age < p.TTL
}

// Outcome says how Get produced its answer. String gives a lower-case word
// for logs and metric labels. For a Cache-Status header (RFC 9211) the proxy
// maps Hit and Negative to "hit", Stale and StaleIfError to "hit" with a
// negative ttl, Miss to "fwd=miss" and Bypass to "fwd=bypass".
type Outcome uint8

const (
	// Miss: the body came from a loader call that this Get started or
	// joined (also the Outcome reported with an error).
	Miss Outcome = iota
	// Hit: a fresh stored body.
	Hit
	// Stale: a stored body past TTL but within StaleWhileRevalidate; a
	// background refresh has been started (or is running).
	Stale
	// StaleIfError: a stored body past TTL served because the fill failed,
	// within StaleIfError.
	StaleIfError
	// Negative: a stored negative ("not found") entry within NegativeTTL.
	Negative
	// Bypass: caching was not used (Policy.TTL <= 0 or the Store is closed).
	Bypass
)

var outcomeNames = [...]string{
	Miss:         "miss",
	Hit:          "hit",
	Stale:        "stale",
	StaleIfError: "stale-if-error",
	Negative:     "negative",
	Bypass:       "bypass",
}

// String returns "miss", "hit", "stale", "stale-if-error", "negative" or
// "bypass".
func (o Outcome) String() string {
	if int(o) < len(outcomeNames) {
		return outcomeNames[o]
	}
	return "unknown"
}

// Loader produces the entry for a key on a miss. It runs on a context
// detached from the caller's cancellation, bounded by Policy.FillTimeout.
// It reports answers as entries (a not-found as an Entry with Negative set)
// and returns an error only when it could not get an answer: an error makes
// Get fall back to a stale copy or fail.
type Loader func(ctx context.Context) (*Entry, error)
