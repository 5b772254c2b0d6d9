package bare_test

import (
	"log/slog"
	"net/http"
	"testing"

	"listingproxy"
	"listingproxy/bench/bare"
	"listingproxy/config"
)

// TestServerLimits: bareproxy's server has listingproxy's default limits,
// so that lp/bare in bench/nginx.sh compares handlers, not server settings
// (a read timeout alone is one more deadline set per request).
func TestServerLimits(t *testing.T) {
	cfg, err := config.Parse("config.yaml", listingproxy.DefaultConfig, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	want := cfg.Server.HTTPServer(http.NotFoundHandler(), slog.New(slog.DiscardHandler))
	got := bare.Server(http.NotFoundHandler())
	for _, c := range []struct {
		name      string
		got, want any
	}{
		{"ReadHeaderTimeout", got.ReadHeaderTimeout, want.ReadHeaderTimeout},
		{"ReadTimeout", got.ReadTimeout, want.ReadTimeout},
		{"WriteTimeout", got.WriteTimeout, want.WriteTimeout},
		{"IdleTimeout", got.IdleTimeout, want.IdleTimeout},
		{"MaxHeaderBytes", got.MaxHeaderBytes, want.MaxHeaderBytes},
	} {
		if c.got != c.want {
			t.Errorf("bare.Server's %s = %v, listingproxy's default %v", c.name, c.got, c.want)
		}
	}
}
