package progress_test

import (
	"strings"
	"testing"
	"time"

	"listingproxy/internal/progress"
	"listingproxy/internal/testkit"
)

// TestPlainLines: away from a terminal, one line per tenth reached, with
// the rate and the time left measured on the injected clock.
func TestPlainLines(t *testing.T) {
	clock := testkit.NewClock(time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC))
	var b strings.Builder
	p := progress.New(&b, clock.Now)
	for _, done := range []int{0, 5, 10, 15, 20, 100} {
		p.Report(done, 100)
		clock.Advance(time.Second)
	}
	p.Finish()
	want := "" +
		"seed:   0% 0/100 properties, 0/s, elapsed 0s, eta -\n" +
		"seed:  10% 10/100 properties, 5/s, elapsed 2s, eta 18s\n" +
		"seed:  20% 20/100 properties, 5/s, elapsed 4s, eta 16s\n" +
		"seed: 100% 100/100 properties, 20/s, elapsed 5s, eta -\n"
	if got := b.String(); got != want {
		t.Errorf("progress lines:\n%s\nwant:\n%s", got, want)
	}
}
