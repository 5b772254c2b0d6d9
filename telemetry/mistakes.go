package telemetry

import "github.com/prometheus/client_golang/prometheus"

// mistakeCounters count the mistakes of API clients that the spec answers
// with HTTP 200 (an error list in place of the list), so that no status
// code shows them: criteria errors by parameter, and parameters a list
// does not take.
type mistakeCounters struct {
	criteria *prometheus.CounterVec
	unknown  *prometheus.CounterVec
}

func newMistakeCounters() mistakeCounters {
	return mistakeCounters{
		criteria: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "listingproxy_criteria_errors_total",
			Help: "List requests answered with the spec's error list (HTTP 200), by tenant and the parameter each error names (the spec's parameter names; other for any other field); a request with errors on two parameters counts once for each.",
		}, []string{"tenant", "param"}),
		unknown: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "listingproxy_unknown_params_total",
			Help: "Query parameters that list requests carried and their list does not take, by tenant and name (a parameter of the spec's other list, such as bedrooms on agents; other for any name the spec does not have): ignored, or refused with the error list for a tenant with strict_params.",
		}, []string{"tenant", "param"}),
	}
}

func (c mistakeCounters) collectors() []prometheus.Collector {
	return []prometheus.Collector{c.criteria, c.unknown}
}

// ClientMistakes counts a request of tenant answered with the error list
// on the parameters criteria, and the parameters a list does not take
// that it carried, unknown. The labels are the caller's to bound: the
// proxy gives the spec's parameter names or "other"
// (normalize.ParamLabel).
func (m *Metrics) ClientMistakes(tenant string, criteria, unknown []string) {
	for _, p := range criteria {
		m.mistakes.criteria.WithLabelValues(tenant, p).Inc()
	}
	for _, p := range unknown {
		m.mistakes.unknown.WithLabelValues(tenant, p).Inc()
	}
}
