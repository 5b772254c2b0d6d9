// Command freshload measures how soon a change made in the backend is
// served by listingproxy, under a read load on warm keys. It is the driver
// of bench/freshness.sh.
//
// It waits for the feed's start (-min-gaps: the purge of every tenant a
// feed makes when it starts, since it cannot know what changed before)
// and for the tenant-level purges to stop, then warms a fixed set of keys
// (single properties and pages of property lists of two users of two
// tenants), then for -duration:
//
//   - sends -rate requests a second (open loop: each at its scheduled
//     time) for keys drawn uniformly from that set, reading each answer's
//     Cache-Status;
//   - applies -update-rate updates a second to -tenant's properties in the
//     backend itself (-update postgres or mysql: an UPDATE of price_text
//     and last_updated on -dsn, autocommitted; crm: POST /_crm/changes on
//     legacy-crm, whose price text is "Offers from" its clock's second),
//     cycling over the first -touched properties of -country by id;
//   - for each update, polls that property's URL through listingproxy
//     (every -poll-every at first, then every -poll-growth of the time
//     waited so far, so a long wait costs few requests and a short one is
//     timed to 10 ms) until it serves the update's value or a later one.
//     These polls are not part of the load's figures.
//
// "visible" is the time from just before the update was sent (the commit
// happens within its round trip) to the answer that first showed it.
// backend_calls_per_s and tenant_purges are the differences of
// listingproxy's /metrics (listingproxy_backend_request_duration_seconds_count,
// listingproxy_cache_purges_total{kind="tenant"}) over the -duration but
// its first -skip (for a cache by ttl alone: a window holding whole ttls,
// after the keys warmed together have begun to expire), and
// untouched_hit_ratio the share of the load's answers in that window with
// "hit" in Cache-Status (a stale answer served while it is refreshed is
// one) among keys no update touched: a single of a property never
// updated, a list whose warm body held none of the updated properties.
// It prints one line:
//
//	feed=NAME updates=N visible_p50_ms=X visible_p99_ms=X visible_max_ms=X backend_calls_per_s=X tenant_purges=N untouched_hit_ratio=X
//
// and a line of details on stderr. Key choice and load draws come from
// -seed. -free-port prints a free loopback port and exits (for the script,
// which must know listingproxy's address before starting the CRM that
// posts webhooks to it).
package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	_ "github.com/go-sql-driver/mysql"
	_ "github.com/jackc/pgx/v5/stdlib"
)

type options struct {
	base, admin, adminUser, adminPassword  string
	feed, update, dsn, crm                 string
	tenant, country                        string
	user, other                            [2]string
	rate, updateRate                       float64
	duration, skip, settle, visibleTimeout time.Duration
	pollEvery                              time.Duration
	pollGrowth                             float64
	touched, singles, pages                int
	minGaps                                float64
	showMisses                             int
	seed                                   uint64
}

func main() {
	var o options
	var user, other string
	flag.StringVar(&o.base, "base", "http://127.0.0.1:8080", "listingproxy's public base URL")
	flag.StringVar(&o.admin, "admin", "http://127.0.0.1:8081", "listingproxy's admin base URL (/metrics)")
	flag.StringVar(&o.adminUser, "admin-user", "admin", "admin user for /metrics")
	flag.StringVar(&o.adminPassword, "admin-password", "admin-demo", "admin password for /metrics")
	flag.StringVar(&o.feed, "feed", "", "the feed's name, printed as feed=")
	flag.StringVar(&o.update, "update", "postgres", "how updates are made: postgres, mysql (an UPDATE on -dsn) or crm (POST -crm/_crm/changes)")
	flag.StringVar(&o.dsn, "dsn", "", "the database listingproxy serves (-update postgres or mysql)")
	flag.StringVar(&o.crm, "crm", "", "legacy-crm's base URL (-update crm)")
	flag.StringVar(&o.tenant, "tenant", "harbour", "the tenant whose properties are updated")
	flag.StringVar(&o.country, "country", "au", "the country of the updated properties")
	flag.StringVar(&user, "user", "harbour:harbour-demo", "user:password of -tenant, with the prices permission")
	flag.StringVar(&other, "other", "summit:summit-demo", "user:password of a tenant nothing updates")
	flag.Float64Var(&o.rate, "rate", 200, "load requests a second (open loop)")
	flag.Float64Var(&o.updateRate, "update-rate", 5, "updates a second")
	flag.DurationVar(&o.duration, "duration", 50*time.Second, "how long the load and the updates run")
	flag.DurationVar(&o.skip, "skip", 0, "the load's hit ratio, the backend calls and the tenant purges are measured from this long after the start to the end of -duration (the updates are all timed)")
	flag.DurationVar(&o.settle, "settle", 3*time.Second, "before warming, wait until no tenant purge happened for this long")
	flag.Float64Var(&o.minGaps, "min-gaps", 0, "before warming, wait until listingproxy_change_feed_gaps_total reaches this (the feed's start)")
	flag.DurationVar(&o.visibleTimeout, "visible-timeout", 2*time.Minute, "give up polling for one update after this")
	flag.DurationVar(&o.pollEvery, "poll-every", 10*time.Millisecond, "shortest interval between polls of an updated property")
	flag.Float64Var(&o.pollGrowth, "poll-growth", 0.05, "poll interval as a share of the time waited so far, when longer than -poll-every")
	flag.IntVar(&o.touched, "touched", 50, "properties the updates cycle over (the first of -tenant's -country by id)")
	flag.IntVar(&o.singles, "singles", 100, "untouched single properties in the load, per tenant")
	flag.IntVar(&o.pages, "pages", 10, "list pages (20 by id) in the load, per user and country")
	flag.Uint64Var(&o.seed, "seed", 1, "seed of the key choice and the load's draws")
	flag.IntVar(&o.showMisses, "show-misses", 10, "print the first this many of the load's answers for untouched keys that were not hits")
	freePort := flag.Bool("free-port", false, "print a free loopback TCP port and exit")
	flag.Parse()
	if *freePort {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			fail(err)
		}
		fmt.Println(l.Addr().(*net.TCPAddr).Port)
		l.Close()
		return
	}
	var ok1, ok2 bool
	o.user[0], o.user[1], ok1 = strings.Cut(user, ":")
	o.other[0], o.other[1], ok2 = strings.Cut(other, ":")
	if !ok1 || !ok2 || o.rate <= 0 || o.updateRate <= 0 || o.touched < 1 || o.pollGrowth <= 0 || o.skip < 0 || o.skip >= o.duration {
		fmt.Fprintln(os.Stderr, "freshload: want -user and -other as user:password, -rate, -update-rate, -touched, -poll-growth > 0, 0 <= -skip < -duration")
		os.Exit(2)
	}
	if err := run(o); err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "freshload:", err)
	os.Exit(1)
}

// key is one URL of the load, as one user.
type key struct {
	path    string
	user    [2]string
	touched bool
}

// updater applies the n-th update to property id and returns the test
// telling whether a price text served shows it (or a later update).
type updater func(ctx context.Context, n int, id int64) (func(price string) bool, error)

func run(o options) error {
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 512}}
	ctx := context.Background()
	up, closeUp, err := newUpdater(o, client)
	if err != nil {
		return err
	}
	defer closeUp()

	// The feed's start, then quiet.
	deadline := time.Now().Add(2 * time.Minute)
	var last string
	quietSince := time.Now()
	for {
		page, err := get(client, o.admin+"/metrics", [2]string{o.adminUser, o.adminPassword})
		if err != nil {
			return fmt.Errorf("metrics: %w", err)
		}
		tp := fmt.Sprint(SumMetric(page, "listingproxy_cache_purges_total", `kind="tenant"`))
		if tp != last {
			last, quietSince = tp, time.Now()
		}
		if SumMetric(page, "listingproxy_change_feed_gaps_total") >= o.minGaps && time.Since(quietSince) >= o.settle {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the feed did not start (gaps >= %v) and settle within 2 minutes", o.minGaps)
		}
		time.Sleep(100 * time.Millisecond)
	}

	keys, touched, err := chooseKeys(o, client)
	if err != nil {
		return err
	}
	nTouched := 0
	for _, k := range keys {
		if k.touched {
			nTouched++
		}
	}

	start := time.Now()
	stop := start.Add(o.duration)
	measured := start.Add(o.skip)
	var m0 string
	var m0err error
	var m0done sync.WaitGroup
	m0done.Go(func() {
		time.Sleep(time.Until(measured))
		m0, m0err = get(client, o.admin+"/metrics", [2]string{o.adminUser, o.adminPassword})
	})

	// The load.
	var hits, reqs [2]atomic.Int64 // [untouched, touched]
	var loadErrs, missShown atomic.Int64
	var wg sync.WaitGroup
	wg.Go(func() {
		r := rand.New(rand.NewPCG(o.seed, 2))
		var inflight sync.WaitGroup
		for i := 0; ; i++ {
			at := start.Add(time.Duration(float64(i) / o.rate * float64(time.Second)))
			if !at.Before(stop) {
				break
			}
			time.Sleep(time.Until(at))
			k := keys[r.IntN(len(keys))]
			if at.Before(measured) {
				inflight.Go(func() { fetch(client, o.base+k.path, k.user) })
				continue
			}
			inflight.Go(func() {
				cs, _, err := fetch(client, o.base+k.path, k.user)
				c := 0
				if k.touched {
					c = 1
				}
				if err != nil {
					loadErrs.Add(1)
				}
				reqs[c].Add(1)
				if strings.Contains(cs, "; hit") {
					hits[c].Add(1)
				} else if c == 0 && missShown.Add(1) <= int64(o.showMisses) {
					fmt.Fprintf(os.Stderr, "# untouched miss at %.3fs: %s as %s: %q %v\n", time.Since(start).Seconds(), k.path, k.user[0], cs, err)
				}
			})
		}
		inflight.Wait()
	})

	// The updates and their pollers.
	var mu sync.Mutex
	var visible []time.Duration
	var unseen, updErrs, polls atomic.Int64
	var pollers sync.WaitGroup
	n := 0
	for ; ; n++ {
		at := start.Add(time.Duration(float64(n) / o.updateRate * float64(time.Second)))
		if !at.Before(stop) {
			break
		}
		time.Sleep(time.Until(at))
		id := touched[n%len(touched)]
		t0 := time.Now()
		shows, err := up(ctx, n, id)
		if err != nil {
			updErrs.Add(1)
			fmt.Fprintf(os.Stderr, "freshload: update %d of %d: %v\n", n, id, err)
			continue
		}
		pollers.Go(func() {
			path := fmt.Sprintf("/%s/properties/%d.json", o.country, id)
			for {
				_, body, err := fetch(client, o.base+path, o.user)
				polls.Add(1)
				now := time.Now()
				if err == nil {
					if m := priceRE.FindStringSubmatch(body); m != nil && shows(m[1]) {
						mu.Lock()
						visible = append(visible, now.Sub(t0))
						mu.Unlock()
						return
					}
				}
				waited := now.Sub(t0)
				if waited > o.visibleTimeout {
					unseen.Add(1)
					return
				}
				time.Sleep(max(o.pollEvery, time.Duration(float64(waited)*o.pollGrowth)))
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(measured)
	m1, err := get(client, o.admin+"/metrics", [2]string{o.adminUser, o.adminPassword})
	if err != nil {
		return err
	}
	if m0done.Wait(); m0err != nil {
		return m0err
	}
	pollers.Wait()

	calls := SumMetric(m1, "listingproxy_backend_request_duration_seconds_count") - SumMetric(m0, "listingproxy_backend_request_duration_seconds_count")
	purges := SumMetric(m1, "listingproxy_cache_purges_total", `kind="tenant"`) - SumMetric(m0, "listingproxy_cache_purges_total", `kind="tenant"`)
	ratio := math.NaN()
	if reqs[0].Load() > 0 {
		ratio = float64(hits[0].Load()) / float64(reqs[0].Load())
	}
	slices.Sort(visible)
	ms := func(q float64) string {
		if len(visible) == 0 {
			return "NaN"
		}
		return strconv.FormatInt(Percentile(visible, q).Milliseconds(), 10)
	}
	fmt.Printf("feed=%s updates=%d visible_p50_ms=%s visible_p99_ms=%s visible_max_ms=%s backend_calls_per_s=%.2f tenant_purges=%d untouched_hit_ratio=%.4f\n",
		o.feed, len(visible), ms(0.50), ms(0.99), ms(1), calls/elapsed.Seconds(), int64(purges), ratio)
	touchedRatio := math.NaN()
	if reqs[1].Load() > 0 {
		touchedRatio = float64(hits[1].Load()) / float64(reqs[1].Load())
	}
	fmt.Fprintf(os.Stderr, "# %s: %d updates sent (%d failed, %d never seen within %v), %d polls; measured over the last %.1fs: load %d requests over %d keys (%d touched: hit ratio %.4f; %d errors)\n",
		o.feed, n, updErrs.Load(), unseen.Load(), o.visibleTimeout, polls.Load(), elapsed.Seconds(), reqs[0].Load()+reqs[1].Load(), len(keys), nTouched, touchedRatio, loadErrs.Load())
	fmt.Fprintf(os.Stderr, "# %s: backend calls over the last %.1fs:", o.feed, elapsed.Seconds())
	before := Samples(m0, "listingproxy_backend_request_duration_seconds_count")
	after := Samples(m1, "listingproxy_backend_request_duration_seconds_count")
	for _, lab := range slices.Sorted(maps.Keys(after)) {
		if d := after[lab] - before[lab]; d != 0 {
			fmt.Fprintf(os.Stderr, " %s %v", lab, d)
		}
	}
	fmt.Fprintln(os.Stderr)
	return nil
}

var priceRE = regexp.MustCompile(`"price":"([^"]*)"`)

// ListIDs returns the ids of the properties of a JSON property list (the
// ids of their agents are not theirs).
func ListIDs(body string) ([]int64, error) {
	var l struct {
		Properties struct {
			Property json.RawMessage `json:"property"`
		} `json:"properties"`
	}
	if err := json.Unmarshal([]byte(body), &l); err != nil {
		return nil, fmt.Errorf("a property list: %w", err)
	}
	type prop struct {
		ID string `json:"id"`
	}
	var ps []prop
	if p := l.Properties.Property; len(p) > 0 && p[0] == '{' {
		ps = make([]prop, 1)
		if err := json.Unmarshal(p, &ps[0]); err != nil {
			return nil, fmt.Errorf("a property list: %w", err)
		}
	} else if len(p) > 0 {
		if err := json.Unmarshal(p, &ps); err != nil {
			return nil, fmt.Errorf("a property list: %w", err)
		}
	}
	out := make([]int64, len(ps))
	for i, p := range ps {
		n, err := strconv.ParseInt(p.ID, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("a property list: id %q", p.ID)
		}
		out[i] = n
	}
	return out, nil
}

// chooseKeys lists the load's keys and warms them: the singles of the
// first -touched properties of -tenant in -country by id (the updated
// ones), -singles more of -tenant and of -other's tenant, and -pages
// pages of 20 by id of each user in both countries; it returns the keys
// and the updated ids.
func chooseKeys(o options, client *http.Client) ([]key, []int64, error) {
	ids := func(u [2]string, country string) ([]int64, error) {
		body, err := get(client, fmt.Sprintf("%s/%s/properties.json?order=id&limit=1000", o.base, country), u)
		if err != nil {
			return nil, err
		}
		return ListIDs(body)
	}
	mine, err := ids(o.user, o.country)
	if err != nil {
		return nil, nil, err
	}
	theirs, err := ids(o.other, o.country)
	if err != nil {
		return nil, nil, err
	}
	if len(mine) < o.touched+o.singles || len(theirs) < o.singles {
		return nil, nil, fmt.Errorf("%s has %d properties in %s and %s %d: fewer than -touched + -singles", o.user[0], len(mine), o.country, o.other[0], len(theirs))
	}
	touched := mine[:o.touched]
	isTouched := map[int64]bool{}
	for _, id := range touched {
		isTouched[id] = true
	}
	r := rand.New(rand.NewPCG(o.seed, 1))
	var keys []key
	single := func(u [2]string, id int64) {
		keys = append(keys, key{path: fmt.Sprintf("/%s/properties/%d.json", o.country, id), user: u, touched: isTouched[id]})
	}
	for _, id := range touched {
		single(o.user, id)
	}
	rest := slices.Clone(mine[o.touched:])
	r.Shuffle(len(rest), func(i, j int) { rest[i], rest[j] = rest[j], rest[i] })
	for _, id := range rest[:o.singles] {
		single(o.user, id)
	}
	theirs = slices.Clone(theirs)
	r.Shuffle(len(theirs), func(i, j int) { theirs[i], theirs[j] = theirs[j], theirs[i] })
	for _, id := range theirs[:o.singles] {
		single(o.other, id)
	}
	for _, u := range [][2]string{o.user, o.other} {
		for _, c := range []string{"au", "nz"} {
			for p := range o.pages {
				keys = append(keys, key{path: fmt.Sprintf("/%s/properties.json?order=id&limit=20&offset=%d", c, p*20), user: u})
			}
		}
	}
	// Warm every key; a list is touched when its body holds an updated
	// property of the updated tenant.
	for i := range keys {
		k := &keys[i]
		_, body, err := fetch(client, o.base+k.path, k.user)
		if err != nil {
			return nil, nil, fmt.Errorf("warming %s: %w", k.path, err)
		}
		if strings.Contains(k.path, "?") && k.user == o.user {
			in, err := ListIDs(body)
			if err != nil {
				return nil, nil, fmt.Errorf("%s: %w", k.path, err)
			}
			for _, n := range in {
				if isTouched[n] {
					k.touched = true
				}
			}
		}
	}
	return keys, touched, nil
}

func newUpdater(o options, client *http.Client) (updater, func(), error) {
	switch o.update {
	case "postgres", "mysql":
		driver, stmt := "pgx", "UPDATE properties SET price_text = $1, last_updated = $2 WHERE id = $3"
		if o.update == "mysql" {
			driver, stmt = "mysql", "UPDATE properties SET price_text = ?, last_updated = ? WHERE id = ?"
		}
		db, err := sql.Open(driver, o.dsn)
		if err != nil {
			return nil, nil, err
		}
		db.SetMaxOpenConns(4)
		if err := db.Ping(); err != nil {
			db.Close()
			return nil, nil, fmt.Errorf("-dsn: %w", err)
		}
		// Markers of this run only: an earlier run's left in the table
		// must not count.
		run := strconv.FormatInt(time.Now().UnixNano(), 36)
		return func(ctx context.Context, n int, id int64) (func(string) bool, error) {
			res, err := db.ExecContext(ctx, stmt, fmt.Sprintf("Fresh %s %d", run, n), time.Now().UTC().Truncate(time.Second), id)
			if err != nil {
				return nil, err
			}
			if c, _ := res.RowsAffected(); c != 1 {
				return nil, fmt.Errorf("%d rows updated, want 1", c)
			}
			return func(price string) bool { return SQLShows(price, run, n) }, nil
		}, func() { db.Close() }, nil
	case "crm":
		return func(ctx context.Context, n int, id int64) (func(string) bool, error) {
			// The CRM stamps the price text with its clock's second,
			// which is this machine's: at least t0's second.
			t0 := time.Now().UTC().Truncate(time.Second)
			body := fmt.Sprintf(`{"tenant":%q,"op":"update","id":%d}`, o.tenant, id)
			req, _ := http.NewRequestWithContext(ctx, "POST", o.crm+"/_crm/changes", strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			resp, err := client.Do(req)
			if err != nil {
				return nil, err
			}
			msg, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				return nil, fmt.Errorf("%s: %s", resp.Status, strings.TrimSpace(string(msg)))
			}
			return func(price string) bool { return CRMShows(price, t0) }, nil
		}, func() {}, nil
	}
	return nil, nil, fmt.Errorf("-update %q: want postgres, mysql or crm", o.update)
}

// SQLShows tells whether a price text is run's n-th update or a later one.
func SQLShows(price, run string, n int) bool {
	rest, ok := strings.CutPrefix(price, "Fresh "+run+" ")
	if !ok {
		return false
	}
	k, err := strconv.Atoi(rest)
	return err == nil && k >= n
}

// CRMShows tells whether a price text is the CRM's ("Offers from" and an
// RFC 3339 second) of a change made at or after t0's second.
func CRMShows(price string, t0 time.Time) bool {
	rest, ok := strings.CutPrefix(price, "Offers from ")
	if !ok {
		return false
	}
	t, err := time.Parse(time.RFC3339, rest)
	return err == nil && !t.Before(t0)
}

// Percentile returns the q-quantile (0 < q <= 1) of sorted by the
// nearest-rank method: the smallest value with at least q of the values
// at or below it. It panics on an empty slice.
func Percentile(sorted []time.Duration, q float64) time.Duration {
	r := int(math.Ceil(q * float64(len(sorted))))
	return sorted[min(max(r, 1), len(sorted))-1]
}

// SumMetric sums the samples of a Prometheus text page named name (a
// counter, or a histogram's _count) whose labels contain every one of
// labels (each written name="value").
func SumMetric(page, name string, labels ...string) float64 {
	var sum float64
	for lab, v := range Samples(page, name) {
		if allIn(lab, labels) {
			sum += v
		}
	}
	return sum
}

// Samples returns the samples of a Prometheus text page named name, by
// their labels as written ({a="x",b="y"}, or "" for none).
func Samples(page, name string) map[string]float64 {
	out := map[string]float64{}
	for line := range strings.Lines(page) {
		line = strings.TrimSpace(line)
		rest, ok := strings.CutPrefix(line, name)
		if !ok || rest == "" || (rest[0] != '{' && rest[0] != ' ') {
			continue
		}
		lab, val := "", rest
		if rest[0] == '{' {
			end := strings.LastIndexByte(rest, '}')
			if end < 0 {
				continue
			}
			lab, val = rest[:end+1], rest[end+1:]
		}
		f := strings.Fields(val)
		if len(f) == 0 {
			continue
		}
		if v, err := strconv.ParseFloat(f[0], 64); err == nil {
			out[lab] = v
		}
	}
	return out
}

func allIn(lab string, labels []string) bool {
	for _, l := range labels {
		if !strings.Contains(lab, l) {
			return false
		}
	}
	return true
}

// fetch GETs url as u and returns the Cache-Status and the body; a status
// other than 200 is an error.
func fetch(client *http.Client, url string, u [2]string) (cacheStatus, body string, err error) {
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		return "", "", err
	}
	req.SetBasicAuth(u[0], u[1])
	resp, err := client.Do(req)
	if err != nil {
		return "", "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != 200 {
		err = errors.New(resp.Status)
	}
	return resp.Header.Get("Cache-Status"), string(b), err
}

func get(client *http.Client, url string, u [2]string) (string, error) {
	_, body, err := fetch(client, url, u)
	if err != nil {
		return "", fmt.Errorf("GET %s: %w", url, err)
	}
	return body, nil
}
