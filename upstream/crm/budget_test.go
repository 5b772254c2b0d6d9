package crm

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"listingproxy/upstream"
)

// TestDecodeBudget: the bytes of answers being decoded at once are bounded,
// not their number. While a huge answer holds most of a 1.25 MiB budget
// (900 KB granted), small answers keep being decoded; a large one, whether
// its Content-Length says so up front or its chunked body grows past the
// room left, cannot get its bytes and fails with upstream.ErrBusy (a local
// bound, counted by no breaker) at the call's Timeout, not as a CRM
// failure; once the huge one gives its bytes back, a large one is read.
func TestDecodeBudget(t *testing.T) {
	const huge, large = 900_000, 500_000
	g := newGenerated(7)
	f := newFakeCRM(t, func(w http.ResponseWriter, r *http.Request, user string) {
		switch r.URL.Path {
		case "/au/properties/2.xml": // large, declared
			w.Header().Set("Content-Type", "application/xml")
			w.Header().Set("Content-Length", strconv.Itoa(large))
			w.WriteHeader(http.StatusOK)
			_, _ = w.Write([]byte(strings.Repeat(" ", large)))
		case "/au/properties/3.xml": // large, chunked
			w.Header().Set("Content-Type", "application/xml")
			w.WriteHeader(http.StatusOK)
			w.(http.Flusher).Flush()
			_, _ = w.Write([]byte(strings.Repeat(" ", large)))
		default:
			g.serve(w, r, user)
		}
	})
	// The call's Timeout ends a wait for budget; the outcome does not
	// depend on it, since the huge answer holds its bytes until released.
	// Timeout is short only while the large answers wait (they can never
	// get the budget then, whatever the machine's speed); the reads that
	// must succeed have an hour (nothing else uses c meanwhile).
	c := newTestClient(t, f, Options{MaxBodyBytes: 1 << 20, MaxDecodingBytes: 1<<20 + 256<<10, Timeout: time.Hour})
	hold := &grant{b: c.budget} // the huge answer being decoded
	if err := hold.cover(t.Context(), huge); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if _, err := c.GetProperty(t.Context(), harbourAU, 7); err != nil {
			t.Fatalf("small answer %d beside the huge one = %v", i, err)
		}
	}
	c.timeout = 200 * time.Millisecond
	for _, id := range []int64{2, 3} {
		_, err := c.GetProperty(t.Context(), harbourAU, id)
		if !errors.Is(err, upstream.ErrBusy) || errors.Is(err, errTimeout) {
			t.Errorf("large answer %d without room in the budget = %v, want upstream.ErrBusy, not a timeout", id, err)
		}
	}
	// The caller's own deadline ending the wait (before Timeout) is no
	// failure of the CRM either.
	long := newTestClient(t, f, Options{MaxBodyBytes: 1 << 20, MaxDecodingBytes: 1<<20 + 256<<10, Timeout: time.Hour})
	longHold := &grant{b: long.budget}
	if err := longHold.cover(t.Context(), huge); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	_, err := long.GetProperty(ctx, harbourAU, 2)
	cancel()
	if !errors.Is(err, upstream.ErrBusy) || errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("large answer whose caller's deadline ends its wait = %v, want upstream.ErrBusy, not the deadline", err)
	}
	longHold.release()
	if st := c.Stats(); st.BudgetWaits != 2 || st.DecodingBytes != huge {
		t.Errorf("budget waits %d, bytes granted %d; want 2 and the huge answer's %d", st.BudgetWaits, st.DecodingBytes, huge)
	}
	hold.release()
	c.timeout = time.Hour
	for _, id := range []int64{2, 3} { // read now (and malformed: blanks only)
		if _, err := c.GetProperty(t.Context(), harbourAU, id); !errors.Is(err, errMalformed) {
			t.Errorf("large answer %d with room in the budget = %v, want it read (malformed)", id, err)
		}
	}
	if got := c.Stats().DecodingBytes; got != 0 {
		t.Errorf("decoding bytes after every call ended = %d, want 0", got)
	}
}

// TestDecodeBudgetOption: a budget smaller than one answer of the largest
// size could never decode it, so it is refused; a negative one too.
func TestDecodeBudgetOption(t *testing.T) {
	for _, o := range []Options{
		{BaseURL: "http://crm", MaxBodyBytes: 1 << 20, MaxDecodingBytes: 1 << 19},
		{BaseURL: "http://crm", MaxDecodingBytes: 1 << 20}, // under the default MaxBodyBytes
		{BaseURL: "http://crm", MaxDecodingBytes: -1},
	} {
		if _, err := New(o); err == nil || !strings.Contains(err.Error(), "MaxDecodingBytes") {
			t.Errorf("New(%+v) = %v, want an error naming MaxDecodingBytes", o, err)
		}
	}
	c, err := New(Options{BaseURL: "http://crm", MaxBodyBytes: 100 << 20})
	if err != nil {
		t.Fatal(err)
	}
	if c.budget.size != 100<<20 {
		t.Errorf("default budget with MaxBodyBytes 100 MiB = %d, want 100 MiB", c.budget.size)
	}
}
