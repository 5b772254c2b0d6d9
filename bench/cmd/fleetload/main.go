// Command fleetload drives a fleet of listingproxy replicas (bench/fleet.sh)
// and reports what a shared second tier changes, counting the backend's
// work on a legacy-crm stand-in (its GET /stats; POST /stats/reset first):
//
//	fleetload burst -urls A,B,C -path P [-n 300] -crm URL
//	    n concurrent cold requests for one path, spread round-robin over the
//	    replicas: statuses, latency and the CRM calls they cost (goal: 1).
//	fleetload tiers -urls A,B [-rounds 5] [-keys 20] -crm URL
//	    per round, fresh keys filled on A, then each key asked of B twice in
//	    a row: B's first answer comes from the second tier (Redis), its
//	    second from B's first tier. p50/p99 of both, and the median over
//	    rounds of the per-round p50 ratio; CRM calls during B's requests
//	    (0 when B's first answers really came from the second tier).
//	fleetload zipf -urls A[,B,C] [-n 3000] [-keys 500] [-s 1.1] -crm URL
//	    a Zipf workload over the replicas: hit ratio = 1 - CRM calls/requests.
//	fleetload load -urls A,B,C [-duration 9s] [-c 16] [-keys 200]
//	    steady load for a fixed time; one line per second (ok, failed, the
//	    slowest answer, by the second the request started) and the totals.
//	    Failed: a transport error (-timeout included) or a status but 200.
//
// Every key is a distinct list page of tenant summit (-path-format, with %d
// the key number plus -base), so runs with distinct -base never share a
// cached body. Used only by bench/fleet.sh; it must not be imported.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

func main() {
	if err := run(context.Background(), os.Args, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "fleetload:", err)
		os.Exit(1)
	}
}

// common holds the flags every mode shares.
type common struct {
	urls       []string
	user, pass string
	crm        string
	pathFormat string
	base       int
	hc         *http.Client
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) < 2 {
		return errors.New("usage: fleetload burst|tiers|zipf|load [flags] (see the package comment)")
	}
	mode := args[1]
	fs := flag.NewFlagSet("fleetload "+mode, flag.ContinueOnError)
	fs.SetOutput(stderr)
	urls := fs.String("urls", "", "comma-separated base URLs of the replicas (required)")
	var c common
	fs.StringVar(&c.user, "user", "summit", "Basic auth user")
	fs.StringVar(&c.pass, "password", "summit-demo", "Basic auth password")
	fs.StringVar(&c.crm, "crm", "", "base URL of the legacy-crm stand-in whose calls are counted")
	fs.StringVar(&c.pathFormat, "path-format", "/au/properties.json?limit=5&offset=%d", "path of key number k (a %d)")
	fs.IntVar(&c.base, "base", 0, "added to every key number, so runs can use disjoint keys")
	path := fs.String("path", "", "burst: the path (default: key 0 of -path-format)")
	n := fs.Int("n", 0, "requests (burst default 300, zipf default 3000)")
	conc := fs.Int("c", 16, "concurrent requests (zipf, load)")
	keys := fs.Int("keys", 0, "distinct keys (tiers default 20 per round, zipf 500, load 200)")
	rounds := fs.Int("rounds", 5, "tiers: rounds")
	s := fs.Float64("s", 1.1, "zipf: exponent (> 1)")
	seed := fs.Uint64("seed", 1, "zipf, load: random seed")
	duration := fs.Duration("duration", 9*time.Second, "load: how long")
	timeout := fs.Duration("timeout", 10*time.Second, "per request")
	if err := fs.Parse(args[2:]); err != nil {
		return err
	}
	for u := range strings.SplitSeq(*urls, ",") {
		if u = strings.TrimRight(strings.TrimSpace(u), "/"); u != "" {
			c.urls = append(c.urls, u)
		}
	}
	if len(c.urls) == 0 {
		return errors.New("need -urls")
	}
	if !strings.Contains(c.pathFormat, "%d") {
		return fmt.Errorf("-path-format %q: needs a %%d", c.pathFormat)
	}
	c.hc = &http.Client{Timeout: *timeout, Transport: &http.Transport{MaxIdleConnsPerHost: 512}}
	defer c.hc.CloseIdleConnections()
	or := func(v, def int) int {
		if v > 0 {
			return v
		}
		return def
	}
	switch mode {
	case "burst":
		p := *path
		if p == "" {
			p = c.keyPath(0)
		}
		return c.burst(ctx, stdout, p, or(*n, 300))
	case "tiers":
		if len(c.urls) < 2 {
			return errors.New("tiers: need two -urls (the filler and the reader)")
		}
		return c.tiers(ctx, stdout, *rounds, or(*keys, 20))
	case "zipf":
		if *s <= 1 {
			return errors.New("zipf: -s must be > 1")
		}
		return c.zipf(ctx, stdout, or(*n, 3000), or(*keys, 500), *conc, *s, *seed)
	case "load":
		return c.load(ctx, stdout, *duration, *conc, or(*keys, 200), *seed)
	}
	return fmt.Errorf("unknown mode %q (want burst, tiers, zipf or load)", mode)
}

func (c *common) keyPath(k int) string { return fmt.Sprintf(c.pathFormat, c.base+k) }

// get asks url+path and returns the status and how long the whole answer
// took (body read).
func (c *common) get(ctx context.Context, url string) (int, time.Duration, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", url, nil)
	if err != nil {
		return 0, 0, err
	}
	req.SetBasicAuth(c.user, c.pass)
	start := time.Now()
	resp, err := c.hc.Do(req)
	if err != nil {
		return 0, 0, err
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, time.Since(start), err
}

// crmReset zeroes the stand-in's counters; crmCalls reads them. Without
// -crm both do nothing and report -1.
func (c *common) crmReset(ctx context.Context) error {
	if c.crm == "" {
		return nil
	}
	req, err := http.NewRequestWithContext(ctx, "POST", strings.TrimRight(c.crm, "/")+"/stats/reset", nil)
	if err != nil {
		return err
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return fmt.Errorf("crm stats reset: %w", err)
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("crm stats reset: status %d", resp.StatusCode)
	}
	return nil
}

func (c *common) crmCalls(ctx context.Context) (int64, error) {
	if c.crm == "" {
		return -1, nil
	}
	req, err := http.NewRequestWithContext(ctx, "GET", strings.TrimRight(c.crm, "/")+"/stats", nil)
	if err != nil {
		return 0, err
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return 0, fmt.Errorf("crm stats: %w", err)
	}
	defer resp.Body.Close()
	var s struct {
		Requests int64 `json:"requests"`
	}
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("crm stats: status %d", resp.StatusCode)
	}
	if err := json.NewDecoder(resp.Body).Decode(&s); err != nil {
		return 0, fmt.Errorf("crm stats: %w", err)
	}
	return s.Requests, nil
}

// tally counts outcomes; safe for concurrent use.
type tally struct {
	mu       sync.Mutex
	requests int
	took     []time.Duration
	statuses map[int]int
	failed   int
	firstErr error
}

func (t *tally) add(code int, d time.Duration, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.statuses == nil {
		t.statuses = map[int]int{}
	}
	t.requests++
	switch {
	case err != nil:
		t.failed++
		if t.firstErr == nil {
			t.firstErr = err
		}
	default:
		t.took = append(t.took, d)
		t.statuses[code]++
		if code != http.StatusOK {
			t.failed++
		}
	}
}

func (t *tally) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	codes := make([]int, 0, len(t.statuses))
	for code := range t.statuses {
		codes = append(codes, code)
	}
	sort.Ints(codes)
	var parts []string
	for _, code := range codes {
		parts = append(parts, fmt.Sprintf("%d×%d", t.statuses[code], code))
	}
	out := "status " + strings.Join(parts, " ")
	if t.firstErr != nil {
		out += fmt.Sprintf(" (first transport error: %v)", t.firstErr)
	}
	return out
}

// pct is the p-quantile of sorted durations (0 when empty).
func pct(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(p*float64(len(sorted))+0.5) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

func round(d time.Duration) time.Duration {
	switch {
	case d >= time.Second:
		return d.Round(time.Millisecond)
	case d >= time.Millisecond:
		return d.Round(10 * time.Microsecond)
	}
	return d.Round(time.Microsecond)
}

func (c *common) burst(ctx context.Context, w io.Writer, path string, n int) error {
	if err := c.crmReset(ctx); err != nil {
		return err
	}
	var t tally
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		url := c.urls[i%len(c.urls)] + path
		wg.Go(func() {
			<-start
			t.add(c.get(ctx, url))
		})
	}
	t0 := time.Now()
	close(start)
	wg.Wait()
	wall := time.Since(t0)
	calls, err := c.crmCalls(ctx)
	if err != nil {
		return err
	}
	slices.Sort(t.took)
	fmt.Fprintf(w, "cold burst: %d concurrent requests for %s over %d replicas: CRM calls %d (fleet-wide coalescing: 1); p50=%s max=%s wall=%s; %s\n",
		n, path, len(c.urls), calls, round(pct(t.took, 0.5)), round(pct(t.took, 1)), round(wall), &t)
	return nil
}

func (c *common) tiers(ctx context.Context, w io.Writer, rounds, keys int) error {
	filler, reader := c.urls[0], c.urls[1]
	var ratios []float64
	var all2, all1 []time.Duration
	var calls2 int64
	for r := range rounds {
		base := r * keys
		// Fill every key of the round on the filler, concurrently.
		var fill tally
		var wg sync.WaitGroup
		sem := make(chan struct{}, 16)
		for k := range keys {
			wg.Go(func() {
				sem <- struct{}{}
				defer func() { <-sem }()
				fill.add(c.get(ctx, filler+c.keyPath(base+k)))
			})
		}
		wg.Wait()
		if fill.failed > 0 {
			return fmt.Errorf("tiers: round %d: filling on %s: %s", r+1, filler, &fill)
		}
		if err := c.crmReset(ctx); err != nil {
			return err
		}
		// Interleaved: each key's second-tier answer, then its first-tier one.
		var second, first []time.Duration
		for k := range keys {
			u := reader + c.keyPath(base+k)
			for _, dst := range []*[]time.Duration{&second, &first} {
				code, d, err := c.get(ctx, u)
				if err != nil || code != http.StatusOK {
					return fmt.Errorf("tiers: round %d: GET %s: status %d, %v", r+1, u, code, err)
				}
				*dst = append(*dst, d)
			}
		}
		calls, err := c.crmCalls(ctx)
		if err != nil {
			return err
		}
		calls2 += calls
		slices.Sort(second)
		slices.Sort(first)
		ratios = append(ratios, float64(pct(second, 0.5))/float64(max(pct(first, 0.5), 1)))
		fmt.Fprintf(w, "  round %d: second tier p50=%s p99=%s, first tier p50=%s p99=%s, CRM calls %d\n", r+1,
			round(pct(second, 0.5)), round(pct(second, 0.99)), round(pct(first, 0.5)), round(pct(first, 0.99)), calls)
		all2 = append(all2, second...)
		all1 = append(all1, first...)
	}
	slices.Sort(all2)
	slices.Sort(all1)
	slices.Sort(ratios)
	fmt.Fprintf(w, "tiers: %d rounds x %d keys filled on one replica, read on another: second-tier hit p50=%s p99=%s; first-tier hit p50=%s p99=%s; median per-round p50 ratio %.2fx; CRM calls while reading %d (0 = served by the shared tier)\n",
		rounds, keys, round(pct(all2, 0.5)), round(pct(all2, 0.99)), round(pct(all1, 0.5)), round(pct(all1, 0.99)), ratios[len(ratios)/2], calls2)
	if calls2 > 0 {
		fmt.Fprintf(w, "  NOTE: %d of the reader's first requests reached the CRM: no shared tier answered them, so the \"second-tier\" figures above include backend fills\n", calls2)
	}
	return nil
}

func (c *common) zipf(ctx context.Context, w io.Writer, n, keys, conc int, s float64, seed uint64) error {
	z := rand.NewZipf(rand.New(rand.NewPCG(seed, seed^0x7a697066)), s, 1, uint64(keys-1))
	seq := make([]int, n)
	distinct := map[uint64]bool{}
	for i := range seq {
		k := z.Uint64()
		distinct[k] = true
		seq[i] = int(k)
	}
	if err := c.crmReset(ctx); err != nil {
		return err
	}
	var t tally
	var next atomic.Int64
	var wg sync.WaitGroup
	for range conc {
		wg.Go(func() {
			for i := int(next.Add(1)) - 1; i < n; i = int(next.Add(1)) - 1 {
				t.add(c.get(ctx, c.urls[i%len(c.urls)]+c.keyPath(seq[i])))
			}
		})
	}
	wg.Wait()
	calls, err := c.crmCalls(ctx)
	if err != nil {
		return err
	}
	ratio := 1 - float64(calls)/float64(n)
	fmt.Fprintf(w, "zipf s=%.2f: %d requests over %d keys (%d distinct) on %d replica(s): CRM calls %d, hit ratio %.3f (best possible %.3f); %s\n",
		s, n, keys, len(distinct), len(c.urls), calls, ratio, 1-float64(len(distinct))/float64(n), &t)
	return nil
}

func (c *common) load(ctx context.Context, w io.Writer, d time.Duration, conc, keys int, seed uint64) error {
	// New requests start until d has passed; those in flight then finish
	// (or fail at -timeout) and count, so a stall shows as latency or a
	// failure instead of vanishing at the end of the run.
	run, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	const maxSeconds = 3600
	var ok, failed [maxSeconds]atomic.Int64
	var slowest [maxSeconds]atomic.Int64 // nanoseconds, by the second the request started
	var total tally
	t0 := time.Now()
	var wg sync.WaitGroup
	for i := range conc {
		rnd := rand.New(rand.NewPCG(seed, uint64(i)))
		z := rand.NewZipf(rnd, 1.1, 1, uint64(keys-1))
		wg.Go(func() {
			for j := 0; run.Err() == nil; j++ {
				u := c.urls[(i+j)%len(c.urls)] + c.keyPath(int(z.Uint64()))
				sec := min(int(time.Since(t0)/time.Second), maxSeconds-1)
				start := time.Now()
				code, took, err := c.get(ctx, u)
				total.add(code, took, err)
				if err != nil || code != http.StatusOK {
					failed[sec].Add(1)
				} else {
					ok[sec].Add(1)
				}
				for el := int64(time.Since(start)); ; {
					cur := slowest[sec].Load()
					if el <= cur || slowest[sec].CompareAndSwap(cur, el) {
						break
					}
				}
			}
		})
	}
	wg.Wait()
	for sec := range min(int(d/time.Second)+1, maxSeconds) {
		if o, f := ok[sec].Load(), failed[sec].Load(); o+f > 0 {
			fmt.Fprintf(w, "  %3ds: ok %6d failed %d slowest %s\n", sec, o, f, round(time.Duration(slowest[sec].Load())))
		}
	}
	slices.Sort(total.took)
	fmt.Fprintf(w, "load: %s, %d concurrent over %d replicas, %d keys: %d requests, %d failed; p50=%s p99=%s max=%s; %s\n",
		d, conc, len(c.urls), keys, total.requests, total.failed, round(pct(total.took, 0.5)), round(pct(total.took, 0.99)), round(pct(total.took, 1)), &total)
	return nil
}
