package main

import (
	"context"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"listingproxy/config"
)

// TestEveryKindOpens: config's backend kinds and cmd's openers are the same
// set, and a kind without an opener is an error naming it, not a guess (the
// old switch opened any unknown kind as SQL).
func TestEveryKindOpens(t *testing.T) {
	t.Parallel()
	if diff := cmp.Diff(slices.Sorted(slices.Values(config.Kinds())), slices.Sorted(maps.Keys(backendKinds))); diff != "" {
		t.Errorf("config kinds vs openers (-config +cmd):\n%s", diff)
	}
	cfg := &config.Config{Backends: map[string]config.Backend{"x": {Kind: "oracle"}}}
	_, _, err := openBackend(context.Background(), "x", cfg, slog.New(slog.DiscardHandler), time.Now, nil)
	if err == nil || !strings.Contains(err.Error(), `backend x: kind "oracle" cannot be opened`) {
		t.Errorf("unknown kind: err = %v, want it named", err)
	}
}
