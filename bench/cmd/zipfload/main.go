// Command zipfload is an open-loop load of listing API requests over a
// long tail of distinct queries: -rate requests a second for -duration,
// each sent at its scheduled time whether or not earlier ones have been
// answered (so a slow server meets the same arrivals, not fewer), each for
// a query drawn from -keys distinct ones with a Zipf law (exponent -zipf)
// and a user drawn uniformly from -users. The queries are lists of
// properties and agents with varied criteria, pages and formats, and
// single properties, in both countries; one seed (-seed), one sequence.
//
// It prints, for each -window and in all: requests, statuses, transport
// errors, the 503s, and latency percentiles measured from each request's
// scheduled time; with -crm-stats (the legacy-crm stand-in's base URL), the
// most requests the CRM was answering at once (its /stats, reset at the
// start). It is the driver of bench/slowcrm.sh and can be pointed at any
// server of the listing API (-base), nginx or Varnish included.
//
//	zipfload -base http://127.0.0.1:8080 -rate 200 -duration 60s -keys 24000
//
// It exits 1 when -max-503 is not negative and more 503s than that were
// answered.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"time"
)

func main() {
	base := flag.String("base", "http://127.0.0.1:8080", "the listing API's base URL")
	users := flag.String("users", "harbour:harbour-demo,harbour-noprice:harbour-demo,summit:summit-demo", "user:password pairs, comma-separated; each request picks one uniformly")
	rate := flag.Float64("rate", 200, "requests a second (open loop)")
	duration := flag.Duration("duration", 60*time.Second, "how long to send")
	keys := flag.Int("keys", 24000, "distinct queries")
	zipfS := flag.Float64("zipf", 1.1, "Zipf exponent (> 1) of the query popularity")
	seed := flag.Uint64("seed", 1, "seed of the query and user draws")
	timeout := flag.Duration("timeout", 30*time.Second, "client timeout of one request")
	window := flag.Duration("window", 10*time.Second, "report interval")
	crmStats := flag.String("crm-stats", "", "legacy-crm's base URL: reset its /stats at the start, report its max_in_flight at the end")
	max503 := flag.Int("max-503", -1, "exit 1 when more 503s than this were answered (-1: never)")
	printKeys := flag.Bool("print-keys", false, "print the -keys queries, one a line, and exit")
	flag.Parse()

	queries := Queries(*keys)
	if *printKeys {
		for _, q := range queries {
			fmt.Println(q)
		}
		return
	}
	var creds [][2]string
	for up := range strings.SplitSeq(*users, ",") {
		u, p, ok := strings.Cut(up, ":")
		if !ok {
			fmt.Fprintf(os.Stderr, "zipfload: -users: %q is not user:password\n", up)
			os.Exit(2)
		}
		creds = append(creds, [2]string{u, p})
	}
	if *zipfS <= 1 || *rate <= 0 || *keys < 1 {
		fmt.Fprintln(os.Stderr, "zipfload: want -zipf > 1, -rate > 0, -keys >= 1")
		os.Exit(2)
	}
	client := &http.Client{Timeout: *timeout, Transport: &http.Transport{MaxIdleConnsPerHost: 1024}}
	if *crmStats != "" {
		if err := post(client, *crmStats+"/stats/reset"); err != nil {
			fmt.Fprintln(os.Stderr, "zipfload: resetting the CRM's stats:", err)
			os.Exit(1)
		}
	}
	n503 := run(client, *base, creds, queries, *rate, *duration, *zipfS, *seed, *window)
	if *crmStats != "" {
		var st struct {
			Requests    int64 `json:"requests"`
			MaxInFlight int64 `json:"max_in_flight"`
		}
		if err := getJSON(client, *crmStats+"/stats", &st); err != nil {
			fmt.Fprintln(os.Stderr, "zipfload: reading the CRM's stats:", err)
		} else {
			fmt.Printf("backend: %d requests, max in flight %d\n", st.Requests, st.MaxInFlight)
		}
	}
	if *max503 >= 0 && n503 > *max503 {
		fmt.Printf("FAIL: %d answers were 503 (at most %d wanted)\n", n503, *max503)
		os.Exit(1)
	}
}

// Queries returns n distinct paths of the listing API: property lists
// (status, price range, bedrooms, order, page, detail), agent lists and
// single properties, in both countries and formats. The i-th is the same
// for every n > i.
func Queries(n int) []string {
	out := make([]string, 0, n)
	seen := make(map[string]bool, n)
	statuses := []string{"", "current", "sold", "contract"}
	orders := []string{"", "price", "agency_id", "status", "approved"}
	for i := 0; len(out) < n; i++ {
		country := [...]string{"au", "nz"}[i%2]
		ext := [...]string{"xml", "json"}[(i/2)%2]
		j := i / 4
		var p string
		switch j % 8 {
		case 0, 1, 2, 3, 4: // property lists
			k := j / 8
			q := []string{fmt.Sprintf("limit=%d", [...]int{10, 20, 50}[k%3])}
			k /= 3
			if off := k % 20; off > 0 {
				q = append(q, fmt.Sprintf("offset=%d", off*10))
			}
			k /= 20
			if s := statuses[k%len(statuses)]; s != "" {
				q = append(q, "status[]="+s)
			}
			k /= len(statuses)
			if o := orders[k%len(orders)]; o != "" {
				q = append(q, "order="+o)
			}
			k /= len(orders)
			if k%2 == 1 {
				q = append(q, "detail=full")
			}
			k /= 2
			if b := k % 5; b > 0 {
				q = append(q, fmt.Sprintf("bedrooms=%d", b))
			}
			k /= 5
			if k > 0 {
				q = append(q, fmt.Sprintf("price_from=%d", k*50000))
			}
			p = "/" + country + "/properties." + ext + "?" + strings.Join(q, "&")
		case 5, 6: // single properties
			p = fmt.Sprintf("/%s/properties/%d.%s", country, 1+j/8*2+j%8-5, ext)
		case 7: // agent lists
			k := j / 8
			q := []string{fmt.Sprintf("limit=%d", 5+k%10)}
			k /= 10
			if k%2 == 1 {
				q = append(q, "detail=full")
			}
			if off := k / 2; off > 0 {
				q = append(q, fmt.Sprintf("offset=%d", off))
			}
			p = "/" + country + "/agents." + ext + "?" + strings.Join(q, "&")
		}
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out
}

type result struct {
	at      time.Duration // scheduled, since the start
	latency time.Duration // from the scheduled time to the end of the body
	status  int           // 0: transport error
}

func run(client *http.Client, base string, creds [][2]string, queries []string, rate float64, duration time.Duration, zipfS float64, seed uint64, window time.Duration) (n503 int) {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	zipf := rand.NewZipf(rng, zipfS, 1, uint64(len(queries)-1))
	total := int(rate * duration.Seconds())
	interval := time.Duration(float64(time.Second) / rate)
	results := make(chan result, 1024)
	var collected []result
	collectorDone := make(chan struct{})
	go func() {
		defer close(collectorDone)
		for r := range results {
			collected = append(collected, r)
		}
	}()
	fmt.Printf("zipfload: %s, %.0f req/s for %s (%d requests), %d distinct queries (Zipf %.2f), %d users, seed %d\n",
		base, rate, duration, total, len(queries), zipfS, len(creds), seed)
	var wg sync.WaitGroup
	start := time.Now()
	for i := range total {
		at := time.Duration(i) * interval
		q := queries[zipf.Uint64()]
		c := creds[rng.IntN(len(creds))]
		if d := time.Until(start.Add(at)); d > 0 {
			time.Sleep(d)
		}
		wg.Go(func() {
			status := get(client, base+q, c)
			results <- result{at: at, latency: time.Since(start.Add(at)), status: status}
		})
	}
	wg.Wait()
	close(results)
	<-collectorDone

	slices.SortFunc(collected, func(a, b result) int { return int(a.at - b.at) })
	for from := time.Duration(0); from < duration; from += window {
		var w []result
		for _, r := range collected {
			if r.at >= from && r.at < from+window {
				w = append(w, r)
			}
		}
		report(fmt.Sprintf("[%3.0fs,%3.0fs)", from.Seconds(), (from+window).Seconds()), w)
	}
	return report("total", collected)
}

// report prints one line for rs and returns its 503s.
func report(label string, rs []result) int {
	byStatus := map[int]int{}
	lat := make([]time.Duration, 0, len(rs))
	for _, r := range rs {
		byStatus[r.status]++
		lat = append(lat, r.latency)
	}
	slices.Sort(lat)
	pct := func(p float64) time.Duration {
		if len(lat) == 0 {
			return 0
		}
		return lat[min(len(lat)-1, int(p*float64(len(lat))))].Round(time.Millisecond)
	}
	var statuses []string
	for _, code := range slices.Sorted(maps.Keys(byStatus)) {
		if code != 0 {
			statuses = append(statuses, fmt.Sprintf("%d×%d", byStatus[code], code))
		}
	}
	fmt.Printf("%-12s n=%-6d %-28s errors=%-4d 503=%-5d p50=%-7s p90=%-7s p99=%-7s max=%s\n",
		label, len(rs), strings.Join(statuses, " "), byStatus[0], byStatus[503], pct(0.50), pct(0.90), pct(0.99), pct(1))
	return byStatus[503]
}

// get requests url as the user and reads the body; 0 on a transport error.
func get(client *http.Client, url string, c [2]string) int {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return 0
	}
	req.SetBasicAuth(c[0], c[1])
	req.Header.Set("Accept-Encoding", "gzip")
	resp, err := client.Do(req)
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return 0
	}
	return resp.StatusCode
}

func post(client *http.Client, url string) error {
	resp, err := client.Post(url, "", nil)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("POST %s: %s", url, resp.Status)
	}
	return nil
}

func getJSON(client *http.Client, url string, v any) error {
	resp, err := client.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(v)
}
