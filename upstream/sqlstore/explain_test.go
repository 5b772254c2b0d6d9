package sqlstore

import (
	"context"
	"strings"
	"testing"

	"listingproxy/normalize"
	"listingproxy/upstream"
)

func TestExplainSQLite(t *testing.T) {
	st, _ := seededSQLite(t)
	sc := upstream.Scope{Tenant: "harbour", Country: "au"}
	for _, tc := range []struct {
		name, plan string
	}{
		{"agency_id", mustExplain(t, st, sc, parseProps(t, "agency_id=HB-AU-00017"))},
		{"geo", mustExplain(t, st, sc, parseProps(t, "geo[lat]=-33.89&geo[long]=151.27&geo[rad]=5"))},
		{"agents", mustExplain(t, st, sc, parseAgents(t, "name=smith"))},
	} {
		if !strings.Contains(tc.plan, "USING") {
			t.Errorf("%s: plan %q uses no index", tc.name, tc.plan)
		}
	}
	if _, err := st.Explain(context.Background(), upstream.Scope{Tenant: "nobody", Country: "au"}, parseProps(t, "")); err == nil {
		t.Error("Explain for an unknown tenant succeeded")
	}
}

func mustExplain(t *testing.T, st *Store, sc upstream.Scope, c normalize.Criteria) string {
	t.Helper()
	plan, err := st.Explain(context.Background(), sc, c)
	if err != nil {
		t.Fatal(err)
	}
	return plan
}
