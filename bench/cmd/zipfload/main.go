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
//
// The spec space (-space spec, the driver of bench/replay.sh) draws each
// request's criteria from the spec's parameters (statuses, categories,
// property types, price and room bounds, featured, orders, pages, detail)
// with -single-share of the ranks single properties, and picks the format
// (XML or JSON) and the encoding (gzip with probability -gzip, else
// identity) per request; a user given as user:password:tenant:short has
// no full detail (detail=full is left out of its criteria, and it asks
// for a single property as a short list by id). A request is a
// repeat when its tenant and criteria (format aside) were asked before in
// the run. A hit is an answer whose Cache-Status header (RFC 9211) has the
// hit parameter. With -summary NAME it prints, over the requests scheduled
// from -measure-from on,
//
//	server=NAME calls_per_1k=X hit_ratio=X p50_ms=X p99_ms=X p999_ms=X repeat_p99_ms=X errors=N
//
// calls_per_1k being the CRM's requests (-crm-stats, reset at
// -measure-from) per 1,000 measured requests, and errors the transport
// errors and answers other than 200 and 404. -warm-out writes the
// user, encoding and URL of the last -warm-max distinct requests answered
// 200; -check reads such a file, asks each once and prints
// "restart server=NAME warm_ok=X", the share answered 200.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"maps"
	"math"
	"math/rand/v2"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

func main() {
	base := flag.String("base", "http://127.0.0.1:8080", "the listing API's base URL")
	users := flag.String("users", "harbour:harbour-demo,harbour-noprice:harbour-demo,summit:summit-demo", "user:password[:tenant[:short]] entries, comma-separated; each request picks one uniformly (tenant: the user's name when left out; short: no full detail)")
	rate := flag.Float64("rate", 200, "requests a second (open loop)")
	duration := flag.Duration("duration", 60*time.Second, "how long to send")
	keys := flag.Int("keys", 24000, "distinct queries")
	zipfS := flag.Float64("zipf", 1.1, "Zipf exponent (> 1) of the query popularity")
	seed := flag.Uint64("seed", 1, "seed of the query and user draws")
	timeout := flag.Duration("timeout", 30*time.Second, "client timeout of one request")
	window := flag.Duration("window", 10*time.Second, "report interval")
	crmStats := flag.String("crm-stats", "", "legacy-crm's base URL: reset its /stats at the start (or at -measure-from), report its requests and max_in_flight at the end")
	max503 := flag.Int("max-503", -1, "exit 1 when more 503s than this were answered (-1: never)")
	printKeys := flag.Bool("print-keys", false, "print the -keys queries, one a line, and exit")
	space := flag.String("space", "slowcrm", "query space: slowcrm (formats in the keys, always gzip) or spec (criteria of the spec's parameters, format and encoding per request)")
	gzipShare := flag.Float64("gzip", 1, "-space spec: share of requests asking for gzip")
	singleShare := flag.Float64("single-share", 0.1, "-space spec: share of the query ranks that are single properties")
	measureFrom := flag.Duration("measure-from", 0, "summary figures from requests scheduled from this offset on")
	summary := flag.String("summary", "", "print the server=NAME summary line")
	warmOut := flag.String("warm-out", "", "write the last -warm-max distinct requests answered 200 (user, gzip, URL) to this file")
	warmMax := flag.Int("warm-max", 1000, "how many requests -warm-out keeps")
	check := flag.String("check", "", "ask each request of this -warm-out file once, print the restart line, exit")
	flag.Parse()

	var creds []cred
	for up := range strings.SplitSeq(*users, ",") {
		c, err := parseCred(up)
		if err != nil {
			fmt.Fprintln(os.Stderr, "zipfload: -users:", err)
			os.Exit(2)
		}
		creds = append(creds, c)
	}
	client := &http.Client{Timeout: *timeout, Transport: &http.Transport{MaxIdleConnsPerHost: 1024, DisableCompression: true}}
	if *check != "" {
		ok, n, err := checkWarm(client, *base, creds, *check)
		if err != nil {
			fmt.Fprintln(os.Stderr, "zipfload: -check:", err)
			os.Exit(1)
		}
		fmt.Printf("restart server=%s warm_ok=%.4f\n", *summary, float64(ok)/float64(max(n, 1)))
		fmt.Fprintf(os.Stderr, "zipfload: %d of %d warm requests answered 200\n", ok, n)
		return
	}
	var gen generator
	switch *space {
	case "slowcrm":
		gen = slowcrmSpace(Queries(*keys))
	case "spec":
		if *singleShare < 0 || *singleShare > 1 || *gzipShare < 0 || *gzipShare > 1 {
			fmt.Fprintln(os.Stderr, "zipfload: want -single-share and -gzip within [0, 1]")
			os.Exit(2)
		}
		gen = specSpace{criteria: SpecCriteria(*keys, *singleShare), gzip: *gzipShare}
	default:
		fmt.Fprintf(os.Stderr, "zipfload: -space %q: want slowcrm or spec\n", *space)
		os.Exit(2)
	}
	if *printKeys {
		for _, q := range gen.keys() {
			fmt.Println(q)
		}
		return
	}
	if *zipfS <= 1 || *rate <= 0 || *keys < 1 {
		fmt.Fprintln(os.Stderr, "zipfload: want -zipf > 1, -rate > 0, -keys >= 1")
		os.Exit(2)
	}
	resetCRM := func() {
		if *crmStats == "" {
			return
		}
		if err := post(client, *crmStats+"/stats/reset"); err != nil {
			fmt.Fprintln(os.Stderr, "zipfload: resetting the CRM's stats:", err)
			os.Exit(1)
		}
	}
	resetCRM()
	if *measureFrom > 0 {
		time.AfterFunc(*measureFrom, resetCRM)
	}
	collected := run(client, *base, creds, gen, *rate, *duration, *zipfS, *seed)
	n503 := reportWindows(collected, *duration, *window)
	var st struct {
		Requests    int64 `json:"requests"`
		MaxInFlight int64 `json:"max_in_flight"`
	}
	crmCalls := int64(-1)
	if *crmStats != "" {
		if err := getJSON(client, *crmStats+"/stats", &st); err != nil {
			fmt.Fprintln(os.Stderr, "zipfload: reading the CRM's stats:", err)
		} else {
			crmCalls = st.Requests
			fmt.Printf("backend: %d requests, max in flight %d\n", st.Requests, st.MaxInFlight)
		}
	}
	if *summary != "" {
		sum := Summarize(collected, *measureFrom)
		fmt.Printf("measured from %s: %d requests, %d repeats, %d of them not hits (%d within 1s of the first ask); p99 of the repeats that were hits %s\n",
			*measureFrom, sum.N, sum.Repeats, sum.RepeatMisses, sum.RepeatMissesNear, sum.RepeatHitP99)
		fmt.Println(sum.Line(*summary, crmCalls))
	}
	if *warmOut != "" {
		if err := os.WriteFile(*warmOut, []byte(strings.Join(WarmKeys(collected, *warmMax), "\n")+"\n"), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "zipfload: -warm-out:", err)
			os.Exit(1)
		}
	}
	if *max503 >= 0 && n503 > *max503 {
		fmt.Printf("FAIL: %d answers were 503 (at most %d wanted)\n", n503, *max503)
		os.Exit(1)
	}
}

// cred is one -users entry.
type cred struct {
	user, password, tenant string
	short                  bool // no full-detail permission
}

func parseCred(s string) (cred, error) {
	f := strings.Split(s, ":")
	if len(f) < 2 || len(f) > 4 || f[0] == "" || f[1] == "" {
		return cred{}, fmt.Errorf("%q is not user:password[:tenant[:short]]", s)
	}
	c := cred{user: f[0], password: f[1], tenant: f[0]}
	if len(f) > 2 && f[2] != "" {
		c.tenant = f[2]
	}
	if len(f) > 3 {
		if f[3] != "short" {
			return cred{}, fmt.Errorf("%q: the fourth field is short or nothing", s)
		}
		c.short = true
	}
	return c, nil
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

// generator draws requests: keys lists the query space (for -print-keys);
// request turns a drawn rank, a user and the draws of rng into a URL path,
// whether to ask for gzip, and the request's repeat key (tenant and
// criteria, format aside).
type generator interface {
	keys() []string
	request(rank uint64, c cred, rng *rand.Rand) (path string, gzip bool, repeatKey string)
}

// slowcrmSpace is Queries: each key carries its format, gzip always.
type slowcrmSpace []string

func (q slowcrmSpace) keys() []string { return q }

func (q slowcrmSpace) request(rank uint64, c cred, _ *rand.Rand) (string, bool, string) {
	return q[rank], true, c.tenant + " " + q[rank]
}

// specSpace is SpecCriteria: the format and the encoding are drawn per
// request.
type specSpace struct {
	criteria []string
	gzip     float64
}

func (s specSpace) keys() []string { return s.criteria }

func (s specSpace) request(rank uint64, c cred, rng *rand.Rand) (string, bool, string) {
	ext := [...]string{"xml", "json"}[rng.IntN(2)]
	gz := rng.Float64() < s.gzip
	crit := s.criteria[rank]
	if c.short {
		crit = strings.Replace(crit, "&detail=full", "", 1)
	}
	if n, ok := strings.CutPrefix(crit[3:], "/properties/#"); ok { // a single: the tenant's own property
		k, _ := strconv.Atoi(strings.TrimSuffix(n, ".{ext}"))
		id := demoPropertyID(c.tenant, crit[1:3], k)
		if c.short {
			// A single property is full detail, which this user may not
			// see (an error answer): it asks for the property by id in a
			// short list instead.
			crit = fmt.Sprintf("%s/properties.{ext}?id=%d", crit[:3], id)
		} else {
			crit = fmt.Sprintf("%s/properties/%d.{ext}", crit[:3], id)
		}
	}
	return strings.Replace(crit, "{ext}", ext, 1), gz, c.tenant + " " + crit
}

// demoPropertyID is the service id of the tenant's k-th property (of 400)
// in the country, in the demo data (ids are global: harbour's au, harbour's
// nz, summit's au, summit's nz).
func demoPropertyID(tenant, country string, k int) int {
	t := 0
	if tenant == "summit" {
		t = 1
	}
	c := 0
	if country == "nz" {
		c = 1
	}
	return t*800 + c*400 + 1 + k%400
}

// SpecCriteria returns n distinct criteria of the spec's parameter space,
// format left as "{ext}": property lists (status, category, bedrooms,
// price_from, order, limit, page, detail: the combinations in a fixed
// random order, so neighbouring ranks differ in many parameters), agent lists (one list rank in 8 while they last), and, on a
// share of the ranks spread evenly over them, single properties
// ("/au/properties/#K.{ext}", the K-th of the tenant's 400 in the
// country, while the 800 last). The i-th is the same for every n > i.
func SpecCriteria(n int, singleShare float64) []string {
	statuses := []string{"", "current", "sold", "contract", "current&status[]=contract"}
	categories := []string{"", "residential", "commercial"}
	orders := []string{"", "price", "agency_id", "status", "approved", "last_updated"}
	limits := []int{10, 20, 50}
	const pages, bedrooms, prices = 8, 5, 4
	total := len(limits) * pages * len(statuses) * len(categories) * bedrooms * prices * len(orders) * 2
	perm := rand.New(rand.NewPCG(7, 11)).Perm(total) // the combinations in a fixed random order
	out := make([]string, 0, n)
	seen := make(map[string]bool, n)
	singles, lists, agents, props := 0, 0, 0, 0
	for i := 0; len(out) < n; i++ {
		country := [...]string{"au", "nz"}[i%2]
		var p string
		switch {
		case singleShare > 0 && int(float64(i+1)*singleShare) > int(float64(i)*singleShare) && singles < 800:
			p = fmt.Sprintf("/%s/properties/#%d.{ext}", [...]string{"au", "nz"}[singles%2], singles/2)
			singles++
		case lists%8 == 7 && agents < 2*60:
			lists++
			k := agents / 2
			agents++
			q := []string{fmt.Sprintf("limit=%d", [...]int{5, 10, 20}[k%3])}
			k /= 3
			if off := k % 5; off > 0 {
				q = append(q, fmt.Sprintf("offset=%d", off*5))
			}
			k /= 5
			if k%2 == 1 {
				q = append(q, "order=name")
			}
			if k/2 == 1 {
				q = append(q, "detail=full")
			}
			p = "/" + country + "/agents.{ext}?" + strings.Join(q, "&")
		default:
			lists++
			if props >= total {
				panic("zipfload: the spec space has fewer distinct criteria than asked")
			}
			k := perm[props]
			props++
			limit := limits[k%len(limits)]
			k /= len(limits)
			q := []string{fmt.Sprintf("limit=%d", limit)}
			if pg := k % pages; pg > 0 {
				q = append(q, fmt.Sprintf("offset=%d", pg*limit))
			}
			k /= pages
			if s := statuses[k%len(statuses)]; s != "" {
				q = append(q, "status[]="+s)
			}
			k /= len(statuses)
			if c := categories[k%len(categories)]; c != "" {
				q = append(q, "category="+c)
			}
			k /= len(categories)
			if b := k % bedrooms; b > 0 {
				q = append(q, fmt.Sprintf("bedrooms=%d", b))
			}
			k /= bedrooms
			if pr := k % prices; pr > 0 {
				q = append(q, fmt.Sprintf("price_from=%d", []int{0, 300000, 500000, 800000}[pr]))
			}
			k /= prices
			if o := orders[k%len(orders)]; o != "" {
				q = append(q, "order="+o)
			}
			k /= len(orders)
			if k%2 == 1 {
				q = append(q, "detail=full")
			}
			p = "/" + country + "/properties.{ext}?" + strings.Join(q, "&")
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
	hit     bool          // Cache-Status has the hit parameter
	repeat  bool          // tenant and criteria asked before in the run
	since   time.Duration // a repeat: the time since the first ask was scheduled
	key     string        // user, gzip (0 or 1) and path, tab-separated
}

// repeats remembers the repeat keys asked so far.
type repeats map[string]struct{}

// seen reports whether key was asked before, and remembers it.
func (r repeats) seen(key string) bool {
	if _, ok := r[key]; ok {
		return true
	}
	r[key] = struct{}{}
	return false
}

func run(client *http.Client, base string, creds []cred, gen generator, rate float64, duration time.Duration, zipfS float64, seed uint64) []result {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	zipf := rand.NewZipf(rng, zipfS, 1, uint64(len(gen.keys())-1))
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
		base, rate, duration, total, len(gen.keys()), zipfS, len(creds), seed)
	var wg sync.WaitGroup
	seen := repeats{}
	first := map[string]time.Duration{}
	start := time.Now()
	for i := range total {
		at := time.Duration(i) * interval
		rank := zipf.Uint64()
		c := creds[rng.IntN(len(creds))]
		path, gz, rk := gen.request(rank, c, rng)
		repeat := seen.seen(rk)
		if !repeat {
			first[rk] = at
		}
		since := at - first[rk]
		if d := time.Until(start.Add(at)); d > 0 {
			time.Sleep(d)
		}
		wg.Go(func() {
			status, cs := get(client, base+path, c, gz)
			results <- result{at: at, latency: time.Since(start.Add(at)), status: status, hit: IsHit(cs), repeat: repeat, since: since,
				key: c.user + "\t" + map[bool]string{false: "0", true: "1"}[gz] + "\t" + path}
		})
	}
	wg.Wait()
	close(results)
	<-collectorDone
	slices.SortFunc(collected, func(a, b result) int { return int(a.at - b.at) })
	return collected
}

// reportWindows prints a line per window and one in all (collected sorted
// by schedule), and returns the 503s.
func reportWindows(collected []result, duration, window time.Duration) int {
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

// IsHit reports whether a Cache-Status header value (RFC 9211) says the
// answer came from the cache: its first entry (the cache nearest the
// origin is listed first; each server here is the only one) has the hit
// parameter.
func IsHit(cacheStatus string) bool {
	first, _, _ := strings.Cut(cacheStatus, ",")
	params := strings.Split(first, ";")
	for _, p := range params[1:] {
		if strings.TrimSpace(p) == "hit" {
			return true
		}
	}
	return false
}

// Summary is the figures of the requests scheduled from a point on.
type Summary struct {
	N, Errors, Hits, Repeats  int
	P50, P99, P999, RepeatP99 time.Duration
	// RepeatMisses counts the repeats not answered as hits (the first ask
	// still in flight, an entry evicted or never stored), and
	// RepeatHitP99 is the p99 of the repeats that were hits.
	RepeatMisses int
	RepeatHitP99 time.Duration
	// RepeatMissesNear counts the repeats not answered as hits that were
	// asked within a second of the first ask (likely while its fetch was
	// still in flight).
	RepeatMissesNear int
}

// Summarize computes the Summary of the results scheduled at or after
// from. An error is a transport error or an answer other than 200 and
// 404 (a missing single property is an answer).
func Summarize(rs []result, from time.Duration) Summary {
	var s Summary
	var lat, rep, repHit []time.Duration
	for _, r := range rs {
		if r.at < from {
			continue
		}
		s.N++
		if r.status != http.StatusOK && r.status != http.StatusNotFound {
			s.Errors++
		}
		if r.hit {
			s.Hits++
		}
		lat = append(lat, r.latency)
		if r.repeat {
			s.Repeats++
			rep = append(rep, r.latency)
			if r.hit {
				repHit = append(repHit, r.latency)
			} else {
				s.RepeatMisses++
				if r.since < time.Second {
					s.RepeatMissesNear++
				}
			}
		}
	}
	s.P50, s.P99, s.P999 = percentile(lat, 0.50), percentile(lat, 0.99), percentile(lat, 0.999)
	s.RepeatP99, s.RepeatHitP99 = percentile(rep, 0.99), percentile(repHit, 0.99)
	return s
}

// percentile returns the p-quantile of ds by nearest rank (sorting ds):
// the smallest value with at least p of the values at or below it.
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	i := int(math.Ceil(p*float64(len(ds)))) - 1
	return ds[min(max(i, 0), len(ds)-1)]
}

// Line is the summary line of server name; calls is the CRM's requests in
// the measured period (negative: unknown, printed as -1).
func (s Summary) Line(name string, calls int64) string {
	per1k := -1.0
	if calls >= 0 && s.N > 0 {
		per1k = float64(calls) * 1000 / float64(s.N)
	}
	ratio := 0.0
	if s.N > 0 {
		ratio = float64(s.Hits) / float64(s.N)
	}
	ms := func(d time.Duration) string {
		return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', 1, 64)
	}
	return fmt.Sprintf("server=%s calls_per_1k=%.1f hit_ratio=%.4f p50_ms=%s p99_ms=%s p999_ms=%s repeat_p99_ms=%s errors=%d",
		name, per1k, ratio, ms(s.P50), ms(s.P99), ms(s.P999), ms(s.RepeatP99), s.Errors)
}

// WarmKeys returns the keys of the last max distinct requests answered 200
// (rs sorted by schedule), the most recent first.
func WarmKeys(rs []result, max int) []string {
	var out []string
	seen := map[string]bool{}
	for i := len(rs) - 1; i >= 0 && len(out) < max; i-- {
		if r := rs[i]; r.status == http.StatusOK && !seen[r.key] {
			seen[r.key] = true
			out = append(out, r.key)
		}
	}
	return out
}

// checkWarm asks each request of a WarmKeys file once (16 at a time) as its
// user and returns how many were answered 200.
func checkWarm(client *http.Client, base string, creds []cred, file string) (ok, n int, err error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return 0, 0, err
	}
	byUser := map[string]cred{}
	for _, c := range creds {
		byUser[c.user] = c
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for line := range strings.Lines(string(data)) {
		f := strings.Split(strings.TrimSpace(line), "\t")
		if len(f) != 3 {
			continue
		}
		c, known := byUser[f[0]]
		if !known {
			return 0, 0, fmt.Errorf("%s: user %q is not in -users", file, f[0])
		}
		n++
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if status, _ := get(client, base+f[2], c, f[1] == "1"); status == http.StatusOK {
				mu.Lock()
				ok++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return ok, n, nil
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

// get requests url as the user (gzip: with Accept-Encoding: gzip) and
// reads the body; it returns the status (0 on a transport error) and the
// Cache-Status header.
func get(client *http.Client, url string, c cred, gzip bool) (int, string) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return 0, ""
	}
	req.SetBasicAuth(c.user, c.password)
	if gzip {
		req.Header.Set("Accept-Encoding", "gzip")
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, ""
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return 0, ""
	}
	return resp.StatusCode, resp.Header.Get("Cache-Status")
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
