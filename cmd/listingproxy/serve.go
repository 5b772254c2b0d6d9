package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"listingproxy"
	"listingproxy/cache"
	"listingproxy/config"
	"listingproxy/internal/memlimit"
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
	ls, err := serving.Open(ctx, cfg.ListenOptions())
	if err != nil {
		return err
	}

	log.Info("setting up backends (migrations, demo seeding and warm-up may take a while)", "backends", strings.Join(slices.Sorted(maps.Keys(cfg.Backends)), ", "))
	app, err := buildWith(ctx, cfg, deps{log: log, now: time.Now, stdout: stdout, getenv: getenv})
	if err != nil {
		ls.Close()
		return err
	}
	defer app.Close()
	app.metrics.WatchConnLimit(ls.Refused)
	if g := ls.HTTP2Guard(); g != nil {
		app.metrics.WatchHTTP2Guard(g.Closed)
	}
	if err := app.metrics.Err(); err != nil {
		ls.Close()
		return fmt.Errorf("metrics: %w", err)
	}
	// The memory limit (internal/memlimit) lasts as long as serve.
	defer memlimit.Apply(cmp.Or(int64(cfg.Cache.MaxBytes), cache.DefaultMaxBytes), getenv, log)()
	public := cfg.Server.HTTPServer(app.handler, log)
	public.ConnContext = proxy.ConnContext // each connection's memo of its verified credentials
	servers := ls.Servers(public, cfg.Server.HTTPServer(app.admin, log))

	base, adminURL := ls.URL(), ls.AdminURL()
	log.Info("listening", "addr", base, "admin", adminURL, "config", source)
	fmt.Fprintf(stdout, "listingproxy listening on %s (admin: %s, config: %s)\n", base, cmp.Or(adminURL, "off"), source)
	fmt.Fprintf(stdout, "try: curl -u %s '%s/au/properties.xml?limit=2'\n", exampleCredentials(cfg), base)

	reload := func() {
		tlsErr := ls.ReloadCertificate(log) // renewed certificates apply even if the configuration is broken
		next, source, err := load()
		var restart []string
		if err == nil {
			restart, err = app.reload(next)
		}
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
