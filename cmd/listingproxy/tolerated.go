package main

import (
	"maps"
	"slices"

	"github.com/prometheus/client_golang/prometheus"

	"listingproxy/proxy"
	"listingproxy/upstream"
	"listingproxy/upstream/crm"
)

// registerCRMFlaws exports listingproxy_crm_tolerated_total{backend,flaw}:
// the flaws of CRM answers that were served anyway (docs/crm.md, "Tolerated
// flaws"), each also logged as a warning; and
// listingproxy_crm_panics_total{backend}: answers whose reading panicked
// (listingproxy's bug, logged with its stack).
func registerCRMFlaws(reg prometheus.Registerer, backends map[string]upstream.Backend) error {
	flaws := []struct {
		name string
		read func(crm.Stats) int64
	}{
		{"bad_value", func(s crm.Stats) int64 { return s.BadValues }},
		{"mislabelled_content_type", func(s crm.Stats) int64 { return s.Mislabelled }},
		{"not_utf8", func(s crm.Stats) int64 { return s.Repaired }},
		{"xml_1_1", func(s crm.Stats) int64 { return s.XML11 }},
		{"ignored_paging", func(s crm.Stats) int64 { return s.PagedHere }},
	}
	for _, name := range slices.Sorted(maps.Keys(backends)) {
		c, ok := backends[name].(*crm.Client)
		if !ok {
			continue
		}
		decoding := []prometheus.Collector{
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{
				Name:        "listingproxy_crm_decoding_bytes",
				Help:        "Bytes of CRM answers being decoded now: the part of max_decoding_bytes granted.",
				ConstLabels: prometheus.Labels{"backend": name},
			}, func() float64 { return float64(c.Stats().DecodingBytes) }),
			prometheus.NewCounterFunc(prometheus.CounterOpts{
				Name:        "listingproxy_crm_decode_budget_waits_total",
				Help:        "CRM answers that had to wait for room in max_decoding_bytes (a wait that outlasts the timeout is a 503 counted by no breaker).",
				ConstLabels: prometheus.Labels{"backend": name},
			}, func() float64 { return float64(c.Stats().BudgetWaits) }),
		}
		for _, m := range decoding {
			if err := reg.Register(m); err != nil {
				return err
			}
		}
		for _, f := range flaws {
			m := prometheus.NewCounterFunc(prometheus.CounterOpts{
				Name:        "listingproxy_crm_tolerated_total",
				Help:        "Flaws of CRM answers that were served anyway: a value that could not be read, a content type that is not XML, bytes that are not UTF-8, an XML 1.1 declaration (read as 1.0), a list with more records than its limit (paged here).",
				ConstLabels: prometheus.Labels{"backend": name, "flaw": f.name},
			}, func() float64 { return float64(f.read(c.Stats())) })
			if err := reg.Register(m); err != nil {
				return err
			}
		}
		panics := prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name:        "listingproxy_crm_panics_total",
			Help:        "CRM answers whose reading panicked: a bug of listingproxy (logged with its stack), not counted against the CRM's breakers.",
			ConstLabels: prometheus.Labels{"backend": name},
		}, func() float64 { return float64(c.Stats().Panics) })
		if err := reg.Register(panics); err != nil {
			return err
		}
	}
	return nil
}

// cappedLists is listingproxy_lists_capped_total: backend lists cut at
// max_results (proxy.Server.CappedLists), each also logged.
func cappedLists(srv *proxy.Server) prometheus.Collector {
	return prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "listingproxy_lists_capped_total",
		Help: "Backend lists cut at max_results: the limit was the cap (the client asked for more, or gave none) and the list came back full.",
	}, func() float64 { return float64(srv.CappedLists()) })
}
