package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"listingproxy"
	"listingproxy/cache"
	"listingproxy/config"
	"listingproxy/internal/connlimit"
	"listingproxy/internal/h2guard"
	"listingproxy/internal/memlimit"
	"listingproxy/internal/onewrite"
	"listingproxy/internal/serving"
	"listingproxy/proxy"
	"listingproxy/telemetry"
)

// serve runs the service until ctx is done or SIGINT/SIGTERM arrives, then
// drains and shuts down gracefully (see serving.Run), flushes buffered spans,
// and returns nil (exit status 0). SIGHUP reloads the configuration file (see
// reload).
func serve(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	return serveWith(ctx, args, getenv, stdout, stderr, time.After)
}

// serveWith is serve with the drain delay's timer injected: after(d) is
// called once the drain has begun, and the shutdown starts when its channel
// delivers (tests hold it to look at a draining server).
func serveWith(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer, after func(time.Duration) <-chan time.Time) error {
	fs := commandFlags("serve", "[-config FILE] [-listen ADDR] [-admin-listen ADDR]", stderr)
	cfgPath := fs.String("config", "", "configuration file (default: ./config.yaml if present, else the embedded demo configuration)")
	listen := fs.String("listen", "", "public listen address, overrides the config's listen")
	adminListen := fs.String("admin-listen", "", `admin listen address, overrides admin_listen ("off" disables)`)
	if err := parseFlags(fs, args[1:]); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageErrorf(fs, "unexpected argument %q (not a command: \"listingproxy help\" lists them)", fs.Arg(0))
	}
	load := func() (*config.Config, string, error) {
		cfg, source, err := loadConfig(*cfgPath, getenv)
		if err != nil {
			return nil, source, err
		}
		if *listen != "" {
			cfg.Listen = *listen
		}
		if *adminListen != "" {
			cfg.AdminListen = *adminListen
		}
		return cfg, source, nil
	}

	cfg, source, err := load()
	if err != nil {
		return err
	}
	level := new(slog.LevelVar)
	level.Set(cfg.Log.SlogLevel())
	log := telemetry.NewLogger(cfg.Log.Format, level, stderr)

	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)

	// The listeners first: a port in use is found before any backend is
	// set up (a migration run, a demo database seeded). They accept
	// nothing until the servers start.
	tcp, err := serving.Listen(ctx, cfg.Listen, cfg.Server.ReusePort)
	if err != nil {
		return fmt.Errorf("listen %s: %w", cfg.Listen, err)
	}
	var aln net.Listener
	if cfg.AdminListen != "" && cfg.AdminListen != "off" {
		if aln, err = serving.Listen(ctx, cfg.AdminListen, cfg.Server.ReusePort); err != nil {
			_ = tcp.Close()
			return fmt.Errorf("admin listen %s: %w", cfg.AdminListen, err)
		}
	}
	closeListeners := func() {
		_ = tcp.Close()
		if aln != nil {
			_ = aln.Close()
		}
	}
	limited := connlimit.Listen(tcp, cfg.Server.ConnLimits())
	ln, cert, err := listenTLS(limited, cfg.Server.TLS)
	if err != nil {
		closeListeners()
		return err
	}

	log.Info("setting up backends (migrations, demo seeding and warm-up may take a while)", "backends", strings.Join(slices.Sorted(maps.Keys(cfg.Backends)), ", "))
	app, err := buildWith(ctx, cfg, deps{log: log, now: time.Now, stdout: stdout, getenv: getenv})
	if err != nil {
		closeListeners()
		return err
	}
	defer app.Close()
	app.metrics.WatchConnLimit(func() (uint64, uint64) { st := limited.Stats(); return st.TooMany, st.TooFast })
	// The memory limit (internal/memlimit) lasts as long as serve.
	defer memlimit.Apply(cmp.Or(int64(cfg.Cache.MaxBytes), cache.DefaultMaxBytes), getenv, log)()
	var guard *h2guard.Listener
	if cert != nil {
		// HTTP/1.1 and, when server.tls.http2 offers it, HTTP/2, each
		// connection's control frames bounded (internal/h2guard).
		guard = h2guard.Listen(ln, h2guard.Options{})
		ln = guard
		app.metrics.WatchHTTP2Guard(guard.Closed)
	}
	if err := app.metrics.Err(); err != nil {
		closeListeners()
		return fmt.Errorf("metrics: %w", err)
	}
	servers := []serving.Server{publicServer(cfg.Server, app.handler, log, ln, cert != nil, limited.ConnState)}
	if guard != nil {
		guard.Configure(servers[0].HTTP, cfg.Server.TLS.HTTP2 == nil || *cfg.Server.TLS.HTTP2)
	}
	adminURL := ""
	if aln != nil {
		servers = append(servers, serving.Server{HTTP: cfg.Server.HTTPServer(app.admin, log), Listener: aln})
		adminURL = "http://" + aln.Addr().String()
	}

	base := "http://" + displayAddr(ln.Addr())
	if cert != nil {
		base = "https://" + displayAddr(ln.Addr())
	}
	log.Info("listening", "addr", base, "admin", adminURL, "config", source)
	fmt.Fprintf(stdout, "listingproxy listening on %s (admin: %s, config: %s)\n", base, orNone(adminURL), source)
	fmt.Fprintf(stdout, "try: curl -u %s '%s/au/properties.xml?limit=2'\n", exampleCredentials(cfg), base)

	reload := func() {
		var tlsErr error
		if cert != nil { // renewed certificates apply even if the configuration is broken
			if err := cert.Reload(); err != nil {
				tlsErr = fmt.Errorf("server.tls: %w", err)
				log.Error("tls certificate reload failed; keeping the certificate in use", "err", tlsErr)
			} else {
				log.Info("tls certificate reloaded", "cert_file", cfg.Server.TLS.CertFile)
			}
		}
		next, source, err := load()
		if err != nil {
			app.metrics.ConfigReloaded(time.Now(), err)
			log.Error("config reload rejected; keeping the running configuration", "config", source, "err", err)
			return
		}
		restart, err := app.reload(next)
		if err != nil {
			app.metrics.ConfigReloaded(time.Now(), err)
			log.Error("config reload rejected; keeping the running configuration", "config", source, "err", err)
			return
		}
		level.Set(next.Log.SlogLevel())
		// A reload is reported a success only when every part of it was:
		// a certificate that did not load fails it, whatever else applied.
		app.metrics.ConfigReloaded(time.Now(), tlsErr)
		if tlsErr != nil {
			log.Error("reload incomplete: the configuration was applied, the tls certificate was not (the one in use is kept)", "config", source, "applied", "users, cache ttls, breaker settings, log level", "err", tlsErr)
		} else {
			log.Info("config reloaded", "config", source, "applied", "users, cache ttls, breaker settings, log level")
		}
		if len(restart) > 0 {
			log.Warn("config changes that need a restart were not applied", "keys", strings.Join(restart, ", "))
		}
	}
	err = serving.Run(ctx, servers, serving.Shutdown{
		DrainDelay: cfg.Server.DrainDelay.D(), Grace: cfg.Server.ShutdownGrace.D(), After: after,
		// A second SIGTERM or SIGINT during the drain ends the process at
		// once: stop restores the signals' default action.
		Drain: func() { stop(); app.draining.Start() },
	}, hup, reload, log)

	// Flush after the servers stopped, so the spans of the last requests
	// are in; bounded like the shutdown itself.
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cfg.Server.ShutdownGrace.D())
	defer cancel()
	app.flushTraces(fctx)
	return err
}

// loadConfig resolves the configuration: -config, else ./config.yaml, else
// the embedded default.
func loadConfig(path string, getenv func(string) string) (*config.Config, string, error) {
	if path == "" {
		if _, err := os.Stat("config.yaml"); err == nil {
			path = "config.yaml"
		}
	}
	if path == "" {
		cfg, err := config.Parse("embedded config.yaml", listingproxy.DefaultConfig, getenv)
		return cfg, "embedded default", err
	}
	cfg, err := config.Load(path, getenv)
	return cfg, path, err
}

// publicServer is the API's http.Server on ln. Without TLS its
// connections send a response larger than net/http's 4 KB connection buffer
// in one write instead of two (internal/onewrite; app.handler arms them).
func publicServer(c config.Server, h http.Handler, log *slog.Logger, ln net.Listener, tls bool, connState func(net.Conn, http.ConnState)) serving.Server {
	srv := c.HTTPServer(h, log)
	srv.ConnState = connState
	srv.ConnContext = proxy.ConnContext // each connection's memo of its verified credentials
	if !tls {
		ln = onewrite.Listener(ln)
		srv.ConnContext = func(ctx context.Context, c net.Conn) context.Context {
			return onewrite.ConnContext(proxy.ConnContext(ctx, c), c)
		}
	}
	return serving.Server{HTTP: srv, Listener: ln}
}

func displayAddr(a net.Addr) string {
	tcp, ok := a.(*net.TCPAddr)
	if ok && tcp.IP.IsUnspecified() {
		return fmt.Sprintf("127.0.0.1:%d", tcp.Port)
	}
	return a.String()
}

func orNone(s string) string {
	if s == "" {
		return "off"
	}
	return s
}

// exampleCredentials names the first user; the shipped demo users' password
// is documented, others are not known here.
func exampleCredentials(cfg *config.Config) string {
	if len(cfg.Users) == 0 {
		return "USER:PASSWORD"
	}
	u := cfg.Users[0].Username
	switch u {
	case "harbour":
		return "harbour:harbour-demo"
	case "summit":
		return "summit:summit-demo"
	}
	return u + ":PASSWORD"
}
