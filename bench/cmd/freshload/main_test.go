package main

import (
	"slices"
	"testing"
	"time"
)

func TestPercentile(t *testing.T) {
	ms := func(v ...int) []time.Duration {
		out := make([]time.Duration, len(v))
		for i, x := range v {
			out[i] = time.Duration(x) * time.Millisecond
		}
		return out
	}
	hundred := make([]int, 100)
	for i := range hundred {
		hundred[i] = i + 1
	}
	for _, c := range []struct {
		in   []time.Duration
		q    float64
		want time.Duration
	}{
		{ms(7), 0.5, 7 * time.Millisecond},
		{ms(7), 1, 7 * time.Millisecond},
		{ms(1, 2, 3, 4), 0.5, 2 * time.Millisecond},
		{ms(1, 2, 3, 4), 0.51, 3 * time.Millisecond},
		{ms(1, 2, 3, 4), 0.99, 4 * time.Millisecond},
		{ms(hundred...), 0.99, 99 * time.Millisecond},
		{ms(hundred...), 0.5, 50 * time.Millisecond},
		{ms(hundred...), 1, 100 * time.Millisecond},
		{ms(hundred...), 0.001, 1 * time.Millisecond},
	} {
		if got := Percentile(c.in, c.q); got != c.want {
			t.Errorf("Percentile(%v, %v) = %v, want %v", c.in, c.q, got, c.want)
		}
	}
}

func TestSumMetric(t *testing.T) {
	page := `# HELP listingproxy_cache_purges_total Cache purges.
# TYPE listingproxy_cache_purges_total counter
listingproxy_cache_purges_total{kind="entity",mode="soft",source="notify"} 250
listingproxy_cache_purges_total{kind="tenant",mode="soft",source="notify"} 2
listingproxy_cache_purges_total{kind="tenant",mode="hard",source="admin"} 1
listingproxy_cache_purges_total_extra{kind="tenant"} 100
listingproxy_backend_request_duration_seconds_bucket{backend="main",operation="list",le="0.1"} 5
listingproxy_backend_request_duration_seconds_count{backend="main",operation="list"} 40
listingproxy_backend_request_duration_seconds_count{backend="main",operation="get"} 2.5e+01
listingproxy_change_feed_gaps_total 3
`
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"listingproxy_cache_purges_total", []string{`kind="tenant"`}, 3},
		{"listingproxy_cache_purges_total", []string{`kind="tenant"`, `mode="soft"`}, 2},
		{"listingproxy_cache_purges_total", nil, 253},
		{"listingproxy_backend_request_duration_seconds_count", nil, 65},
		{"listingproxy_change_feed_gaps_total", nil, 3},
		{"listingproxy_absent_total", nil, 0},
	} {
		if got := SumMetric(page, c.name, c.labels...); got != c.want {
			t.Errorf("SumMetric(%s, %v) = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
}

func TestShows(t *testing.T) {
	if !SQLShows("Fresh abc 12", "abc", 12) || !SQLShows("Fresh abc 13", "abc", 12) {
		t.Error("the update's marker or a later one is not seen")
	}
	for _, p := range []string{"Fresh abc 11", "Fresh abd 12", "Fresh abc 12x", "$500,000", ""} {
		if SQLShows(p, "abc", 12) {
			t.Errorf("SQLShows(%q) for update 12 of run abc", p)
		}
	}
	t0 := time.Date(2026, 11, 27, 19, 0, 5, 0, time.UTC)
	if !CRMShows("Offers from 2026-11-27T19:00:05Z", t0) || !CRMShows("Offers from 2026-11-27T19:00:09Z", t0) {
		t.Error("the CRM's change in t0's second or later is not seen")
	}
	for _, p := range []string{"Offers from 2026-11-27T19:00:04Z", "Offers from yesterday", "Offers over $500,000"} {
		if CRMShows(p, t0) {
			t.Errorf("CRMShows(%q) for a change at %v", p, t0)
		}
	}
}

func TestListIDs(t *testing.T) {
	for _, c := range []struct {
		body string
		want []int64
	}{
		{`{"properties":{"count":"2","property":[{"id":"1","agents":{"count":"1","agent":[{"id":"4","name":"T"}]}},{"id":"2","agents":{"agent":[{"id":"28"}]}}]}}`, []int64{1, 2}},
		{`{"properties":{"count":"1","property":{"id":"7","agents":{"agent":{"id":"3"}}}}}`, []int64{7}},
		{`{"properties":{"count":"0"}}`, []int64{}},
	} {
		got, err := ListIDs(c.body)
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("ListIDs(%s) = %v, %v; want %v", c.body, got, err, c.want)
		}
	}
	for _, bad := range []string{`<properties/>`, `{"properties":{"property":[{"id":"x"}]}}`} {
		if _, err := ListIDs(bad); err == nil {
			t.Errorf("ListIDs(%s): no error", bad)
		}
	}
}
