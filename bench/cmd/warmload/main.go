// Command warmload is bench/restart.sh's load: it warms a set of keys
// (each path in -paths, for each user), remembers each key's body, then for
// -duration runs -concurrency workers requesting the warm keys round-robin
// (and, with -cold, one cold key in every -cold requests, a path never asked
// before, which needs the backend). It prints, per second, how many warm
// answers were a 200 with the remembered body and how many were not, then
// the totals. It exits 1 when any warm answer was wrong.
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

type key struct{ user, pass, path string }

func main() {
	base := flag.String("base", "http://127.0.0.1:8080", "listingproxy's public URL")
	users := flag.String("users", "harbour:harbour-demo,summit:summit-demo", "user:password pairs, comma-separated")
	pathsFile := flag.String("paths", "", "file of paths (one per line) to warm and request")
	duration := flag.Duration("duration", 20*time.Second, "how long to run the load")
	concurrency := flag.Int("concurrency", 16, "concurrent requests")
	cold := flag.Int("cold", 0, "one cold request in every N (0: none)")
	flag.Parse()
	if err := run(*base, *users, *pathsFile, *duration, *concurrency, *cold); err != nil {
		fmt.Fprintln(os.Stderr, "warmload:", err)
		os.Exit(1)
	}
}

func run(base, users, pathsFile string, duration time.Duration, concurrency, cold int) error {
	f, err := os.Open(pathsFile)
	if err != nil {
		return err
	}
	var keys []key
	for sc := bufio.NewScanner(f); sc.Scan(); {
		p := strings.TrimSpace(sc.Text())
		if p == "" {
			continue
		}
		for _, up := range strings.Split(users, ",") {
			u, pw, _ := strings.Cut(up, ":")
			keys = append(keys, key{u, pw, p})
		}
	}
	f.Close()
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: concurrency}}
	get := func(k key) (int, []byte, error) {
		req, _ := http.NewRequest("GET", base+k.path, nil)
		req.SetBasicAuth(k.user, k.pass)
		resp, err := client.Do(req)
		if err != nil {
			return 0, nil, err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return resp.StatusCode, b, err
	}
	bodies := make([][]byte, len(keys))
	for i, k := range keys {
		status, b, err := get(k)
		if err != nil || status != 200 {
			return fmt.Errorf("warming %s %s: %d %v", k.user, k.path, status, err)
		}
		bodies[i] = b
	}
	fmt.Printf("warmed %d keys; %d workers for %s (cold: 1 in %d)\n", len(keys), concurrency, duration, cold)

	var ok, wrong, coldOK, coldFailed, next atomic.Int64
	var firstWrong atomic.Value
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range concurrency {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				n := next.Add(1)
				if cold > 0 && n%int64(cold) == 0 {
					k := keys[int(n)%len(keys)]
					k.path = fmt.Sprintf("/au/properties.json?limit=1&offset=%d", n/int64(cold)) // never asked before
					if status, _, err := get(k); err == nil && status == 200 {
						coldOK.Add(1)
					} else {
						coldFailed.Add(1)
					}
					continue
				}
				i := int(n) % len(keys)
				status, b, err := get(keys[i])
				if err == nil && status == 200 && bytes.Equal(b, bodies[i]) {
					ok.Add(1)
					continue
				}
				wrong.Add(1)
				firstWrong.CompareAndSwap(nil, fmt.Sprintf("%s %s: status %d, err %v, body %.120s", keys[i].user, keys[i].path, status, err, b))
			}
		})
	}
	start := time.Now()
	var lastOK, lastWrong, lastCold, lastColdFailed int64
	for tick := time.NewTicker(time.Second); time.Since(start) < duration; {
		<-tick.C
		o, w, c, cf := ok.Load(), wrong.Load(), coldOK.Load(), coldFailed.Load()
		fmt.Printf("t=%3.0fs warm ok %6d wrong %4d   cold ok %5d failed %5d\n", time.Since(start).Seconds(), o-lastOK, w-lastWrong, c-lastCold, cf-lastColdFailed)
		lastOK, lastWrong, lastCold, lastColdFailed = o, w, c, cf
	}
	close(stop)
	wg.Wait()
	o, w := ok.Load(), wrong.Load()
	fmt.Printf("warm requests: %d, answered 200 with their body: %d (%.3f%%), other: %d; cold: %d ok, %d failed\n",
		o+w, o, 100*float64(o)/float64(max(o+w, 1)), w, coldOK.Load(), coldFailed.Load())
	if w > 0 {
		return fmt.Errorf("%d warm answers were not a 200 with their body; first: %s", w, firstWrong.Load())
	}
	return nil
}
