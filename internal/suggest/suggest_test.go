package suggest_test

import (
	"testing"

	"listingproxy/internal/suggest"
)

func TestDistance(t *testing.T) {
	for _, tt := range []struct {
		a, b  string
		limit int
		want  int
	}{
		{"ttl", "ttl", 9, 0},
		{"tll", "ttl", 9, 1},
		{"statuss", "status", 9, 1},
		{"kitten", "sitting", 9, 3},
		{"", "abc", 9, 3},
		{"kitten", "sitting", 2, 2}, // capped at the limit
	} {
		if got := suggest.Distance(tt.a, tt.b, tt.limit); got != tt.want {
			t.Errorf("Distance(%q, %q, %d) = %d, want %d", tt.a, tt.b, tt.limit, got, tt.want)
		}
	}
}

func TestClosest(t *testing.T) {
	keys := []string{"ttl", "stale_if_error", "negative_ttl", "fill_timeout"}
	for _, tt := range []struct {
		word  string
		limit int
		want  string
	}{
		{"tll", 0, ""}, // one edit from ttl
		{"tll", 1, "ttl"},
		{"fill_timout", 3, "fill_timeout"},
		{"colour", 3, ""},
	} {
		if got := suggest.Closest(tt.word, keys, tt.limit); got != tt.want {
			t.Errorf("Closest(%q, %d) = %q, want %q", tt.word, tt.limit, got, tt.want)
		}
	}
}
