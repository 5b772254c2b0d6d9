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
	"syscall"
	"time"

	"listingproxy"
	"listingproxy/config"
)

// serve runs the service until ctx is done or SIGINT/SIGTERM arrives, then
// shuts down gracefully.
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
		return fmt.Errorf("unexpected argument %q (subcommands: serve, hash-password)", fs.Arg(0))
	}

	cfg, source, err := loadConfig(*cfgPath, getenv)
	if err != nil {
		return err
	}
	if *listen != "" {
		cfg.Listen = *listen
	}
	if *adminListen != "" {
		cfg.AdminListen = *adminListen
	}
	log := newLogger(cfg.Log, stderr)

	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()

	app, err := build(ctx, cfg, log, time.Now)
	if err != nil {
		return err
	}
	defer app.Close()

	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return fmt.Errorf("listen %s: %w", cfg.Listen, err)
	}
	public := newHTTPServer(cfg.Server, app.handler, log)
	servers := []*http.Server{public}
	errc := make(chan error, 2)
	go func() { errc <- public.Serve(ln) }()

	adminURL := ""
	if cfg.AdminListen != "" && cfg.AdminListen != "off" {
		aln, err := net.Listen("tcp", cfg.AdminListen)
		if err != nil {
			_ = public.Close()
			return fmt.Errorf("admin listen %s: %w", cfg.AdminListen, err)
		}
		admin := newHTTPServer(cfg.Server, app.admin, log)
		servers = append(servers, admin)
		go func() { errc <- admin.Serve(aln) }()
		adminURL = "http://" + aln.Addr().String()
	}

	base := "http://" + displayAddr(ln.Addr())
	log.Info("listening", "addr", base, "admin", adminURL, "config", source)
	fmt.Fprintf(stdout, "listingproxy listening on %s (admin: %s, config: %s)\n", base, orNone(adminURL), source)
	fmt.Fprintf(stdout, "try: curl -u %s '%s/au/properties.xml?limit=2'\n", exampleCredentials(cfg), base)

	select {
	case <-ctx.Done():
	case err := <-errc:
		if !errors.Is(err, http.ErrServerClosed) {
			return fmt.Errorf("serve: %w", err)
		}
	}
	log.Info("shutting down", "grace", cfg.Server.ShutdownGrace.D().String())
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cfg.Server.ShutdownGrace.D())
	defer cancel()
	var firstErr error
	for _, s := range servers {
		if err := s.Shutdown(sctx); err != nil && firstErr == nil {
			firstErr = fmt.Errorf("shutdown: %w", err)
		}
	}
	return firstErr
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

func newLogger(c config.Log, w io.Writer) *slog.Logger {
	var level slog.Level
	_ = level.UnmarshalText([]byte(c.Level))
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
