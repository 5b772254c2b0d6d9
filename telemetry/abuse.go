package telemetry

import "github.com/prometheus/client_golang/prometheus"

// authRejectionReasons are the reasons listingproxy_auth_rejections_total
// counts: no credentials, malformed or wrong ones (both 401), too many
// failures from the address or for the username, and the bcrypt pool full
// (both 429).
var authRejectionReasons = []string{"missing", "bad_credentials", "throttled", "pool_full"}

// abuseCounters count requests refused before their handler ran. They are
// updated on refusals only, never on an answered request.
type abuseCounters struct {
	authRejections *prometheus.CounterVec
	tenantLimited  *prometheus.CounterVec
}

func newAbuseCounters() abuseCounters {
	c := abuseCounters{
		authRejections: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "listingproxy_auth_rejections_total",
			Help: "API requests refused by authentication, by reason: missing, bad_credentials (401), throttled, pool_full (429).",
		}, []string{"reason"}),
		tenantLimited: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "listingproxy_tenant_rate_limited_total",
			Help: "API requests refused (429) by their tenant's rate limit, by tenant.",
		}, []string{"tenant"}),
	}
	for _, r := range authRejectionReasons {
		c.authRejections.WithLabelValues(r)
	}
	return c
}

func (c abuseCounters) collectors() []prometheus.Collector {
	return []prometheus.Collector{c.authRejections, c.tenantLimited}
}

// AuthRejected counts an API request refused by authentication for reason
// (missing, bad_credentials, throttled or pool_full).
func (m *Metrics) AuthRejected(reason string) { m.abuse.authRejections.WithLabelValues(reason).Inc() }

// TenantLimited counts an API request refused by tenant's rate limit.
func (m *Metrics) TenantLimited(tenant string) { m.abuse.tenantLimited.WithLabelValues(tenant).Inc() }

// InitTenantLimit exports tenant's rate-limit counter at zero, so that
// rates and alerts work before its first refusal.
func (m *Metrics) InitTenantLimit(tenant string) { m.abuse.tenantLimited.WithLabelValues(tenant) }
