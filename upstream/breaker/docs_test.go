package breaker_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"listingproxy/internal/testkit"
	"listingproxy/upstream/breaker"
)

// TestDocumentedBreakerDefaults: the defaults docs/configuration.md lists
// for breaker.* are this package's, the one source of them.
func TestDocumentedBreakerDefaults(t *testing.T) {
	got := testkit.DocumentedDefaults(t, "../../docs/configuration.md", func(key string) bool {
		return strings.HasPrefix(key, "breaker.") && key != "breaker.*"
	})
	d := breaker.Settings{}.WithDefaults()
	want := map[string]string{
		"breaker.failures":         itoa(d.ConsecutiveFailures),
		"breaker.failure_ratio":    "0 (off)",
		"breaker.min_requests":     itoa(d.MinRequests),
		"breaker.window":           d.Window.String(),
		"breaker.open_for":         d.OpenFor.String(),
		"breaker.half_open_probes": itoa(d.HalfOpenProbes),
		"breaker.tenant_share":     strconv.FormatFloat(d.TenantShare, 'g', -1, 64),
		"breaker.queue_timeout":    d.QueueTimeout.String(),
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("docs/configuration.md breaker defaults (-package +docs):\n%s", diff)
	}
}

func itoa(n uint32) string { return strconv.FormatUint(uint64(n), 10) }
