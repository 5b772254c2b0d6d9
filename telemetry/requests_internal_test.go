package telemetry

import (
	"bytes"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
)

// TestRequestMetricsAsPrometheus: requestMetrics, counted in place and
// turned into series at scrape time, exposes what a CounterVec and a
// HistogramVec fed the same requests expose, line for line: every route,
// method (a foreign one as OTHER) and status (one of net/http's 600-999
// too), durations on bucket bounds and off them, two patterns of one
// route merged.
func TestRequestMetricsAsPrometheus(t *testing.T) {
	reqs := []struct {
		pattern, method string
		status          int
		d               time.Duration
	}{
		{"GET /{country}/properties.json", "GET", 200, 0},
		{"GET /{country}/properties.json", "GET", 200, 1953125}, // 2^-9 s: exact in both sums
		{"GET /{country}/properties.json", "GET", 304, 250 * time.Millisecond},
		{"GET /{country}/properties.json", "HEAD", 200, 500 * time.Millisecond},
		{"/{country}/properties.json", "GET", 200, 2 * time.Second}, // another pattern of the same route
		{"/{country}/properties.json", "BREW", 405, 3906250},
		{"", "GET", 404, 16 * time.Second}, // unmatched, above the last bound
		{"GET /healthz", "GET", 799, 1953125 * 4},
		{"GET /healthz", "GET", 599, time.Second},
		{"GET /healthz", "GET", 100, 0},
	}
	var rm requestMetrics
	ref := struct {
		count    *prometheus.CounterVec
		duration *prometheus.HistogramVec
	}{
		prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "listingproxy_http_requests_total",
			Help: "HTTP requests answered, by route pattern, method and status code.",
		}, []string{"route", "method", "status"}),
		prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "listingproxy_http_request_duration_seconds",
			Help:    "Time to answer an HTTP request, by route pattern and method.",
			Buckets: latencyBuckets,
		}, []string{"route", "method"}),
	}
	for _, q := range reqs {
		rm.observe(q.pattern, q.method, q.status, int64(q.d), latencyBucket(q.d))
		route, method := routeOf(q.pattern), methodLabel(q.method)
		ref.count.WithLabelValues(route, method, strconv.Itoa(q.status)).Inc()
		ref.duration.WithLabelValues(route, method).Observe(q.d.Seconds())
	}
	expose := func(cs ...prometheus.Collector) string {
		reg := prometheus.NewPedanticRegistry()
		for _, c := range cs {
			reg.MustRegister(c)
		}
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		for _, mf := range mfs {
			if _, err := expfmt.MetricFamilyToText(&b, mf); err != nil {
				t.Fatal(err)
			}
		}
		return b.String()
	}
	got, want := expose(&rm), expose(ref.count, ref.duration)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("requestMetrics' exposition differs from Prometheus's own vectors (-want +got):\n%s", diff)
	}
	if !bytes.Contains([]byte(got), []byte(`status="799"`)) || !bytes.Contains([]byte(got), []byte(`method="OTHER"`)) {
		t.Errorf("exposition lacks the odd status or the OTHER method:\n%s", got)
	}
}

// TestRequestMetricsConcurrent: requests counted from many goroutines, on
// routes that appear while others are counted, are all counted (go test
// -race checks the copy-on-write map).
func TestRequestMetricsConcurrent(t *testing.T) {
	var rm requestMetrics
	const workers, each = 8, 500
	done := make(chan struct{})
	for w := range workers {
		go func() {
			defer func() { done <- struct{}{} }()
			for i := range each {
				rm.observe("GET /r"+strconv.Itoa((w+i)%16), "GET", 200, 1000, 1)
			}
		}()
	}
	for range workers {
		<-done
	}
	var total uint64
	for _, rs := range rm.routes.values() {
		ms := rs.methods[0].Load()
		total += ms.status[100].Load()
		if ms.buckets[1].Load() != ms.status[100].Load() {
			t.Errorf("%s: %d in bucket 1, %d with status 200", rs.route, ms.buckets[1].Load(), ms.status[100].Load())
		}
	}
	if routes := len(rm.routes.values()); total != workers*each || routes != 16 {
		t.Errorf("%d requests over %d routes, want %d over 16", total, routes, workers*each)
	}
}

// TestLatencyBucket: a duration on a bound, a nanosecond either side of
// it, zero and past the last bound fall in the bucket Prometheus's own
// histogram puts their seconds in (the first bound at or above).
func TestLatencyBucket(t *testing.T) {
	ds := []time.Duration{0, 1, 100 * time.Hour}
	for _, b := range latencyBounds {
		d := time.Duration(b * 1e9)
		ds = append(ds, d-1, d, d+1)
	}
	for _, d := range ds {
		want := sort.SearchFloat64s(latencyBounds[:], d.Seconds())
		if got := latencyBucket(d); got != want {
			t.Errorf("latencyBucket(%v) = %d, want %d", d, got, want)
		}
	}
}

// TestMethodIndex: every method the label names, and a foreign one, finds
// the series slot of its own label.
func TestMethodIndex(t *testing.T) {
	for _, m := range []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "CONNECT", "TRACE", "BREW", "get", ""} {
		if got, want := methodNames[methodIndex(m)], methodLabel(m); got != want {
			t.Errorf("method %q: slot of %q, want %q", m, got, want)
		}
	}
}
