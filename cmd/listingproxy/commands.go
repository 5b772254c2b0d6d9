package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"runtime"
	"strings"
	"time"

	"listingproxy/admin"
	"listingproxy/internal/tlsreload"
	"listingproxy/telemetry"
)

// commands lists the subcommands for the help, in the order shown.
var commands = []struct{ name, summary string }{
	{"serve", "serve the API and the admin listener (the default command)"},
	{"check-config", "validate a configuration and list every problem; binds no port, opens no backend"},
	{"version", "print the version, the commit and the Go version"},
	{"seed", "create and fill a SQL backend's tables with demo data"},
	{"diff", "compare an old endpoint (or its recorded answers) with a new one, path by path"},
	{"hash-password", "print the bcrypt hash of a password for config.yaml (no echo on a terminal)"},
	{"warm", "add a request log's requests to cache.warm.file, which the next start fetches"},
	{"healthcheck", "GET the admin listener's /healthz; exit 0 when it answers 200 (for HEALTHCHECK)"},
}

// usage prints the top-level help.
func usage(w io.Writer) error {
	var b strings.Builder
	b.WriteString(`listingproxy serves the property and agent listing API in front of a legacy
backend (SQL database or CRM endpoint), with caching, request coalescing and a
circuit breaker.

Usage:
  listingproxy [serve] [-config FILE] [-listen ADDR] [-admin-listen ADDR]
  listingproxy COMMAND [flags]

Commands:
`)
	for _, c := range commands {
		fmt.Fprintf(&b, "  %-14s %s\n", c.name, c.summary)
	}
	b.WriteString(`
"listingproxy COMMAND -h" lists a command's flags. Without -config, commands
read ./config.yaml when present, else the embedded demo configuration.
Documentation: docs/operations.md and docs/configuration.md.
`)
	_, err := io.WriteString(w, b.String())
	return err
}

// versionLine is what "listingproxy version" prints: the build the
// metrics' listingproxy_build_info also names, and the platform.
func versionLine(b telemetry.Build) string {
	return fmt.Sprintf("listingproxy %s commit %s %s %s/%s", b.Version, b.Commit, b.GoVersion, runtime.GOOS, runtime.GOARCH)
}

func versionCommand(args []string, stdout, stderr io.Writer) error {
	fs := commandFlags("version", "", stderr)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageErrorf(fs, "unexpected argument %q", fs.Arg(0))
	}
	_, err := fmt.Fprintln(stdout, versionLine(telemetry.ReadBuild()))
	return err
}

// checkConfig validates a configuration as serve would load it, without
// binding a port or opening a backend, and lists every problem (the
// error); nginx -t and varnishd -C are its models. It also loads the TLS
// certificate and key, if any.
func checkConfig(args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := commandFlags("check-config", "[-config FILE | FILE]", stderr)
	path := fs.String("config", "", "configuration file (default: ./config.yaml if present, else the embedded demo configuration)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	switch {
	case fs.NArg() == 1 && *path == "":
		*path = fs.Arg(0)
	case fs.NArg() > 0:
		return usageErrorf(fs, "unexpected argument %q", fs.Arg(fs.NArg()-1))
	}
	cfg, source, err := loadConfig(*path, getenv)
	if err != nil {
		return err
	}
	if c := cfg.Server.TLS; c.CertFile != "" {
		if _, err := tlsreload.Load(c.CertFile, c.KeyFile); err != nil {
			return fmt.Errorf("%s: server.tls: %w", source, err)
		}
	}
	_, err = fmt.Fprintf(stdout, "%s: ok (%s, %s, %s)\n", source, count(len(cfg.Backends), "backend"), count(len(cfg.Tenants), "tenant"), count(len(cfg.Users), "user"))
	return err
}

// healthcheck asks the admin listener's /healthz (admin.Probe) and
// succeeds on a 200: the container's HEALTHCHECK. The address is the
// configuration's admin_listen unless -admin-listen names one.
func healthcheck(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := commandFlags("healthcheck", "[-config FILE | -admin-listen ADDR] [-timeout D]", stderr)
	path := fs.String("config", "", "configuration file whose admin_listen to ask (default: as serve)")
	addr := fs.String("admin-listen", "", "admin address to ask instead of the configuration's")
	timeout := fs.Duration("timeout", 3*time.Second, "give up after this long")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageErrorf(fs, "unexpected argument %q", fs.Arg(0))
	}
	if *addr == "" {
		cfg, _, err := loadConfig(*path, getenv)
		if err != nil {
			return err
		}
		*addr = cfg.AdminListen
	}
	if *addr == "" || *addr == "off" {
		return errors.New("healthcheck: the admin listener is off (admin_listen), so there is no /healthz to ask")
	}
	line, err := admin.Probe(ctx, *addr, *timeout)
	if err != nil {
		return fmt.Errorf("healthcheck: %w", err)
	}
	_, err = fmt.Fprintln(stdout, line)
	return err
}

// exitStatus reports err as main does and returns the process's exit
// status: 0 for success and for -h (the flag package has printed the
// usage), 2 for a mistake on the command line (a bad flag, an unexpected
// argument: the usage has been printed), 1 otherwise.
func exitStatus(err error, stderr io.Writer) int {
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return 0
	}
	var ue usageError
	if errors.As(err, &ue) {
		if !ue.printed {
			fmt.Fprintln(stderr, "listingproxy:", err)
		}
		return 2
	}
	fmt.Fprintln(stderr, "listingproxy:", err)
	return 1
}

// commandFlags is the flag set of the subcommand name, whose usage every
// command prints alike, on standard error:
//
//	usage: listingproxy NAME SYNOPSIS
//
//	flags:
//	  -flag ...
func commandFlags(name, synopsis string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("listingproxy "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), strings.TrimSpace("usage: "+fs.Name()+" "+synopsis))
		n := 0
		fs.VisitAll(func(*flag.Flag) { n++ })
		if n > 0 {
			fmt.Fprintln(fs.Output(), "\nflags:")
			fs.PrintDefaults()
		}
	}
	return fs
}

// usageError is a mistake on the command line: exit status 2.
type usageError struct {
	err     error
	printed bool // the flag package printed it, with the usage
}

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// parseFlags parses args into fs; a bad flag is a usageError, which the
// flag package has already printed with the usage.
func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil && !errors.Is(err, flag.ErrHelp) {
		return usageError{err: err, printed: true}
	} else if err != nil {
		return err
	}
	return nil
}

// usageErrorf is a usageError about fs's arguments: the message, then the
// usage, both on fs's output.
func usageErrorf(fs *flag.FlagSet, format string, args ...any) error {
	err := fmt.Errorf("%s: "+format, append([]any{strings.TrimPrefix(fs.Name(), "listingproxy ")}, args...)...)
	fmt.Fprintln(fs.Output(), "listingproxy:", err)
	fs.Usage()
	return usageError{err: err, printed: true}
}

// count is "1 backend", "2 backends", "0 backends".
func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
