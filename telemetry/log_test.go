package telemetry_test

import (
	"log/slog"
	"strings"
	"testing"

	"listingproxy/telemetry"
)

// TestNewLogger: json and text as asked; auto is JSON away from a terminal
// (a log collector's pipe); the level is read at each record.
func TestNewLogger(t *testing.T) {
	for _, tc := range []struct{ format, want string }{
		{"json", `{"time":`},
		{"text", "time="},
		{"auto", `{"time":`},
	} {
		var b strings.Builder
		level := new(slog.LevelVar)
		log := telemetry.NewLogger(tc.format, level, &b)
		log.Info("first")
		level.Set(slog.LevelWarn)
		log.Info("hidden")
		if got := b.String(); !strings.HasPrefix(got, tc.want) || strings.Count(got, "\n") != 1 || strings.Contains(got, "hidden") {
			t.Errorf("format %s: %q, want one line starting %s", tc.format, got, tc.want)
		}
	}
}
