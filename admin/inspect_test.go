package admin_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"listingproxy/admin"
)

// fakeInspector answers for the user "harbour" and the tenant "harbour"
// only, echoing what it was asked.
type fakeInspector struct{}

func (fakeInspector) Explain(_ context.Context, user, target string) (any, error) {
	if user != "harbour" {
		return nil, fmt.Errorf("unknown user %q", user)
	}
	return map[string]string{"user": user, "url": target}, nil
}

func (fakeInspector) Keys(tenant, after string, limit int) (any, error) {
	if after == "bad" {
		return nil, errors.New("after \"bad\" is not a key of tenant harbour")
	}
	return map[string]any{"tenant": tenant, "after": after, "limit": limit}, nil
}

func TestExplainAndKeys(t *testing.T) {
	t.Parallel()
	do := serve(t, admin.Options{Inspector: fakeInspector{}, Tenants: []string{"harbour", "summit"}})
	for _, tc := range []struct {
		name, path string
		auth       bool
		status     int
		body       string
	}{
		{"explain without credentials", "/cache/explain?user=harbour&url=%2Fau%2Fproperties.xml", false, 401, "admin credentials required"},
		{"keys without credentials", "/cache/keys?tenant=harbour", false, 401, "admin credentials required"},
		{"explain", "/cache/explain?user=harbour&url=%2Fau%2Fproperties.xml%3Flimit%3D2", true, 200,
			"{\n  \"url\": \"/au/properties.xml?limit=2\",\n  \"user\": \"harbour\"\n}"},
		{"explain, the url's query not encoded", "/cache/explain?user=harbour&url=/au/properties.xml?status=current&limit=2", true, 400,
			`unknown parameter "limit" (want user, url; percent-encode the query of a url)`},
		{"explain, no url", "/cache/explain?user=harbour", true, 400, "give user and url (the url's own query percent-encoded, e.g. curl -G --data-urlencode)"},
		{"explain, user twice", "/cache/explain?user=harbour&user=summit&url=%2F", true, 400, `parameter "user" given 2 times (want once)`},
		{"explain, unknown user", "/cache/explain?user=nobody&url=%2Fau%2Fproperties.xml", true, 400, `unknown user "nobody"`},
		{"explain, malformed query", "/cache/explain?user=%zz", true, 400, `malformed query: invalid URL escape "%zz"`},
		{"keys", "/cache/keys?tenant=summit", true, 200, "{\n  \"after\": \"\",\n  \"limit\": 100,\n  \"tenant\": \"summit\"\n}"},
		{"keys, a page", "/cache/keys?tenant=harbour&limit=1000&after=k", true, 200, "{\n  \"after\": \"k\",\n  \"limit\": 1000,\n  \"tenant\": \"harbour\"\n}"},
		{"keys, unknown tenant", "/cache/keys?tenant=nobody", true, 400, `unknown tenant "nobody"`},
		{"keys, no tenant", "/cache/keys", true, 400, `unknown tenant ""`},
		{"keys, limit 0", "/cache/keys?tenant=harbour&limit=0", true, 400, `limit "0" is not a whole number from 1 to 1000`},
		{"keys, limit too large", "/cache/keys?tenant=harbour&limit=1001", true, 400, `limit "1001" is not a whole number from 1 to 1000`},
		{"keys, bad cursor", "/cache/keys?tenant=harbour&after=bad", true, 400, `after "bad" is not a key of tenant harbour`},
		{"keys, unknown parameter", "/cache/keys?tenant=harbour&page=2", true, 400, `unknown parameter "page" (want tenant, limit, after; percent-encode the query of a url)`},
		{"keys by POST", "/cache/keys?tenant=harbour", true, 405, "Method Not Allowed"},
	} {
		method := "GET"
		if tc.name == "keys by POST" {
			method = "POST"
		}
		if status, body := do(method, tc.path, tc.auth); status != tc.status || body != tc.body {
			t.Errorf("%s: %d %q, want %d %q", tc.name, status, body, tc.status, tc.body)
		}
	}
	disabled := serve(t, admin.Options{Tenants: []string{"harbour"}})
	for _, path := range []string{"/cache/explain?user=harbour&url=%2F", "/cache/keys?tenant=harbour"} {
		if status, body := disabled("GET", path, true); status != 409 || body != "cache is disabled" {
			t.Errorf("GET %s without a cache = %d %q, want 409", path, status, body)
		}
	}
}
