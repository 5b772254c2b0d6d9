package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"listingproxy/cache"
	"listingproxy/cache/disktier"
	"listingproxy/config"
	"listingproxy/proxy"
	"listingproxy/telemetry"
	"listingproxy/upstream/crm"
	"listingproxy/upstream/sqlstore"
)

// TestDocumentedDefaults: the defaults docs/configuration.md lists are the
// ones the owning packages apply (config leaves every other zero knob zero),
// so the documentation and the code cannot drift apart. breaker.* and
// cache.shared.* are checked by their own packages' tests.
func TestDocumentedDefaults(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("../../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	pol := proxy.DefaultPolicy
	want := map[string]string{
		"listen":                                config.DefaultListen,
		"admin_listen":                          config.DefaultAdminListen,
		"countries":                             "[" + strings.Join(config.DefaultCountries(), ", ") + "]",
		"max_results":                           strconv.Itoa(proxy.DefaultMaxResults),
		"backends.NAME.max_open_conns":          fmt.Sprintf("%d (sqlite %d)", sqlstore.DefaultMaxOpenConns, sqlstore.DefaultSQLiteMaxOpenConns),
		"backends.NAME.prepared_statements":     fmt.Sprintf("%d (sqlite %d)", sqlstore.DefaultMySQLPreparedStatements, sqlstore.DefaultSQLitePreparedStatements),
		"backends.NAME.conn_max_lifetime":       duration(sqlstore.DefaultConnMaxLifetime),
		"backends.NAME.query_timeout":           duration(sqlstore.DefaultQueryTimeout),
		"backends.NAME.timeout":                 duration(crm.DefaultTimeout),
		"backends.NAME.max_concurrency":         strconv.Itoa(crm.DefaultMaxConcurrency),
		"backends.NAME.hydrate":                 zeroHydrate(),
		"backends.NAME.hydrate_concurrency":     strconv.Itoa(crm.DefaultHydrateConcurrency),
		"backends.NAME.doc_ttl":                 duration(crm.DefaultDocTTL),
		"backends.NAME.max_body_bytes":          size(crm.DefaultMaxBodyBytes),
		"backends.NAME.max_elements":            strconv.Itoa(crm.DefaultMaxElements),
		"backends.NAME.max_decoding_bytes":      size(crm.DefaultMaxDecodingBytes),
		"auth.queue":                            strconv.Itoa(proxy.DefaultAuthQueue),
		"auth.checks_per_second":                strconv.Itoa(proxy.DefaultChecksPerSecond),
		"auth.failures_per_address.per_minute":  perMinute(proxy.DefaultAddressFailures),
		"auth.failures_per_address.burst":       strconv.Itoa(proxy.DefaultAddressFailures.Burst),
		"auth.failures_per_username.per_minute": perMinute(proxy.DefaultUsernameFailures),
		"auth.failures_per_username.burst":      strconv.Itoa(proxy.DefaultUsernameFailures.Burst),
		"auth.refusal_delay":                    duration(proxy.DefaultRefusalDelay),
		"auth.verified_entries":                 strconv.Itoa(proxy.DefaultVerifiedEntries),
		"cache.max_bytes":                       size(cache.DefaultMaxBytes),
		"cache.ttl":                             duration(pol.TTL),
		"cache.stale_while_revalidate":          duration(pol.StaleWhileRevalidate),
		"cache.stale_if_error":                  duration(pol.StaleIfError),
		"cache.negative_ttl":                    duration(pol.NegativeTTL),
		"cache.fill_timeout":                    duration(pol.FillTimeout),
		"cache.refresh_ahead":                   strconv.FormatFloat(proxy.DefaultRefreshAhead, 'g', -1, 64),
		"cache.refresh_hits":                    strconv.Itoa(cache.DefaultRefreshHits),
		"cache.refresh_budget":                  strconv.Itoa(proxy.DefaultRefreshBudget),
		"cache.disk.max_bytes":                  size(disktier.DefaultMaxBytes),
		"cache.warm.keys":                       strconv.Itoa(proxy.DefaultHotKeys),
		"server.read_header_timeout":            duration(config.DefaultReadHeaderTimeout),
		"server.read_timeout":                   duration(config.DefaultReadTimeout),
		"server.write_timeout":                  duration(config.DefaultWriteTimeout),
		"server.idle_timeout":                   duration(config.DefaultIdleTimeout),
		"server.max_header_bytes":               size(config.DefaultMaxHeaderBytes),
		"server.drain_delay":                    duration(config.DefaultDrainDelay),
		"server.shutdown_grace":                 duration(config.DefaultShutdownGrace),
		"telemetry.service_name":                telemetry.DefaultServiceName,
		"telemetry.exporter":                    telemetry.ExporterNone, // TraceOptions.Exporter "" is none
		"log.level":                             config.DefaultLogLevel,
		"log.format":                            config.DefaultLogFormat,
	}
	got := map[string]string{}
	for line := range strings.SplitSeq(string(doc), "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 4 {
			continue
		}
		key := strings.Trim(strings.TrimSpace(cells[1]), "`")
		if _, ok := want[key]; ok {
			got[key] = strings.Trim(strings.TrimSpace(cells[2]), "`")
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("docs/configuration.md defaults (-packages +docs):\n%s", diff)
	}
	if p := (config.Cache{}).Policies(proxy.DefaultPolicy).For("agent"); p != pol {
		t.Errorf("policy of an empty cache section = %+v, want proxy.DefaultPolicy %+v", p, pol)
	}
}

// zeroHydrate is the mode an absent hydrate key means.
func zeroHydrate() string {
	m, err := crm.ParseHydrateMode("")
	if err != nil {
		return err.Error()
	}
	return m.String()
}

// duration writes d as the documentation does: 5s, 1m, 2m, 1h.
func duration(d time.Duration) string {
	switch {
	case d%time.Hour == 0:
		return fmt.Sprintf("%dh", d/time.Hour)
	case d%time.Minute == 0:
		return fmt.Sprintf("%dm", d/time.Minute)
	}
	return d.String()
}

// size writes n as the documentation does: 16KiB, 256MiB, 1GiB.
func size[T int | int64](n T) string {
	switch {
	case n%(1<<30) == 0:
		return fmt.Sprintf("%dGiB", n>>30)
	case n%(1<<20) == 0:
		return fmt.Sprintf("%dMiB", n>>20)
	case n%(1<<10) == 0:
		return fmt.Sprintf("%dKiB", n>>10)
	}
	return strconv.FormatInt(int64(n), 10)
}

func perMinute(l proxy.Limit) string { return strconv.FormatFloat(l.PerSecond*60, 'g', -1, 64) }
