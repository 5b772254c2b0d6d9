package redistier

import (
	"context"
	"log/slog"
	"strings"
	"testing"
)

// TestRedisLogger: go-redis's lines arrive as debug records, prefixed.
func TestRedisLogger(t *testing.T) {
	var b strings.Builder
	l := redisLogger{slog.New(slog.NewTextHandler(&b, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	l.Printf(context.Background(), "dial %s: %v", "127.0.0.1:1", "refused")
	if got := b.String(); !strings.Contains(got, `level=DEBUG msg="redis: dial 127.0.0.1:1: refused"`) {
		t.Errorf("logged %q, want a debug line redis: dial ...", got)
	}
}
