package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"listingproxy/cache"
	"listingproxy/config"
	"listingproxy/proxy"
)

// warmSaveInterval is how often the hottest requests are written to
// cache.warm.file while serving (and once more at shutdown).
const warmSaveInterval = time.Minute

// warmer runs cache.warm: the warm-up after a start (the file's targets)
// and after a hard purge (the purged tenant's, or every tenant's, hot
// targets), one run at a time, paced by each backend's budget of
// background calls; and the file's periodic and final writes.
type warmer struct {
	srv   *proxy.Server
	file  string // "": none
	keys  int
	wait  func(ctx context.Context, tenant string) error
	log   *slog.Logger
	ctx   context.Context
	stop  context.CancelFunc
	wg    sync.WaitGroup
	runMu sync.Mutex // one warm-up run at a time
	// runs counts the runs started and not ended (tests wait on it).
	runs sync.WaitGroup

	// started is closed when the start's warm-up has ended; ready is set
	// then, or when cache.warm.ready_timeout has passed.
	started chan struct{}
	ready   atomic.Bool
	timer   func() bool // stops the ready_timeout's timer; nil: none
}

// afterFunc is time.AfterFunc as the warmer uses it: f runs after d
// unless stop is called first.
type afterFunc func(d time.Duration, f func()) (stop func() bool)

func realAfterFunc(d time.Duration, f func()) func() bool { return time.AfterFunc(d, f).Stop }

// newWarmer starts the warm-up of the targets in w.File (a missing file
// is an empty one; one that does not read is logged and ignored) and the
// file's periodic writes.
func newWarmer(srv *proxy.Server, w *config.WarmCache, wait func(context.Context, string) error, after afterFunc, log *slog.Logger) *warmer {
	wm := &warmer{srv: srv, file: w.File, keys: cmp.Or(w.Keys, proxy.DefaultHotKeys), wait: wait, log: log, started: make(chan struct{})}
	wm.ctx, wm.stop = context.WithCancel(context.Background())
	targets, err := readWarmFile(w.File)
	if err != nil {
		log.Warn("cache.warm.file does not read; starting without its targets", "file", w.File, "err", err)
	}
	if d := w.ReadyTimeout.D(); d > 0 && len(targets) > 0 {
		wm.timer = after(d, func() { wm.ready.Store(true) })
	} else {
		wm.ready.Store(true)
	}
	wm.wg.Add(1)
	wm.runs.Add(1)
	go func() {
		defer wm.wg.Done()
		defer wm.runs.Done()
		defer close(wm.started)
		defer wm.ready.Store(true)
		wm.run("start", targets[:min(len(targets), wm.keys)])
	}()
	if wm.file != "" {
		wm.wg.Add(1)
		go func() {
			defer wm.wg.Done()
			t := time.NewTicker(warmSaveInterval)
			defer t.Stop()
			for {
				select {
				case <-wm.ctx.Done():
					return
				case <-t.C:
					wm.save()
				}
			}
		}()
	}
	return wm
}

// run replays targets, logging what it did.
func (wm *warmer) run(why string, targets []proxy.WarmTarget) {
	if len(targets) == 0 {
		return
	}
	wm.runMu.Lock()
	defer wm.runMu.Unlock()
	st := wm.srv.WarmUp(wm.ctx, targets, wm.wait)
	wm.log.Info("cache warm-up", "after", why, "targets", len(targets), "done", st.Done, "failed", st.Failed, "skipped", st.Skipped)
}

// warming reports whether /readyz should still answer 503 "warming".
func (wm *warmer) warming() bool { return !wm.ready.Load() }

// purged refills the hot targets a hard purge removed, in the background.
func (wm *warmer) purged(p cache.Purge) {
	if p.Mode != cache.Hard || wm.ctx.Err() != nil {
		return
	}
	tenant := p.Tenant
	if p.All {
		tenant = ""
	}
	targets := wm.srv.HotTargets(wm.keys, tenant)
	wm.wg.Add(1)
	wm.runs.Add(1)
	go func() {
		defer wm.wg.Done()
		defer wm.runs.Done()
		wm.run("hard purge", targets)
	}()
}

// Close ends the warm-up in progress and writes the file a last time.
func (wm *warmer) Close() {
	wm.stop()
	if wm.timer != nil {
		wm.timer()
	}
	wm.wg.Wait()
	wm.save()
}

// save writes the hottest targets to the file, through a temporary file
// renamed over it, so a crash leaves the old file or the new one. Nothing
// recorded yet (a process stopped before any fill): the file is kept.
func (wm *warmer) save() {
	if wm.file == "" {
		return
	}
	targets := wm.srv.HotTargets(wm.keys, "")
	if len(targets) == 0 {
		return
	}
	if err := writeWarmFile(wm.file, targets, wm.keys); err != nil {
		wm.log.Warn("writing cache.warm.file", "file", wm.file, "err", err)
	}
}

// readWarmFile reads a warm file; a missing one is empty.
func readWarmFile(path string) ([]proxy.WarmTarget, error) {
	if path == "" {
		return nil, nil
	}
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	ts, err := proxy.ReadWarmTargets(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return ts, nil
}

// writeWarmFile replaces path with the n hottest of targets.
func writeWarmFile(path string, targets []proxy.WarmTarget, n int) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after the rename: nothing
	if err := proxy.WriteWarmTargets(tmp, targets, n); err != nil {
		_ = tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// warmCommand is "listingproxy warm": it reads request logs (-from, each
// line a warm file's, a JSON access-log line or "USER PATH?QUERY": see
// proxy.ReadWarmTargets), adds them to cache.warm.file's targets, and
// writes the file back with the cache.warm.keys most requested; the next
// start of the service fetches them. It talks to no running process: a
// separate process knows no password, and the file is what a start reads.
func warmCommand(args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("warm", flag.ContinueOnError)
	fs.SetOutput(stderr)
	path := fs.String("config", "", "configuration file whose cache.warm.file to fill (default: as serve)")
	from := fs.String("from", "", `request log to read ("-": standard input); required`)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("warm: unexpected argument %q", fs.Arg(0))
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
	old, err := readWarmFile(w.File)
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
	merged := mergeTargets(old, logged)
	keys := cmp.Or(w.Keys, proxy.DefaultHotKeys)
	if err := writeWarmFile(w.File, merged, keys); err != nil {
		return fmt.Errorf("warm: %w", err)
	}
	_, err = fmt.Fprintf(stdout, "%s: %d targets from %s, %d written (at most %d); the next start fetches them\n",
		w.File, len(logged), *from, min(len(merged), keys), keys)
	return err
}

// mergeTargets adds b's targets to a's, adding the hits of a repeated
// user and target.
func mergeTargets(a, b []proxy.WarmTarget) []proxy.WarmTarget {
	out := append([]proxy.WarmTarget(nil), a...)
	at := map[[2]string]int{}
	for i, t := range out {
		at[[2]string{t.User, t.Target}] = i
	}
	for _, t := range b {
		if i, ok := at[[2]string{t.User, t.Target}]; ok {
			out[i].Hits += t.Hits
			continue
		}
		at[[2]string{t.User, t.Target}] = len(out)
		out = append(out, t)
	}
	return out
}
