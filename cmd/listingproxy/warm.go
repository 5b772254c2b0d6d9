package main

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"

	"listingproxy/internal/warmup"
	"listingproxy/proxy"
)

// warmCommand is "listingproxy warm": it reads request logs (-from, each
// line a warm file's, a JSON access-log line or "USER PATH?QUERY": see
// proxy.ReadWarmTargets), adds them to cache.warm.file's targets, and
// writes the file back with the cache.warm.keys most requested; the next
// start of the service fetches them. It talks to no running process: a
// separate process knows no password, and the file is what a start reads.
func warmCommand(args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := commandFlags("warm", "-from LOG [-config FILE]", stderr)
	path := fs.String("config", "", "configuration file whose cache.warm.file to fill (default: as serve)")
	from := fs.String("from", "", `request log to read ("-": standard input); required`)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageErrorf(fs, "unexpected argument %q", fs.Arg(0))
	}
	if *from == "" {
		return errors.New("warm: -from LOG is required (a request log: JSON access-log lines or USER PATH?QUERY lines)")
	}
	cfg, source, err := loadConfig(*path, getenv)
	if err != nil {
		return err
	}
	w := cfg.Cache.Warm
	if w == nil || w.File == "" {
		return fmt.Errorf("warm: %s sets no cache.warm.file to write", source)
	}
	old, err := warmup.ReadFile(w.File)
	if err != nil {
		return fmt.Errorf("warm: %w", err)
	}
	in := stdin
	if *from != "-" {
		f, err := os.Open(*from)
		if err != nil {
			return fmt.Errorf("warm: %w", err)
		}
		defer f.Close()
		in = f
	}
	logged, err := proxy.ReadWarmTargets(in)
	if err != nil {
		return fmt.Errorf("warm: %s: %w", *from, err)
	}
	merged := warmup.Merge(old, logged)
	keys := cmp.Or(w.Keys, proxy.DefaultHotKeys)
	if err := warmup.WriteFile(w.File, merged, keys); err != nil {
		return fmt.Errorf("warm: %w", err)
	}
	_, err = fmt.Fprintf(stdout, "%s: %d targets from %s, %d written (at most %d); the next start fetches them\n",
		w.File, len(logged), *from, min(len(merged), keys), keys)
	return err
}
