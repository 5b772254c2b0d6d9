package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"listingproxy"
	"listingproxy/config"
)

// serve runs the service until ctx is done or SIGINT/SIGTERM arrives, then
// shuts down gracefully: the listeners close at once, requests in flight
// get server.shutdown_grace to finish, buffered spans are flushed, and serve
// returns nil (exit status 0). SIGHUP reloads the configuration file (see
// reload).
func serve(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("listingproxy", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfgPath := fs.String("config", "", "configuration file (default: ./config.yaml if present, else the embedded demo configuration)")
	listen := fs.String("listen", "", "public listen address, overrides the config's listen")
	adminListen := fs.String("admin-listen", "", `admin listen address, overrides admin_listen ("off" disables)`)
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q (not a command: \"listingproxy help\" lists them)", fs.Arg(0))
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
	level.Set(logLevel(cfg.Log))
	log := newLogger(cfg.Log, level, stderr)

	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)

	app, err := buildWith(ctx, cfg, deps{log: log, now: time.Now, stdout: stdout, getenv: getenv})
	if err != nil {
		return err
	}
	defer app.Close()

	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return fmt.Errorf("listen %s: %w", cfg.Listen, err)
	}
	// The public listener's timeouts are enforced by a connection guard
	// rather than per-request socket deadlines (see connGuard); it stops
	// after the servers have.
	// The garbage collector's tuning (see tuneGC) lives as long as serve.
	guard := newConnGuard(cfg.Server, time.Now, log)
	gctx, stopBackground := context.WithCancel(context.WithoutCancel(ctx))
	gcDone := make(chan struct{})
	defer func() { stopBackground(); <-gcDone }()
	go guard.run(gctx)
	go func() { defer close(gcDone); tuneGC(gctx, gcHeadroom, time.Second, getenv, log) }()
	servers := []served{{guard.server(cfg.Server, app.handler, log), guard.listener(ln)}}
	adminURL := ""
	if cfg.AdminListen != "" && cfg.AdminListen != "off" {
		aln, err := net.Listen("tcp", cfg.AdminListen)
		if err != nil {
			_ = ln.Close()
			return fmt.Errorf("admin listen %s: %w", cfg.AdminListen, err)
		}
		servers = append(servers, served{newHTTPServer(cfg.Server, app.admin, log), aln})
		adminURL = "http://" + aln.Addr().String()
	}

	base := "http://" + displayAddr(ln.Addr())
	log.Info("listening", "addr", base, "admin", adminURL, "config", source)
	fmt.Fprintf(stdout, "listingproxy listening on %s (admin: %s, config: %s)\n", base, orNone(adminURL), source)
	fmt.Fprintf(stdout, "try: curl -u %s '%s/au/properties.xml?limit=2'\n", exampleCredentials(cfg), base)

	reload := func() {
		next, source, err := load()
		if err != nil {
			app.metrics.ConfigReloaded(time.Now(), err)
			log.Error("config reload rejected; keeping the running configuration", "config", source, "err", err)
			return
		}
		restart, err := app.reload(next)
		app.metrics.ConfigReloaded(time.Now(), err)
		if err != nil {
			log.Error("config reload rejected; keeping the running configuration", "config", source, "err", err)
			return
		}
		level.Set(logLevel(next.Log))
		log.Info("config reloaded", "config", source, "applied", "users, cache ttls, breaker settings, log level")
		if len(restart) > 0 {
			log.Warn("config changes that need a restart were not applied", "keys", strings.Join(restart, ", "))
		}
	}
	err = serveUntil(ctx, servers, cfg.Server.ShutdownGrace.D(), hup, reload, log)

	// Flush after the servers stopped, so the spans of the last requests
	// are in; bounded like the shutdown itself.
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cfg.Server.ShutdownGrace.D())
	defer cancel()
	app.flushTraces(fctx)
	return err
}

// served is an http.Server with its listener.
type served struct {
	srv *http.Server
	ln  net.Listener
}

// serveUntil serves every server until ctx is done (or one fails), calling
// reload on each value from hup, then shuts them all down: listeners close
// at once (new connections are refused) and requests in flight have grace
// to finish. It returns nil after a clean shutdown.
func serveUntil(ctx context.Context, servers []served, grace time.Duration, hup <-chan os.Signal, reload func(), log *slog.Logger) error {
	errc := make(chan error, len(servers))
	for _, s := range servers {
		go func() { errc <- s.srv.Serve(s.ln) }()
	}
	var failed error
wait:
	for {
		select {
		case <-ctx.Done():
			break wait
		case <-hup:
			reload()
		case err := <-errc:
			if !errors.Is(err, http.ErrServerClosed) {
				failed = fmt.Errorf("serve: %w", err)
			}
			break wait
		}
	}
	log.Info("shutting down", "grace", grace.String())
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), grace)
	defer cancel()
	// Shut the servers down together: each closes its listener first.
	errs := make(chan error, len(servers))
	for _, s := range servers {
		go func() { errs <- s.srv.Shutdown(sctx) }()
	}
	for range servers {
		if err := <-errs; err != nil && failed == nil {
			failed = fmt.Errorf("shutdown: %w", err)
		}
	}
	return failed
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

func newHTTPServer(c config.Server, h http.Handler, log *slog.Logger) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: c.ReadHeaderTimeout.D(),
		ReadTimeout:       c.ReadTimeout.D(),
		WriteTimeout:      c.WriteTimeout.D(),
		IdleTimeout:       c.IdleTimeout.D(),
		MaxHeaderBytes:    int(c.MaxHeaderBytes),
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		// OPTIONS * is answered by the proxy's handler (spec error body),
		// not net/http's empty 200.
		DisableGeneralOptionsHandler: true,
	}
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

// logLevel is c's level; config validation admits only valid names.
func logLevel(c config.Log) slog.Level {
	var level slog.Level
	_ = level.UnmarshalText([]byte(c.Level))
	return level
}

// newLogger returns the JSON logger (text on a terminal, or as configured)
// at level, which a reload may change.
func newLogger(c config.Log, level slog.Leveler, w io.Writer) *slog.Logger {
	opts := &slog.HandlerOptions{Level: level}
	text := c.Format == "text"
	if c.Format == "auto" {
		if f, ok := w.(*os.File); ok {
			if fi, err := f.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
				text = true
			}
		}
	}
	if text {
		return slog.New(slog.NewTextHandler(w, opts))
	}
	return slog.New(slog.NewJSONHandler(w, opts))
}
