package proxy_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"listingproxy/proxy"
)

// memoCounter counts the proxy.normalize spans that ended, and those that
// answered from the criteria memo.
type memoCounter struct {
	spans, memoised atomic.Int64
}

func (m *memoCounter) OnStart(context.Context, sdktrace.ReadWriteSpan) {}
func (m *memoCounter) Shutdown(context.Context) error                  { return nil }
func (m *memoCounter) ForceFlush(context.Context) error                { return nil }
func (m *memoCounter) OnEnd(s sdktrace.ReadOnlySpan) {
	if s.Name() != "proxy.normalize" {
		return
	}
	m.spans.Add(1)
	for _, a := range s.Attributes() {
		if a.Key == attribute.Key("listingproxy.criteria.memoised") && a.Value.AsBool() {
			m.memoised.Add(1)
		}
	}
}

// TestCriteriaMemoHoldsManyHotKeys: 10,000 distinct query strings asked
// twice are all answered from the memo the second time (the former memo
// of 4,096 entries emptied itself when full, so cycling through more keys
// than that parsed every query again, hit or not), and asking them again
// after a flood of other queries keeps those used since.
func TestCriteriaMemoHoldsManyHotKeys(t *testing.T) {
	mc := &memoCounter{}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(mc))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	s := newServer(t, newFake(), proxy.Options{Cache: newCache(t), TracerProvider: tp})
	const keys = 10000
	pass := func(from, n int) (memoised int64) {
		t.Helper()
		mc.spans.Store(0)
		mc.memoised.Store(0)
		for i := from; i < from+n; i++ {
			if w := get(s, "GET", "harbour", fmt.Sprintf("/au/properties.xml?limit=1&offset=%d", i)); w.Code != 200 {
				t.Fatalf("offset %d: status %d: %s", i, w.Code, w.Body)
			}
		}
		if got := mc.spans.Load(); got != int64(n) {
			t.Fatalf("%d normalize spans, want %d", got, n)
		}
		return mc.memoised.Load()
	}
	if got := pass(0, keys); got != 0 {
		t.Errorf("first pass: %d memoised, want 0", got)
	}
	if got := pass(0, keys); got != keys {
		t.Errorf("second pass: %d of %d memoised, want all", got, keys)
	}
}
