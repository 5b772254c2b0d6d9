package sqlstore

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"listingproxy/upstream"
	"listingproxy/upstream/sqlstore/demo"
)

// TestStatementSpans checks the per-statement spans: one per statement,
// named sql.<statement>, with the engine and operation as their only
// attributes, so no argument value or SQL text ever reaches a trace.
func TestStatementSpans(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	defer tp.Shutdown(context.Background())
	ctx := context.Background()
	st, err := Open(ctx, Config{DSN: filepath.Join(t.TempDir(), "t.db"), Now: func() time.Time { return testNow }, TracerProvider: tp})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if err := st.SeedDemo(ctx, demo.Options{PropertiesPerTenantCountry: 20, AgentsPerTenantCountry: 5, Now: testNow}); err != nil {
		t.Fatal(err)
	}
	if spans := exp.GetSpans(); len(spans) != 1 || spans[0].Name != "sql.seed" {
		t.Errorf("seeding made spans %v, want one sql.seed", spans)
	}
	exp.Reset()

	sc := upstream.Scope{Tenant: "harbour", Country: "au"}
	if _, err := st.ListProperties(context.Background(), sc, parseProps(t, "detail=full&limit=3&street_name=Secret+Lane")); err != nil {
		t.Fatal(err)
	}
	if _, err := st.ListAgents(context.Background(), sc, parseAgents(t, "name=jane&detail=full")); err != nil {
		t.Fatal(err)
	}
	if _, err := st.ListProperties(context.Background(), sc, parseProps(t, "limit=3")); err != nil {
		t.Fatal(err)
	}

	var names []string
	for _, s := range exp.GetSpans() {
		names = append(names, s.Name)
		want := []attribute.KeyValue{
			attribute.String("db.system.name", "sqlite"),
			attribute.String("db.operation.name", "SELECT"),
		}
		if !slices.Equal(s.Attributes, want) {
			t.Errorf("span %s attributes = %v, want %v", s.Name, s.Attributes, want)
		}
		for _, a := range s.Attributes {
			if v := a.Value.String(); strings.Contains(strings.ToLower(v), "secret") || strings.Contains(v, "harbour") || strings.Contains(v, "FROM") {
				t.Errorf("span %s leaks %q", s.Name, v)
			}
		}
		if s.Status.Description != "" {
			t.Errorf("span %s status %v, want unset", s.Name, s.Status)
		}
	}
	want := []string{
		"sql.lookup_tenant", "sql.list_properties", // the street filter matches nothing: no decoration
		"sql.list_agents", "sql.load_agent_properties",
		"sql.list_properties", "sql.load_children",
	}
	if !slices.Equal(names, want) {
		t.Errorf("spans = %q\nwant %q", names, want)
	}
}
