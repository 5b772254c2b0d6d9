package sqlstore

import (
	"context"
	"database/sql"
	"errors"
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

// TestScannersAgreeWithDatabaseSQL: textOrEmpty and flagOrFalse read the
// values drivers return without database/sql's conversion; every value
// reads as sql.NullString and sql.NullBool read it (NULL as empty or false),
// and what those refuse is refused.
func TestScannersAgreeWithDatabaseSQL(t *testing.T) {
	for _, v := range []any{"text", "", []byte("bytes"), []byte{}, nil, int64(42), 2.5, true, time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)} {
		var ns sql.NullString
		wantErr := ns.Scan(v)
		got := "unchanged"
		err := textOrEmpty{&got}.Scan(v)
		if (err != nil) != (wantErr != nil) || (err == nil && got != ns.String) {
			t.Errorf("textOrEmpty.Scan(%#v) = %q, %v; NullString: %q, %v", v, got, err, ns.String, wantErr)
		}
	}
	for _, v := range []any{true, false, int64(0), int64(1), int64(2), int64(-1), nil, "true", "0", []byte("1"), "maybe", 1.0} {
		var nb sql.NullBool
		wantErr := nb.Scan(v)
		got := true
		err := flagOrFalse{&got}.Scan(v)
		if (err != nil) != (wantErr != nil) || (err == nil && got != nb.Bool) {
			t.Errorf("flagOrFalse.Scan(%#v) = %v, %v; NullBool: %v, %v", v, got, err, nb.Bool, wantErr)
		}
	}
}

// TestNullTimeLayouts: dates, SQLite timestamps and the other layouts read
// as before the date fast path, and text of no layout is an error.
func TestNullTimeLayouts(t *testing.T) {
	for in, want := range map[string]time.Time{
		"2026-03-14":                time.Date(2026, 3, 14, 0, 0, 0, 0, time.UTC),
		"2026-03-14T09:26:53Z":      time.Date(2026, 3, 14, 9, 26, 53, 0, time.UTC),
		"2026-03-14T09:26:53.5Z":    time.Date(2026, 3, 14, 9, 26, 53, 5e8, time.UTC),
		"2026-03-14T09:26:53+02:00": time.Date(2026, 3, 14, 7, 26, 53, 0, time.UTC),
		"2026-03-01 10:00:00":       time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC),
	} {
		var n nullTime
		if err := n.Scan(in); err != nil || !n.valid || !n.t.Equal(want) || n.t.Location() != time.UTC {
			t.Errorf("Scan(%q) = %v %v, %v; want %v", in, n.t, n.valid, err, want)
		}
	}
	for _, in := range []string{"2026-13-14", "14/03/2026", "yesterday"} {
		var n nullTime
		if err := n.Scan(in); err == nil {
			t.Errorf("Scan(%q) = %v, want an error", in, n.t)
		}
	}
}

// TestNumberScannersAgreeWithDatabaseSQL: int64Of, nullInt64Of and
// nullFloat64Of read every value as database/sql reads it into an int64, a
// sql.NullInt64 and a sql.NullFloat64, and refuse what it refuses.
func TestNumberScannersAgreeWithDatabaseSQL(t *testing.T) {
	values := []any{int64(42), int64(-7), int64(0), 2.5, 3.0, nil, "12", "1.5", "x", []byte("9"), true, time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)}
	for _, v := range values {
		var want sql.NullInt64
		wantErr := want.Scan(v)
		if wantErr == nil && !want.Valid {
			wantErr = errors.New("NULL")
		}
		got := int64(-1)
		err := int64Of{&got}.Scan(v)
		if (err != nil) != (wantErr != nil) || (err == nil && got != want.Int64) {
			t.Errorf("int64Of.Scan(%#v) = %d, %v; NullInt64: %+v, %v", v, got, err, want, wantErr)
		}
	}
	for _, v := range values {
		var want sql.NullInt64
		wantErr := want.Scan(v)
		got := sql.NullInt64{Int64: -1, Valid: true}
		err := nullInt64Of{&got}.Scan(v)
		if (err != nil) != (wantErr != nil) || (err == nil && got != want) {
			t.Errorf("nullInt64Of.Scan(%#v) = %+v, %v; NullInt64: %+v, %v", v, got, err, want, wantErr)
		}
	}
	for _, v := range values {
		var want sql.NullFloat64
		wantErr := want.Scan(v)
		got := sql.NullFloat64{Float64: -1, Valid: true}
		err := nullFloat64Of{&got}.Scan(v)
		if (err != nil) != (wantErr != nil) || (err == nil && got != want) {
			t.Errorf("nullFloat64Of.Scan(%#v) = %+v, %v; NullFloat64: %+v, %v", v, got, err, want, wantErr)
		}
	}
}

// TestParseFixedUTCAgreesWithTimeParse: the fast path reads what
// time.Parse reads with sqliteTimeLayout or dateLayout, to the same
// instant, and leaves anything time.Parse refuses, and the other layouts
// (a fraction of a second, which time.Parse accepts after a layout's
// seconds), to the general path.
func TestParseFixedUTCAgreesWithTimeParse(t *testing.T) {
	for _, in := range []string{
		"2026-03-14T09:26:53Z", "2026-03-14", "2024-02-29", "2023-02-29", "2026-04-31", "2026-12-31T23:59:59Z",
		"0000-01-01", "2026-00-10", "2026-13-01", "2026-01-00", "2026-01-32", "2026-03-14T24:00:00Z",
		"2026-03-14T09:60:00Z", "2026-03-14T09:26:60Z", "2026-03-14 09:26:53Z", "2026-03-14T09:26:53+", "2026/03/14",
		"2026-3-14", "20a6-03-14", "2026-03-14T09:26:5Z", "2026-03-14T09:26:53.5Z", "", "2026-+3-14",
	} {
		got, ok := parseFixedUTC(in)
		want, err := time.Parse(sqliteTimeLayout, in)
		if err != nil {
			want, err = time.Parse(dateLayout, in)
		}
		if ok && (err != nil || !got.Equal(want) || got.Location() != time.UTC) {
			t.Errorf("parseFixedUTC(%q) = %v; time.Parse: %v, %v", in, got, want, err)
		}
		if !ok && err == nil && (len(in) == len(sqliteTimeLayout) || len(in) == len(dateLayout)) {
			t.Errorf("parseFixedUTC(%q) refused what time.Parse reads as %v", in, want)
		}
	}
}
