// Package bare is bench/cmd/bareproxy's handler: the least a caching proxy
// written on net/http can do per hit, measured next to listingproxy (in
// bench/nginx.sh and bench/lp-bare.sh, and in the same harness as
// listingproxy's own hit in cmd/listingproxy's BenchmarkServeHitBare).
//
// It checks Basic authentication by comparing the Authorization header with
// one expected value (as bench/nginx.sh's nginx and Varnish do), keys its
// cache on Accept-Encoding and the request URI (one user, so no
// Authorization in the key), fills a miss from the origin with the
// request's Authorization and Accept-Encoding (bodies kept as sent, gzip
// included), and answers a hit with the stored status, headers and body
// plus "X-Cache-Status: HIT". No TTL, no eviction, no logging, no metrics:
// what is left is net/http's own per-request work, a map lookup and the
// write.
package bare

import (
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"

	"listingproxy/internal/onewrite"
)

type entry struct {
	status int
	header http.Header
	body   []byte
}

// Proxy is the handler.
type Proxy struct {
	origin string
	auth   string
	client *http.Client

	mu    sync.RWMutex
	cache map[string]*entry

	// Spin, when positive, is CPU time each request spends in a busy loop
	// before anything else: bench/bare-spin.sh prices a microsecond of
	// handler work in hits a second with it.
	Spin time.Duration
}

// New returns a Proxy filling from origin (scheme, host and port) and
// answering requests whose Authorization is exactly auth.
func New(origin, auth string) *Proxy {
	return &Proxy{
		origin: origin,
		auth:   auth,
		// No transparent decompression: a gzip body is stored as sent.
		client: &http.Client{Transport: &http.Transport{DisableCompression: true, MaxIdleConnsPerHost: 16}},
		cache:  map[string]*entry{},
	}
}

func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if p.Spin > 0 {
		for start := time.Now(); time.Since(start) < p.Spin; {
		}
	}
	if a := r.Header["Authorization"]; len(a) != 1 || a[0] != p.auth {
		w.Header()["Www-Authenticate"] = []string{`Basic realm="bench"`}
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	key := r.RequestURI
	if ae := r.Header["Accept-Encoding"]; len(ae) > 0 {
		key = ae[0] + "|" + key
	}
	p.mu.RLock()
	e := p.cache[key]
	p.mu.RUnlock()
	miss := e == nil
	if miss {
		var err error
		if e, err = p.fill(r); err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		p.mu.Lock()
		p.cache[key] = e
		p.mu.Unlock()
	}
	h := w.Header()
	for k, v := range e.header {
		h[k] = v
	}
	if miss {
		h["X-Cache-Status"] = []string{"MISS"}
	}
	w.WriteHeader(e.status)
	_, _ = w.Write(e.body)
}

// fill asks the origin for r's URI with r's Authorization and
// Accept-Encoding and keeps the answer's status, end-to-end headers and body.
func (p *Proxy) fill(r *http.Request) (*entry, error) {
	req, err := http.NewRequestWithContext(r.Context(), http.MethodGet, p.origin+r.RequestURI, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", p.auth)
	if ae := r.Header.Get("Accept-Encoding"); ae != "" {
		req.Header.Set("Accept-Encoding", ae)
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	h := resp.Header.Clone()
	for _, k := range []string{"Date", "Connection", "Keep-Alive", "Transfer-Encoding"} {
		delete(h, k)
	}
	h["Content-Length"] = []string{strconv.Itoa(len(body))}
	h["X-Cache-Status"] = []string{"HIT"}
	return &entry{status: resp.StatusCode, header: h, body: body}, nil
}

// Server is the http.Server bareproxy serves h with: listingproxy's default
// limits (config.yaml and config's defaults: header, read and write
// timeouts, idle timeout, header size; TestServerLimits holds them equal)
// and one-write connections (internal/onewrite; serve it on an
// onewrite.Listener). With a read timeout beside the header's, net/http
// sets a connection's read deadline twice per request, as it does for
// listingproxy.
func Server(h http.Handler) *http.Server {
	return &http.Server{
		Handler:           onewrite.Handler(h),
		ConnContext:       onewrite.ConnContext,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       15 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    16 << 10,
	}
}
