// Package warmup runs cache.warm around a proxy.Server: the warm-up after
// a start (the targets of a warm file) and after a hard purge (the purged
// tenant's, or every tenant's, hot targets), one run at a time, each
// replay paced by its tenant's backend budget (Budgets); the warm file's
// periodic and final writes; the file's reading, writing and merging,
// which "listingproxy warm" also uses. The record of hot requests and
// their replay as their users are proxy's (proxy.Server.HotTargets,
// WarmUp); this package decides when they run and keeps the file.
package warmup

import (
	"cmp"
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"listingproxy/cache"
	"listingproxy/proxy"
)

// SaveInterval is how often the hottest requests are written to the warm
// file while serving (and once more at Close).
const SaveInterval = time.Minute

// Server is what the warmer drives: proxy.Server's record of hot requests
// and their replay.
type Server interface {
	HotTargets(n int, tenant string) []proxy.WarmTarget
	WarmUp(ctx context.Context, targets []proxy.WarmTarget, wait func(ctx context.Context, tenant string) error) proxy.WarmStats
}

// AfterFunc is time.AfterFunc as the warmer uses it: f runs after d
// unless stop is called first.
type AfterFunc func(d time.Duration, f func()) (stop func() bool)

// RealAfterFunc is time.AfterFunc.
func RealAfterFunc(d time.Duration, f func()) func() bool { return time.AfterFunc(d, f).Stop }

// Options are a Warmer's: cache.warm's settings and what paces it.
type Options struct {
	// File is the warm file read at Start and written every SaveInterval
	// and at Close; "": none.
	File string
	// Keys is how many targets are replayed and written; 0:
	// proxy.DefaultHotKeys.
	Keys int
	// ReadyTimeout bounds how long Warming reports true after Start while
	// the start's warm-up runs; 0: it does not wait.
	ReadyTimeout time.Duration
	// Wait paces each replay (Budgets.Wait); nil: no pacing.
	Wait func(ctx context.Context, tenant string) error
	// After is ReadyTimeout's timer; nil: RealAfterFunc.
	After AfterFunc
	// Logger receives a line per run and the file's problems.
	Logger *slog.Logger
}

// Warmer runs the warm-ups of one server. Start makes one; Close ends it.
type Warmer struct {
	srv   Server
	file  string
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
	// then, or when ReadyTimeout has passed.
	started chan struct{}
	ready   atomic.Bool
	timer   func() bool // stops ReadyTimeout's timer; nil: none
}

// Start starts the warm-up of the targets in o.File (a missing file is an
// empty one; one that does not read is logged and ignored) and the file's
// periodic writes.
func Start(srv Server, o Options) *Warmer {
	wm := &Warmer{srv: srv, file: o.File, keys: cmp.Or(o.Keys, proxy.DefaultHotKeys), wait: o.Wait, log: o.Logger, started: make(chan struct{})}
	if wm.log == nil {
		wm.log = slog.New(slog.DiscardHandler)
	}
	wm.ctx, wm.stop = context.WithCancel(context.Background())
	targets, err := ReadFile(o.File)
	if err != nil {
		wm.log.Warn("cache.warm.file does not read; starting without its targets", "file", o.File, "err", err)
	}
	if o.ReadyTimeout > 0 && len(targets) > 0 {
		after := o.After
		if after == nil {
			after = RealAfterFunc
		}
		wm.timer = after(o.ReadyTimeout, func() { wm.ready.Store(true) })
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
			t := time.NewTicker(SaveInterval)
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
func (wm *Warmer) run(why string, targets []proxy.WarmTarget) {
	if len(targets) == 0 {
		return
	}
	wm.runMu.Lock()
	defer wm.runMu.Unlock()
	st := wm.srv.WarmUp(wm.ctx, targets, wm.wait)
	wm.log.Info("cache warm-up", "after", why, "targets", len(targets), "done", st.Done, "failed", st.Failed, "skipped", st.Skipped)
}

// Warming reports whether /readyz should still answer 503 "warming".
func (wm *Warmer) Warming() bool { return !wm.ready.Load() }

// Started is closed when the start's warm-up has ended.
func (wm *Warmer) Started() <-chan struct{} { return wm.started }

// Idle waits until no warm-up run is in progress or pending.
func (wm *Warmer) Idle() { wm.runs.Wait() }

// Purged refills the hot targets a hard purge removed, in the background.
func (wm *Warmer) Purged(p cache.Purge) {
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
func (wm *Warmer) Close() {
	wm.stop()
	if wm.timer != nil {
		wm.timer()
	}
	wm.wg.Wait()
	wm.save()
}

// save writes the hottest targets to the file. Nothing recorded yet (a
// process stopped before any fill): the file is kept.
func (wm *Warmer) save() {
	if wm.file == "" {
		return
	}
	targets := wm.srv.HotTargets(wm.keys, "")
	if len(targets) == 0 {
		return
	}
	if err := WriteFile(wm.file, targets, wm.keys); err != nil {
		wm.log.Warn("writing cache.warm.file", "file", wm.file, "err", err)
	}
}

// Purger is a cache's purge followed, for a hard one, by the warm-up of
// the hot requests it removed (the admin API's purger).
type Purger struct {
	*cache.Store
	W *Warmer
}

// PurgeContext purges, then refills what a hard purge removed.
func (p Purger) PurgeContext(ctx context.Context, pg cache.Purge) error {
	if err := p.Store.PurgeContext(ctx, pg); err != nil {
		return err
	}
	p.W.Purged(pg)
	return nil
}
