package sqlstore

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"listingproxy/upstream"
)

// TestNullColumns: a legacy database without our NOT NULL constraints may
// hold NULL in any column but the keys. Such a row is served, not a failed
// list: NULL text reads as empty, NULL flags as false, and NULL coordinates
// and sizes stay missing (never 0).
func TestNullColumns(t *testing.T) {
	ctx := context.Background()
	st, err := Open(ctx, Config{DSN: filepath.Join(t.TempDir(), "legacy.db"), Now: func() time.Time { return testNow }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	schema, err := schemas.ReadFile("schema/sqlite.sql")
	if err != nil {
		t.Fatal(err)
	}
	// The legacy database: our tables without NOT NULL.
	for _, stmt := range splitStatements(strings.ReplaceAll(string(schema), " NOT NULL", "")) {
		if _, err := st.db.ExecContext(ctx, stmt); err != nil {
			t.Fatal(err)
		}
	}
	for _, stmt := range []string{
		`INSERT INTO tenants (id, name) VALUES (1, 'legacy')`,
		`INSERT INTO properties (id, tenant_id, country, agency_id, last_updated, status, street_number, street_name,
			address_display, latitude, longitude, price_text, price_type, category, property_type, suburb, area, region,
			built_in, description, featured)
		 VALUES (7, 1, 'au', NULL, '2026-03-01 10:00:00', 'CURRENT', NULL, NULL,
			NULL, NULL, NULL, NULL, NULL, 'Residential', NULL, NULL, NULL, NULL, NULL, NULL, NULL)`,
		`INSERT INTO agents (id, tenant_id, country, name, username, phone, after_hours_phone, mobile_phone, email,
			description, photo_url, website_url)
		 VALUES (3, 1, 'au', 'Jane', 'jane', NULL, NULL, NULL, NULL, NULL, NULL, NULL)`,
	} {
		if _, err := st.db.ExecContext(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	if err := st.Migrate(ctx); err != nil { // indexes and hints on the existing tables
		t.Fatal(err)
	}
	scope := upstream.Scope{Tenant: "legacy", Country: "au"}
	ps, err := st.ListProperties(ctx, scope, parseProps(t, "detail=full"))
	if err != nil {
		t.Fatalf("ListProperties: %v", err)
	}
	if len(ps) != 1 {
		t.Fatalf("got %d properties, want 1", len(ps))
	}
	got := ps[0]
	if got.Latitude != nil || got.Longitude != nil {
		t.Errorf("coordinates = %v, %v, want missing (nil)", got.Latitude, got.Longitude)
	}
	if got.Bedrooms != nil || got.FloorSize != nil || got.PriceFrom != nil {
		t.Errorf("bedrooms, floor_size, price_from = %v, %v, %v, want missing", got.Bedrooms, got.FloorSize, got.PriceFrom)
	}
	if got.StreetName != "" || got.Description != "" || got.AddressDisplay || got.Featured {
		t.Errorf("NULL text or flags read as %+v", got)
	}
	a, err := st.GetAgent(ctx, scope, 3)
	if err != nil {
		t.Fatalf("GetAgent: %v", err)
	}
	want := upstream.Agent{ID: 3, Name: "Jane", Username: "jane"}
	if diff := cmp.Diff(want, a, cmp.FilterPath(func(p cmp.Path) bool {
		return p.Last().String() == ".Properties"
	}, cmp.Ignore())); diff != "" {
		t.Errorf("GetAgent (-want +got):\n%s", diff)
	}
}
