package main

import (
	"strings"
	"testing"

	"listingproxy/config"
)

// TestCRMConfig checks that testdata/config.crm.yaml, the README's way to
// run listingproxy in front of this stand-in, loads and says what the README
// says: harbour on the embedded demo, summit on the CRM with the default
// upstream user of legacy-crm.
func TestCRMConfig(t *testing.T) {
	const path = "../../testdata/config.crm.yaml"
	env := map[string]string{"SUMMIT_CRM_PASSWORD": "summit-crm"}
	cfg, err := config.Load(path, func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	summit, harbour := cfg.Tenants["summit"], cfg.Tenants["harbour"]
	if b := cfg.Backends[summit.Backend]; b.CRM == nil || b.CRM.URL != "http://127.0.0.1:9000" {
		t.Errorf("summit's backend %s = %+v, want the CRM at http://127.0.0.1:9000", summit.Backend, b)
	}
	if summit.UpstreamUsername != "summit" || summit.UpstreamPassword != "summit-crm" {
		t.Errorf("summit's upstream login = %q/%q, want summit/summit-crm (from the environment)", summit.UpstreamUsername, summit.UpstreamPassword)
	}
	if !strings.Contains(defaultUsers[1], "summit:summit-crm:summit:") {
		t.Errorf("legacy-crm's default summit user %q no longer matches the configuration", defaultUsers[1])
	}
	if b := cfg.Backends[harbour.Backend]; b.Kind != config.KindSQLite || !b.SQL.SeedDemo {
		t.Errorf("harbour's backend %s = %+v, want the seeded SQLite demo", harbour.Backend, b)
	}
	if len(cfg.Users) != 4 {
		t.Errorf("got %d users, want the 4 of config.yaml", len(cfg.Users))
	}

	// Without the variable, loading fails and names it.
	_, err = config.Load(path, func(string) string { return "" })
	if err == nil || !strings.Contains(err.Error(), "SUMMIT_CRM_PASSWORD") {
		t.Errorf("without SUMMIT_CRM_PASSWORD: err = %v, want one naming the variable", err)
	}
}
