package sqlstore

import (
	"context"
	"slices"
	"strconv"
	"testing"

	"listingproxy/upstream"
	"listingproxy/upstream/sqlstore/demo"
)

// useFields makes the statements and scanners use the tables props and
// agents until the test ends. A test that calls it must not be parallel.
func useFields(t *testing.T, props []upstream.Field[upstream.Property], agents []upstream.Field[upstream.Agent]) {
	t.Helper()
	oldP, oldA := propertyScan, agentScan
	propertyScan, agentScan = newScanLayout(props), newScanLayout(agents)
	propertyColumns, agentColumns = propertyScan.columns, agentScan.columns
	t.Cleanup(func() {
		propertyScan, agentScan = oldP, oldA
		propertyColumns, agentColumns = oldP.columns, oldA.columns
	})
}

// TestColumnsOfTheSchema: the select lists are the schema's columns in
// its order (statement texts, and so prepared statements and plans, as
// they were written out before).
func TestColumnsOfTheSchema(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{propertyColumns, "p.id, p.agency_id, p.last_updated, p.approved, p.street_number, p.street_name, " +
			"p.address_display, p.status, p.latitude, p.longitude, p.price_text, p.price_from, p.price_to, " +
			"p.price_type, p.category, p.property_type, p.suburb, p.area, p.region, p.bedrooms, p.bathrooms, " +
			"p.floor_size, p.lot_size, p.built_in, p.description, p.featured"},
		{agentColumns, "a.id, a.name, a.username, a.phone, a.after_hours_phone, a.mobile_phone, " +
			"a.email, a.description, a.photo_url, a.website_url"},
	} {
		if tc.got != tc.want {
			t.Errorf("columns\n%s\nwant\n%s", tc.got, tc.want)
		}
	}
}

// TestOneRowAddsAColumn: a field added to the listing schema as one row
// (and its column in the database) is selected and scanned, by each
// engine, with no other change: a nullable integer of properties (read as
// missing where NULL) and a text of agents. wire's TestOneRowAddsAField
// renders and reads the same rows.
func TestOneRowAddsAColumn(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) { testOneRowAddsAColumn(t, openSQLite(t)) })
	t.Run("postgres", func(t *testing.T) { testOneRowAddsAColumn(t, openPostgres(t)) })
	t.Run("mysql", func(t *testing.T) { testOneRowAddsAColumn(t, openMySQL(t)) })
}

func testOneRowAddsAColumn(t *testing.T, st *Store) {
	ctx := context.Background()
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if err := st.SeedDemo(ctx, demo.Options{PropertiesPerTenantCountry: 20, AgentsPerTenantCountry: 5, Now: testNow}); err != nil {
		t.Fatal(err)
	}
	sc := upstream.Scope{Tenant: "harbour", Country: "au"}
	ps, err := st.ListProperties(ctx, sc, parseProps(t, "order=id"))
	if err != nil || len(ps) < 2 {
		t.Fatalf("ListProperties: %d, %v", len(ps), err)
	}
	as, err := st.ListAgents(ctx, sc, parseAgents(t, ""))
	if err != nil || len(as) == 0 {
		t.Fatalf("ListAgents: %d, %v", len(as), err)
	}
	with, without, agent := ps[0].ID, ps[1].ID, as[0].ID
	for _, stmt := range []string{
		"ALTER TABLE properties ADD COLUMN garage_spaces INTEGER",
		"UPDATE properties SET garage_spaces = 3 WHERE id = " + strconv.FormatInt(with, 10),
		"ALTER TABLE agents ADD COLUMN languages VARCHAR(100)",
		"UPDATE agents SET languages = 'English, Māori' WHERE id = " + strconv.FormatInt(agent, 10),
	} {
		if _, err := st.db.ExecContext(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}

	// The values live beside the model (a new field of Property or Agent
	// would hold them): garages by property id, set after the scan; the
	// language of the one agent a get scans.
	garages := map[int64]**int{}
	var languages string
	at := func(fields []upstream.Field[upstream.Property], before string) int {
		return slices.IndexFunc(fields, func(f upstream.Field[upstream.Property]) bool { return f.Name == before })
	}
	props := slices.Insert(slices.Clone(upstream.PropertyFields), at(upstream.PropertyFields, "lot_size"), upstream.Field[upstream.Property]{
		Name: "garage_spaces", Kind: upstream.KindInt, Level: upstream.LevelFull, XML: upstream.Element, Column: "p.garage_spaces",
		Int: func(p *upstream.Property) **int {
			if garages[p.ID] == nil {
				garages[p.ID] = new(*int)
			}
			return garages[p.ID]
		},
	})
	agents := append(slices.Clone(upstream.AgentFields), upstream.Field[upstream.Agent]{
		Name: "languages", Kind: upstream.KindText, Level: upstream.LevelFull, XML: upstream.Element, Column: "a.languages",
		Text: func(*upstream.Agent) *string { return &languages },
	})
	useFields(t, props, agents)

	check := func(what string) {
		t.Helper()
		if v := garages[with]; v == nil || *v == nil || **v != 3 {
			t.Errorf("%s: garage_spaces of property %d = %v, want 3", what, with, v)
		}
		if v := garages[without]; v != nil && *v != nil {
			t.Errorf("%s: garage_spaces of property %d = %d, want missing (NULL)", what, without, **v)
		}
	}
	got, err := st.ListProperties(ctx, sc, parseProps(t, "order=id&detail=full"))
	if err != nil {
		t.Fatal(err)
	}
	check("list")
	// The rest of each record as before the row.
	for i := range got {
		got[i].Photos, ps[i].Photos = nil, nil
		got[i].VirtualTours, ps[i].VirtualTours = nil, nil
		got[i].Floorplans, ps[i].Floorplans = nil, nil
		got[i].OpenHomes, ps[i].OpenHomes = nil, nil
		if g, w := got[i], ps[i]; g.ID != w.ID || g.AgencyID != w.AgencyID || g.Description != w.Description ||
			!g.LastUpdated.Equal(w.LastUpdated) || (g.LotSize == nil) != (w.LotSize == nil) || g.Featured != w.Featured {
			t.Errorf("property %d with the row differs from without: %+v, want %+v", w.ID, g, w)
		}
	}
	clear(garages)
	if _, err := st.GetProperty(ctx, sc, with); err != nil {
		t.Fatal(err)
	}
	if _, err := st.GetProperty(ctx, sc, without); err != nil {
		t.Fatal(err)
	}
	check("get")
	a, err := st.GetAgent(ctx, sc, agent)
	if err != nil {
		t.Fatal(err)
	}
	if languages != "English, Māori" || a.Name != as[0].Name || a.Email != as[0].Email {
		t.Errorf("agent %d: languages %q, name %q, email %q; want %q, %q, %q", agent, languages, a.Name, a.Email,
			"English, Māori", as[0].Name, as[0].Email)
	}
}
