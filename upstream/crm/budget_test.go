package crm

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"listingproxy/internal/testkit"
	"listingproxy/upstream"
)

// TestDecodeBudget: the bytes of answers being decoded at once are bounded,
// not their number. While a huge answer holds most of a 1.25 MiB budget
// (900 KB granted), small answers keep being decoded; a large one, whether
// its Content-Length says so up front or its chunked body grows past the
// room left, cannot get its bytes and fails with upstream.ErrBusy (a local
// bound, counted by no breaker) at the call's Timeout, not as a CRM
// failure; once the huge one gives its bytes back, a large one is read.
//
// Nothing here races the clock: each large answer's Timeout (or its
// caller's deadline) passes when the test ends it, once the answer is
// seen waiting for budget (Stats.BudgetWaits). A real 200 ms Timeout
// here once ended a chunked answer still being read, under -race on a
// loaded machine, as a plain timeout.
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
	// Timeout is an hour: the reads that must succeed have all the time
	// they need, and the large answers' waits end when the test says.
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
	// waitingCall starts get and returns its error once it has been seen
	// waiting for budget and end (the Timeout or the deadline) has come.
	waitingCall := func(cl *Client, get func() error, end func()) error {
		t.Helper()
		before := cl.Stats().BudgetWaits
		errc := make(chan error, 1)
		go func() { errc <- get() }()
		testkit.WaitFor(t, "the large answer to wait for budget", func() bool { return cl.Stats().BudgetWaits > before })
		end()
		return <-errc
	}
	for _, id := range []int64{2, 3} {
		timedOut := make(chan struct{})
		c.withTimeout = func(ctx context.Context, _ time.Duration) (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(ctx) // its Timeout passes when timedOut closes
			go func() {
				select {
				case <-timedOut:
				case <-ctx.Done():
				}
				cancel()
			}()
			return ctx, cancel
		}
		err := waitingCall(c, func() error { _, err := c.GetProperty(t.Context(), harbourAU, id); return err }, func() { close(timedOut) })
		if !errors.Is(err, upstream.ErrBusy) || errors.Is(err, errTimeout) {
			t.Errorf("large answer %d without room in the budget = %v, want upstream.ErrBusy, not a timeout", id, err)
		}
	}
	c.withTimeout = context.WithTimeout
	// The caller's own deadline ending the wait (before Timeout) is no
	// failure of the CRM either.
	long := newTestClient(t, f, Options{MaxBodyBytes: 1 << 20, MaxDecodingBytes: 1<<20 + 256<<10, Timeout: time.Hour})
	longHold := &grant{b: long.budget}
	if err := longHold.cover(t.Context(), huge); err != nil {
		t.Fatal(err)
	}
	caller := &deadlineContext{Context: t.Context(), done: make(chan struct{})}
	err := waitingCall(long, func() error { _, err := long.GetProperty(caller, harbourAU, 2); return err }, func() { close(caller.done) })
	if !errors.Is(err, upstream.ErrBusy) || errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("large answer whose caller's deadline ends its wait = %v, want upstream.ErrBusy, not the deadline", err)
	}
	longHold.release()
	if st := c.Stats(); st.BudgetWaits != 2 || st.DecodingBytes != huge {
		t.Errorf("budget waits %d, bytes granted %d; want 2 and the huge answer's %d", st.BudgetWaits, st.DecodingBytes, huge)
	}
	hold.release()
	for _, id := range []int64{2, 3} { // read now (and malformed: blanks only)
		if _, err := c.GetProperty(t.Context(), harbourAU, id); !errors.Is(err, errMalformed) {
			t.Errorf("large answer %d with room in the budget = %v, want it read (malformed)", id, err)
		}
	}
	if got := c.Stats().DecodingBytes; got != 0 {
		t.Errorf("decoding bytes after every call ended = %d, want 0", got)
	}
}

// deadlineContext is a caller's context whose deadline passes when the
// test closes done: its Err is then context.DeadlineExceeded, as a real
// deadline's.
type deadlineContext struct {
	context.Context
	done chan struct{}
}

func (d *deadlineContext) Done() <-chan struct{} { return d.done }

func (d *deadlineContext) Err() error {
	select {
	case <-d.done:
		return context.DeadlineExceeded
	default:
		return nil
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
