// Command latency measures the response time of one URL: N requests, C at a
// time, reporting percentiles and status codes. With -crm-stats it also
// reports how many requests a legacy-crm stand-in received during the run
// (it resets the stand-in's counters first). Used by bench/crm.sh.
//
//	latency -url URL [-user U -password P] [-n 100] [-c 1] [-warm 1] [-label NAME] [-crm-stats URL]
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
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
		fmt.Fprintln(os.Stderr, "latency:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("latency", flag.ContinueOnError)
	fs.SetOutput(stderr)
	target := fs.String("url", "", "URL to request (required)")
	user := fs.String("user", "", "Basic auth user")
	password := fs.String("password", "", "Basic auth password")
	n := fs.Int("n", 100, "measured requests")
	c := fs.Int("c", 1, "concurrent requests (n=100 c=100 is a burst of 100 identical requests)")
	warm := fs.Int("warm", 1, "unmeasured requests first, one at a time")
	label := fs.String("label", "", "name printed on the result line (default the URL)")
	timeout := fs.Duration("timeout", 30*time.Second, "per request")
	crmStats := fs.String("crm-stats", "", "base URL of a legacy-crm whose request count is reported for the measured requests")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if *target == "" || *n < 1 || *c < 1 || *warm < 0 {
		return errors.New("need -url, -n >= 1, -c >= 1 and -warm >= 0")
	}
	if *label == "" {
		*label = *target
	}
	hc := &http.Client{Timeout: *timeout, Transport: &http.Transport{MaxIdleConnsPerHost: *c, MaxConnsPerHost: 0}}
	get := func() (int, time.Duration, error) {
		req, err := http.NewRequestWithContext(ctx, "GET", *target, nil)
		if err != nil {
			return 0, 0, err
		}
		if *user != "" {
			req.SetBasicAuth(*user, *password)
		}
		start := time.Now()
		resp, err := hc.Do(req)
		if err != nil {
			return 0, 0, err
		}
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode, time.Since(start), err
	}
	for range *warm {
		if _, _, err := get(); err != nil {
			return fmt.Errorf("warm-up: %w", err)
		}
	}
	if *crmStats != "" {
		if err := post(ctx, hc, strings.TrimRight(*crmStats, "/")+"/stats/reset"); err != nil {
			return err
		}
	}

	var (
		mu       sync.Mutex
		took     []time.Duration
		statuses = map[int]int{}
		failures int
		firstErr error
	)
	// C workers share the N requests; they start together, so n=100 c=100
	// is a burst of 100 identical concurrent requests.
	var next atomic.Int64
	start := make(chan struct{})
	var wg sync.WaitGroup
	for range min(*c, *n) {
		wg.Go(func() {
			<-start
			for next.Add(1) <= int64(*n) {
				code, d, err := get()
				mu.Lock()
				if err != nil {
					failures++
					if firstErr == nil {
						firstErr = err
					}
				} else {
					took = append(took, d)
					statuses[code]++
				}
				mu.Unlock()
			}
		})
	}
	t0 := time.Now()
	close(start)
	wg.Wait()
	wall := time.Since(t0)

	slices.Sort(took)
	pct := func(p float64) time.Duration {
		if len(took) == 0 {
			return 0
		}
		i := int(p*float64(len(took))+0.5) - 1
		return took[max(0, min(i, len(took)-1))]
	}
	codes := make([]int, 0, len(statuses))
	for code := range statuses {
		codes = append(codes, code)
	}
	sort.Ints(codes)
	var parts []string
	for _, code := range codes {
		parts = append(parts, fmt.Sprintf("%d×%d", statuses[code], code))
	}
	fmt.Fprintf(stdout, "%-62s n=%-4d c=%-3d p50=%-9s p90=%-9s p99=%-9s max=%-9s wall=%-9s status %s",
		*label, *n, *c, round(pct(0.5)), round(pct(0.9)), round(pct(0.99)), round(pct(1)), round(wall), strings.Join(parts, " "))
	if failures > 0 {
		fmt.Fprintf(stdout, " failed=%d (%v)", failures, firstErr)
	}
	if *crmStats != "" {
		var s struct {
			Requests int64 `json:"requests"`
		}
		if err := getJSON(ctx, hc, strings.TrimRight(*crmStats, "/")+"/stats", &s); err != nil {
			return err
		}
		fmt.Fprintf(stdout, " upstream_calls=%d", s.Requests)
	}
	fmt.Fprintln(stdout)
	if failures > 0 {
		return fmt.Errorf("%d requests failed", failures)
	}
	return nil
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

func post(ctx context.Context, hc *http.Client, u string) error {
	req, err := http.NewRequestWithContext(ctx, "POST", u, nil)
	if err != nil {
		return err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("POST %s: status %d", u, resp.StatusCode)
	}
	return nil
}

func getJSON(ctx context.Context, hc *http.Client, u string, v any) error {
	req, err := http.NewRequestWithContext(ctx, "GET", u, nil)
	if err != nil {
		return err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: status %d", u, resp.StatusCode)
	}
	return json.NewDecoder(resp.Body).Decode(v)
}
