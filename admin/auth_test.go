package admin

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"golang.org/x/crypto/bcrypt"

	"listingproxy/internal/testkit"
)

// TestOperatorAuthIsBounded shows the admin listener's credential check
// never runs two bcrypts at once: while one runs (the slot is held here),
// a request with unverified credentials gets 429 with Retry-After and no
// bcrypt, and one presenting the credential verified earlier still gets in.
func TestOperatorAuthIsBounded(t *testing.T) {
	t.Parallel()
	hash, err := bcrypt.GenerateFromPassword([]byte("secret"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	a := newOperatorAuth("ops", string(hash))
	h := a.require(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(204) }))
	do := func(user, pass string) *httptest.ResponseRecorder {
		t.Helper()
		r := httptest.NewRequest("GET", "/backends", nil)
		r.Header.Set("Authorization", testkit.BasicAuth(user, pass))
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	for _, c := range []struct {
		user, pass string
		want       int
	}{
		{"ops", "wrong", 401},
		{"other", "secret", 401}, // the right password under another name
		{"ops", "secret", 204},
	} {
		if w := do(c.user, c.pass); w.Code != c.want {
			t.Fatalf("%s:%s = %d, want %d", c.user, c.pass, w.Code, c.want)
		}
	}

	a.slot <- struct{}{} // a bcrypt is running
	if w := do("ops", "secret"); w.Code != 204 {
		t.Errorf("verified credentials while a check runs = %d, want 204 (no bcrypt needed)", w.Code)
	}
	for _, pass := range []string{"guess1", "guess2"} {
		w := do("ops", pass)
		if w.Code != http.StatusTooManyRequests || w.Header().Get("Retry-After") == "" {
			t.Errorf("unverified credentials while a check runs = %d (Retry-After %q), want 429 with Retry-After", w.Code, w.Header().Get("Retry-After"))
		}
	}
	<-a.slot
	// A wrong password never replaces the verified one.
	if w := do("ops", "secret"); w.Code != 204 {
		t.Errorf("verified credentials after failures = %d, want 204", w.Code)
	}
	// Without a configured operator nobody gets in, whatever they send.
	none := newOperatorAuth("", "")
	r := httptest.NewRequest("GET", "/backends", nil)
	r.Header.Set("Authorization", testkit.BasicAuth("", ""))
	w := httptest.NewRecorder()
	none.require(http.NotFoundHandler()).ServeHTTP(w, r)
	if w.Code != 401 {
		t.Errorf("no operator configured = %d, want 401", w.Code)
	}
}
