package telemetry_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"listingproxy/cache/redistier"
	"listingproxy/internal/testkit"
	"listingproxy/telemetry"
	"listingproxy/upstream"
	"listingproxy/upstream/crm"
)

// notReady is a backend whose database has not answered yet.
type notReady struct{ upstream.Backend }

func (notReady) Ready() error { return errors.New("not yet") }

// TestWatchedFamilies: the families read from other packages' counters at
// scrape time report those counters, under their documented names and
// labels.
func TestWatchedFamilies(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := telemetry.NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	fake := &testkit.Backend{}
	m.WatchBackendReady(map[string]upstream.Backend{"db": notReady{fake}, "demo": fake})
	crmStats := crm.Stats{DecodingBytes: 4096, BudgetWaits: 2, BadValues: 3, Mislabelled: 4, Repaired: 5, XML11: 6, PagedHere: 7, Panics: 1}
	m.WatchCRM("legacy", func() crm.Stats { return crmStats })
	m.WatchCappedLists(func() int64 { return 9 })
	shared := telemetry.NewSharedCacheMetrics()
	if err := shared.Register(reg, func() redistier.Stats { return redistier.Stats{Hits: 11, Synced: true, PurgesPending: 2} }); err != nil {
		t.Fatal(err)
	}
	shared.Observe("get", time.Millisecond, nil)
	shared.Observe("set", time.Millisecond, errors.New("down"))

	text := scrape(t, reg)
	for _, want := range []string{
		`listingproxy_backend_ready{backend="db"} 0`,
		`listingproxy_backend_ready{backend="demo"} 1`,
		`listingproxy_crm_decoding_bytes{backend="legacy"} 4096`,
		`listingproxy_crm_decode_budget_waits_total{backend="legacy"} 2`,
		`listingproxy_crm_tolerated_total{backend="legacy",flaw="bad_value"} 3`,
		`listingproxy_crm_tolerated_total{backend="legacy",flaw="mislabelled_content_type"} 4`,
		`listingproxy_crm_tolerated_total{backend="legacy",flaw="not_utf8"} 5`,
		`listingproxy_crm_tolerated_total{backend="legacy",flaw="xml_1_1"} 6`,
		`listingproxy_crm_tolerated_total{backend="legacy",flaw="ignored_paging"} 7`,
		`listingproxy_crm_panics_total{backend="legacy"} 1`,
		`listingproxy_lists_capped_total 9`,
		`listingproxy_shared_cache_hits_total 11`,
		`listingproxy_shared_cache_synced 1`,
		`listingproxy_shared_cache_breaker_open 0`,
		`listingproxy_shared_cache_purges_pending 2`,
		`listingproxy_shared_cache_operation_seconds_count{op="get",result="ok"} 1`,
		`listingproxy_shared_cache_operation_seconds_count{op="set",result="error"} 1`,
	} {
		if !strings.Contains(text, want+"\n") {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if err := m.Err(); err != nil {
		t.Fatal(err)
	}
	m.WatchCRM("legacy", func() crm.Stats { return crmStats })
	if err := m.Err(); err == nil || !strings.Contains(err.Error(), "CRM families of backend legacy: ") {
		t.Errorf("a second WatchCRM of one backend: Err() = %v, want the registry's duplicate error, named", err)
	}
}
