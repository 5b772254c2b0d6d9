package telemetry

import (
	"maps"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// requestMetrics are listingproxy_http_requests_total and
// listingproxy_http_request_duration_seconds, kept as plain atomic counters
// and turned into Prometheus series at scrape time (Collect). A request
// costs one map read (its route pattern, from a map that is copied when a
// new pattern appears) and three atomic adds; a CounterVec and a
// HistogramVec cost two memoised lookups, a histogram's own bucket search
// and its hot and cold counts: with the tenant counters, ~2% of a one-key
// 2 KB hit in place (bench/NOTES.md, session 21), and in a loop the
// middleware went from ~520 to ~330 ns with this and the ids' change
// (session 22). The bucket index is found once and shared with the tenant
// counters (the same bounds).
//
// A scrape is not atomic with the requests under way: one may be in the
// counter, the histogram's _sum or its buckets and not yet in another (a
// Prometheus histogram swaps hot and cold counts to avoid that, which is
// the cost this saves); _count is the sum of the buckets, so _count and the
// +Inf bucket always agree. The next scrape has the request everywhere.
type requestMetrics struct {
	routes cowMap[*routeSeries] // by r.Pattern
}

// routeSeries are the series of one route pattern, by method.
type routeSeries struct {
	route   string
	methods [len(methodNames)]atomic.Pointer[methodSeries]
}

// methodSeries are the counts of one route and method.
type methodSeries struct {
	// status counts requests by status code 100-599 (status[code-100]);
	// net/http also admits 600-999, which odd counts.
	status  [500]atomic.Uint64
	odd     sync.Map // status code (int) -> *atomic.Uint64
	buckets [len(latencyBounds) + 1]atomic.Uint64
	nanos   atomic.Uint64 // the durations' sum
}

// methodNames are the method label's values, by methodIndex.
var methodNames = [...]string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
	http.MethodDelete, http.MethodOptions, http.MethodConnect, http.MethodTrace, "OTHER"}

// methodIndex is m's place in methodNames, the last (OTHER) for a method
// the label does not name (methodLabel): clients may send any token. GET,
// nearly every request, is found first.
func methodIndex(m string) int {
	for i, name := range methodNames[:len(methodNames)-1] {
		if m == name {
			return i
		}
	}
	return len(methodNames) - 1
}

// latencyBucket is the index of the latency bucket of d: the first bound
// at or above it (a Prometheus bucket counts the values up to its bound),
// len(latencyBounds) for +Inf. It scans from the smallest bound: a hit is
// found at the first.
func latencyBucket(d time.Duration) int {
	for i, b := range latencyNanos {
		if d <= b {
			return i
		}
	}
	return len(latencyNanos)
}

// latencyNanos are latencyBounds as durations (each a whole number of
// nanoseconds).
var latencyNanos = func() (ns [len(latencyBounds)]time.Duration) {
	for i, b := range latencyBounds {
		ns[i] = time.Duration(math.Round(b * 1e9))
	}
	return ns
}()

// series is the series of the requests that pattern matched (pattern "":
// unmatched).
func (rm *requestMetrics) series(pattern string) *routeSeries {
	rs := rm.routes.get(pattern)
	if rs == nil {
		rs = rm.routes.add(pattern, func() *routeSeries { return &routeSeries{route: routeOf(pattern)} })
	}
	return rs
}

// observe counts a request that pattern matched (pattern "": unmatched),
// answered with status after nanos, whose duration falls in bucket.
func (rm *requestMetrics) observe(pattern, method string, status int, nanos int64, bucket int) {
	rm.series(pattern).observe(method, status, nanos, bucket)
}

// seriesMemo is a recorder's memo of the route series and the tenant
// counters its last request counted in, and of which Metrics: the next
// request a recorder serves (recorders are pooled per processor, so
// mostly one of the same client) finds them by comparing the strings
// (one of them the same ServeMux pattern each time) instead of hashing
// them into the two maps. A series or counters, once made, stay for the
// process's life, so a memo is never stale.
type seriesMemo struct {
	m        *Metrics
	pattern  string
	rs       *routeSeries
	tenantID string
	tc       *tenantCounters
}

// route is m's series of pattern.
func (c *seriesMemo) route(pattern string) *routeSeries {
	if c.rs == nil || c.pattern != pattern {
		c.pattern, c.rs = pattern, c.m.requests.series(pattern)
	}
	return c.rs
}

// tenant is m's counters of tenant ("": the anonymous ones), made with
// backend the first time.
func (c *seriesMemo) tenant(tenant, backend string) *tenantCounters {
	if tenant == "" {
		return &c.m.tenants.anonymous
	}
	if c.tc == nil || c.tenantID != tenant {
		c.tenantID, c.tc = tenant, c.m.tenants.counters(tenant, backend)
	}
	return c.tc
}

// observe counts a request of rs's by method, answered with status after
// nanos, whose duration falls in bucket.
func (rs *routeSeries) observe(method string, status int, nanos int64, bucket int) {
	slot := &rs.methods[methodIndex(method)]
	ms := slot.Load()
	if ms == nil {
		slot.CompareAndSwap(nil, new(methodSeries))
		ms = slot.Load()
	}
	if status >= 100 && status < 600 {
		ms.status[status-100].Add(1)
	} else {
		c, _ := ms.odd.LoadOrStore(status, new(atomic.Uint64))
		c.(*atomic.Uint64).Add(1)
	}
	ms.buckets[bucket].Add(1)
	ms.nanos.Add(uint64(max(nanos, 0)))
}

// routeOf is the route label of a ServeMux pattern (Route).
func routeOf(p string) string {
	if i := strings.IndexByte(p, '/'); i > 0 {
		p = p[i:] // drop "GET " (and a host, which we never use)
	}
	if p == "" {
		return "unmatched"
	}
	return p
}

var (
	descRequests = prometheus.NewDesc("listingproxy_http_requests_total",
		"HTTP requests answered, by route pattern, method and status code.",
		[]string{"route", "method", "status"}, nil)
	descRequestDuration = prometheus.NewDesc("listingproxy_http_request_duration_seconds",
		"Time to answer an HTTP request, by route pattern and method.",
		[]string{"route", "method"}, nil)
)

func (rm *requestMetrics) Describe(ch chan<- *prometheus.Desc) {
	ch <- descRequests
	ch <- descRequestDuration
}

// Collect sends a counter per route, method and status seen and a
// histogram per route and method seen. Two patterns of one route (a method
// in one of them) merge into that route's series.
func (rm *requestMetrics) Collect(ch chan<- prometheus.Metric) {
	type series struct {
		status  map[int]uint64
		buckets [len(latencyBounds) + 1]uint64
		nanos   uint64
	}
	type key struct{ route, method string }
	all := map[key]*series{}
	for _, rs := range rm.routes.values() {
		for i := range rs.methods {
			ms := rs.methods[i].Load()
			if ms == nil {
				continue
			}
			k := key{rs.route, methodNames[i]}
			s := all[k]
			if s == nil {
				s = &series{status: map[int]uint64{}}
				all[k] = s
			}
			for j := range ms.status {
				if n := ms.status[j].Load(); n > 0 {
					s.status[j+100] += n
				}
			}
			ms.odd.Range(func(code, n any) bool {
				s.status[code.(int)] += n.(*atomic.Uint64).Load()
				return true
			})
			for j := range ms.buckets {
				s.buckets[j] += ms.buckets[j].Load()
			}
			s.nanos += ms.nanos.Load()
		}
	}
	for k, s := range all {
		for code, n := range s.status {
			ch <- prometheus.MustNewConstMetric(descRequests, prometheus.CounterValue, float64(n), k.route, k.method, strconv.Itoa(code))
		}
		cumulative := make(map[float64]uint64, len(latencyBounds))
		var count uint64
		for j, bound := range latencyBounds {
			count += s.buckets[j]
			cumulative[bound] = count
		}
		count += s.buckets[len(latencyBounds)]
		ch <- prometheus.MustNewConstHistogram(descRequestDuration, count, float64(s.nanos)/1e9, cumulative, k.route, k.method)
	}
}

// cowMap is a map read without a lock and copied whole when a key is
// added: for the few keys (route patterns, tenants) that every request
// looks up, a plain map's read with no sync.Map around it. Adding the nth
// key copies n-1 entries, once per key (a tenant's first request at 10,000
// tenants: ~10,000 entries). The zero value is empty.
type cowMap[V comparable] struct {
	m  atomic.Pointer[map[string]V]
	mu sync.Mutex // serialises adds
}

// get is k's value, the zero V when k has none.
func (c *cowMap[V]) get(k string) V {
	var v V
	if p := c.m.Load(); p != nil {
		v = (*p)[k]
	}
	return v
}

// add returns k's value, storing newV() first if k has none.
func (c *cowMap[V]) add(k string, newV func() V) V {
	c.mu.Lock()
	defer c.mu.Unlock()
	var zero V
	if v := c.get(k); v != zero {
		return v
	}
	var old map[string]V
	if p := c.m.Load(); p != nil {
		old = *p
	}
	next := maps.Clone(old)
	if next == nil {
		next = map[string]V{}
	}
	v := newV()
	next[k] = v
	c.m.Store(&next)
	return v
}

// values are the map's values, in no order.
func (c *cowMap[V]) values() []V {
	p := c.m.Load()
	if p == nil {
		return nil
	}
	return slices.Collect(maps.Values(*p))
}
