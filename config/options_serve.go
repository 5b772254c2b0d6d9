package config

import (
	"cmp"
	"log/slog"
	"net/http"

	"listingproxy/cache"
	"listingproxy/cache/disktier"
	"listingproxy/cache/redistier"
	"listingproxy/clientip"
	"listingproxy/internal/connlimit"
	"listingproxy/internal/serving"
	"listingproxy/telemetry"
)

// HTTPServer is an http.Server of h with the configured limits, enforced
// by net/http's own deadlines; its errors go to log as warnings.
func (s Server) HTTPServer(h http.Handler, log *slog.Logger) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: s.ReadHeaderTimeout.D(),
		ReadTimeout:       s.ReadTimeout.D(),
		WriteTimeout:      s.WriteTimeout.D(),
		IdleTimeout:       s.IdleTimeout.D(),
		MaxHeaderBytes:    int(s.MaxHeaderBytes),
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		// OPTIONS * is answered by the proxy's handler (spec error body),
		// not net/http's empty 200.
		DisableGeneralOptionsHandler: true,
	}
}

// ListenOptions are the listeners serve opens (internal/serving): listen
// and admin_listen, SO_REUSEPORT, the bounds per client address and
// server.tls (HTTP/2 offered unless server.tls.http2 is false).
func (c *Config) ListenOptions() serving.ListenOptions {
	t := c.Server.TLS
	return serving.ListenOptions{Addr: c.Listen, AdminAddr: c.AdminListen, ReusePort: c.Server.ReusePort,
		ConnLimits: c.Server.ConnLimits(), CertFile: t.CertFile, KeyFile: t.KeyFile, HTTP2: t.HTTP2 == nil || *t.HTTP2}
}

// ConnLimits are the public listener's bounds per client address
// (internal/connlimit), trusted proxies exempt; the burst of new
// connections is two seconds' worth.
func (s Server) ConnLimits() connlimit.Options {
	o := connlimit.Options{PerAddress: s.MaxConnsPerAddress, NewPerSecond: s.NewConnsPerSecondPerAddress,
		Exempt: clientip.Resolver{Trusted: s.TrustedPrefixes()}.Trusts}
	if o.NewPerSecond > 0 {
		o.NewBurst = max(1, int(2*o.NewPerSecond))
	}
	return o
}

// TraceOptions are telemetry.TraceOptions' fields the telemetry section
// decides. cmd adds the standard output, the environment, the logger, the
// clock and the counter of failed exports.
func (t Telemetry) TraceOptions() telemetry.TraceOptions {
	return telemetry.TraceOptions{ServiceName: t.ServiceName, Exporter: t.Exporter, Endpoint: t.OTLPEndpoint, SampleRatio: *t.SampleRatio}
}

// ClientOptions say how to reach the Redis of cache.shared.
func (s *SharedCache) ClientOptions() redistier.ClientOptions {
	return redistier.ClientOptions{
		Addrs: s.Addrs, MasterName: s.MasterName, Username: s.Username, Password: s.Password, DB: s.DB,
		TLSEnabled: s.TLS.Enabled, CAFile: s.TLS.CAFile, CertFile: s.TLS.CertFile, KeyFile: s.TLS.KeyFile, ServerName: s.TLS.ServerName,
		Timeout: s.Timeout.D(),
	}
}

// SharedTierOptions are redistier.Options' fields cache.shared decides
// (cmd adds the logger and Observe). The fill lease must end before a
// waiter's own fill deadline (validation checks one that is set): by
// default at most half of cache.fill_timeout.
func (c Cache) SharedTierOptions() redistier.Options {
	sh := c.Shared
	lease := sh.Lease.D()
	if lease == 0 {
		lease = min(redistier.DefaultLease, cmp.Or(c.FillTimeout.D(), cache.DefaultFillTimeout)/2)
	}
	return redistier.Options{KeyPrefix: sh.KeyPrefix, MaxEntryBytes: int64(sh.MaxEntryBytes), Timeout: sh.Timeout.D(), Lease: lease}
}

// Options are disktier.Options' fields cache.disk decides (cmd adds the
// clock and the logger).
func (d *DiskCache) Options() disktier.Options {
	return disktier.Options{Path: d.Path, MaxBytes: int64(d.MaxBytes)}
}
