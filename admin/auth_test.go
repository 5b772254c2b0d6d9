package admin

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

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

	if !a.slot.TryAcquire(1) { // a bcrypt is running
		t.Fatal("the bcrypt slot is taken before the test holds it")
	}
	if w := do("ops", "secret"); w.Code != 204 {
		t.Errorf("verified credentials while a check runs = %d, want 204 (no bcrypt needed)", w.Code)
	}
	for _, pass := range []string{"guess1", "guess2"} {
		w := do("ops", pass)
		if w.Code != http.StatusTooManyRequests || w.Header().Get("Retry-After") == "" {
			t.Errorf("unverified credentials while a check runs = %d (Retry-After %q), want 429 with Retry-After", w.Code, w.Header().Get("Retry-After"))
		}
	}
	a.slot.Release(1)
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

// TestOperatorAuthThrottlesFailuresPerAddress: wrong passwords from one
// address run bcrypt for the bucket's burst, then get 429 with Retry-After
// and no bcrypt at all; another address, and the credential verified
// before, still get in; the bucket refills with time.
func TestOperatorAuthThrottlesFailuresPerAddress(t *testing.T) {
	t.Parallel()
	hash, err := bcrypt.GenerateFromPassword([]byte("secret"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	clk := testkit.NewClock(time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC))
	a := newOperatorAuth("ops", string(hash))
	a.failures = newFailureThrottle(clk.Now, 0)
	inner := a.require(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(204) }))
	do := func(addr, user, pass string) *httptest.ResponseRecorder {
		t.Helper()
		r := httptest.NewRequest("GET", "/backends", nil)
		r.RemoteAddr = addr
		r.Header.Set("Authorization", testkit.BasicAuth(user, pass))
		w := httptest.NewRecorder()
		inner.ServeHTTP(w, r)
		return w
	}
	const attacker = "192.0.2.7:4000"
	if w := do(attacker, "ops", "secret"); w.Code != 204 {
		t.Fatalf("the right password first = %d, want 204", w.Code)
	}
	for i := range DefaultFailureBurst {
		if w := do(attacker, "ops", "guess"+strconv.Itoa(i)); w.Code != 401 {
			t.Fatalf("failure %d within the burst = %d, want 401", i, w.Code)
		}
	}
	// The bucket is empty: 429 without a bcrypt. Holding the bcrypt slot
	// proves no check runs: a check would find it busy and answer the
	// "busy" 429, whose body differs.
	if !a.slot.TryAcquire(1) {
		t.Fatal("the bcrypt slot is taken before the test holds it")
	}
	w := do(attacker, "ops", "guess-more")
	a.slot.Release(1)
	if w.Code != http.StatusTooManyRequests || !strings.Contains(w.Body.String(), "failed admin credential checks") {
		t.Fatalf("past the burst = %d %q, want the throttle's 429", w.Code, w.Body.String())
	}
	if ra, _ := strconv.Atoi(w.Header().Get("Retry-After")); ra < 1 || ra > 2 {
		t.Errorf("Retry-After = %q, want 1-2 s (30 failures a minute)", w.Header().Get("Retry-After"))
	}
	// Even the right password (not the memo: a new one) waits its turn
	// from that address; the credential verified before still gets in.
	if w := do(attacker, "ops", "secret"); w.Code != 204 {
		t.Errorf("verified credential from a throttled address = %d, want 204 (no check needed)", w.Code)
	}
	// An IPv6 address in the same /64 shares a bucket; another address
	// does not.
	for i := range DefaultFailureBurst {
		do("[2001:db8::1]:1", "ops", "v6guess"+strconv.Itoa(i))
	}
	if w := do("[2001:db8::ffff]:2", "ops", "v6guess-more"); w.Code != http.StatusTooManyRequests {
		t.Errorf("same /64 after its burst = %d, want 429", w.Code)
	}
	if w := do("198.51.100.1:5000", "ops", "typo"); w.Code != 401 {
		t.Errorf("another address = %d, want 401 (its own bucket)", w.Code)
	}
	// Two seconds later the attacker's bucket holds a token again.
	clk.Advance(2 * time.Second)
	if w := do(attacker, "ops", "guess-later"); w.Code != 401 {
		t.Errorf("after the refill = %d, want 401 (a check ran)", w.Code)
	}
}
