package normalize

import (
	"net/url"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestNoCap: with MaxResults negative the client's limit (or none) is what
// the criteria carry, in Limit, Key and Values; with a cap, Capped tells
// when the cap decided the limit.
func TestNoCap(t *testing.T) {
	tests := []struct {
		query      string
		max        int
		wantLimit  int
		wantCapped bool
		wantValues string
		wantKey    string
	}{
		{"", -1, NoLimit, false, "detail=short&offset=0&order%5B%5D=id", "properties?detail=short&offset=0&order=id"},
		{"limit=5000", -1, 5000, false, "detail=short&limit=5000&offset=0&order%5B%5D=id", "properties?detail=short&limit=5000&offset=0&order=id"},
		{"limit=0", -1, 0, false, "detail=short&limit=0&offset=0&order%5B%5D=id", "properties?detail=short&limit=0&offset=0&order=id"},
		{"", 0, 1000, true, "detail=short&limit=1000&offset=0&order%5B%5D=id", "properties?detail=short&limit=1000&offset=0&order=id"},
		{"limit=5000", 1000, 1000, true, "detail=short&limit=1000&offset=0&order%5B%5D=id", "properties?detail=short&limit=1000&offset=0&order=id"},
		{"limit=10", 1000, 10, false, "detail=short&limit=10&offset=0&order%5B%5D=id", "properties?detail=short&limit=10&offset=0&order=id"},
	}
	for _, tc := range tests {
		q, _ := url.ParseQuery(tc.query)
		c, errs := ParseProperties(q, Options{MaxResults: tc.max})
		if errs != nil {
			t.Fatalf("%q: %v", tc.query, errs)
		}
		got := []any{c.Limit(), c.Capped(), c.Values().Encode(), c.Key()}
		want := []any{tc.wantLimit, tc.wantCapped, tc.wantValues, tc.wantKey}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%q with MaxResults %d: limit, capped, values, key (-want +got):\n%s", tc.query, tc.max, diff)
		}
		// The key parses back to the same criteria under the same options.
		kq, _ := url.ParseQuery(c.Key()[len("properties?"):])
		again, errs := ParseProperties(kq, Options{MaxResults: tc.max})
		if errs != nil || again.Key() != c.Key() {
			t.Errorf("%q: key %q parses to %q (%v)", tc.query, c.Key(), again.Key(), errs)
		}
	}
}
