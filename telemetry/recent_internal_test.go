package telemetry

import (
	"testing"
	"time"
)

// TestRecentLatency: a tenant's recent latencies are those of the minute
// under way and the one before; older minutes drop out, and a minute's
// window is reused two minutes later without the old counts.
func TestRecentLatency(t *testing.T) {
	var tr tenantTraffic
	count := func(seconds float64, minute int64) {
		tr.count("harbour", "demo", "hit", 200, false, latencyBucket(time.Duration(seconds*1e9)), minute)
	}
	recent := func(now int64) (n uint64, p99 float64) {
		s := tr.snapshot(now)[0]
		return s.Recent.Count(), s.Recent.Quantile(0.99)
	}
	count(2, 10) // a slow one at minute 10
	count(0.001, 11)
	count(0.001, 11)
	if n, p99 := recent(11); n != 3 || p99 <= 1 {
		t.Errorf("minute 11: %d recent, p99 %v; want 3, the slow one's bucket", n, p99)
	}
	if n, p99 := recent(12); n != 2 || p99 > 0.001 {
		t.Errorf("minute 12: %d recent, p99 %v; want minute 11's 2, fast", n, p99)
	}
	if n, _ := recent(13); n != 0 {
		t.Errorf("minute 13: %d recent, want 0", n)
	}
	count(0.0001, 12) // reuses minute 10's window
	if n, p99 := recent(12); n != 3 || p99 > 0.001 {
		t.Errorf("minute 12 after a request: %d recent, p99 %v; want 3, none of minute 10's", n, p99)
	}
	if s := tr.snapshot(12)[0]; s.Latency.Count() != 4 || s.Requests != 4 {
		t.Errorf("since start: %d latencies, %d requests; want 4", s.Latency.Count(), s.Requests)
	}
}
