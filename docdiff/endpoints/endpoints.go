// Package endpoints compares two endpoints of the listing API path by path
// ("listingproxy diff"): it requests every path from an old and a new
// endpoint (or reads the old answer from a corpus of recorded legacy
// answers, internal/legacyfixture), compares status codes, content types
// and the documents (package docdiff), and reports the paths that differ.
// It reads the paths from a list, an access log or the corpus itself.
//
// cmd/listingproxy parses the command's flags into Options and calls Run;
// everything the command does beyond its flags lives here. It imports
// docdiff and internal/legacyfixture, and nothing else of listingproxy.
package endpoints

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"listingproxy/docdiff"
	"listingproxy/internal/legacyfixture"
)

// Endpoint is one side of a comparison as given on the command line: a base
// URL and its Basic credentials.
type Endpoint struct {
	URL            string // base URL, e.g. http://crm.example/api
	User, Password string // Basic auth; none when both are empty
}

// Options is one comparison.
type Options struct {
	// Old is the old endpoint. Its URL may be empty when Fixtures is set:
	// each recorded file is then the old answer (status 200; its content
	// type is not compared; a path's query is ignored to find its file).
	Old Endpoint
	// New is the new endpoint; its URL is required.
	New Endpoint
	// PathsFile is a file of request paths, one per line (# comments);
	// "-" is Stdin. LogFile is an access log (common or combined format)
	// whose GET requests are compared. At most one of them is set; with
	// neither, the paths are the files under Fixtures.
	PathsFile, LogFile string
	// Fixtures is a directory of recorded legacy answers
	// (DIR/au/properties.xml answering /au/properties.xml).
	Fixtures string
	// Stdin is read when PathsFile or LogFile is "-".
	Stdin io.Reader
	// MaxDiffs is how many differences are printed per path (not
	// negative).
	MaxDiffs int
	// Concurrency is how many paths are compared at once (positive).
	Concurrency int
	// Timeout bounds each request (positive).
	Timeout time.Duration
	// IgnoreContentType does not compare content types (a legacy endpoint
	// that labels its XML text/html).
	IgnoreContentType bool
}

// side is one endpoint of a comparison: a base URL, or a directory of
// recorded answers (fixtures).
type side struct {
	base           *url.URL
	user, password string
	fixtures       string
}

// result is the comparison of one path.
type result struct {
	path  string
	diffs []docdiff.Difference
	err   error // a request failed
}

// Run compares the old and the new endpoint of o path by path, prints the
// first differences of each path that differs and a summary line to w, and
// returns an error when o is invalid, when any path differs or when any
// request fails.
func Run(ctx context.Context, o Options, w io.Writer) error {
	if o.Fixtures != "" {
		if st, err := os.Stat(o.Fixtures); err != nil || !st.IsDir() {
			return fmt.Errorf("-fixtures %q: not a directory", o.Fixtures)
		}
	}

	var problems []string
	endpoint := func(name string, e Endpoint) side {
		base, err := url.Parse(e.URL)
		switch {
		case e.URL == "":
			problems = append(problems, "-"+name+" is required")
		case err != nil || (base.Scheme != "http" && base.Scheme != "https") || base.Host == "":
			problems = append(problems, fmt.Sprintf("-%s %q: want an http(s) base URL", name, e.URL))
		}
		return side{base: base, user: e.User, password: e.Password}
	}
	var old side
	if o.Old.URL != "" || o.Fixtures == "" {
		old = endpoint("old", o.Old)
	} else {
		old = side{fixtures: o.Fixtures}
	}
	nw := endpoint("new", o.New)
	switch {
	case o.PathsFile != "" && o.LogFile != "":
		problems = append(problems, "give one of -paths FILE, -log FILE or a paths file")
	case o.PathsFile == "" && o.LogFile == "" && o.Fixtures == "":
		problems = append(problems, "give one of -paths FILE, -log FILE, a paths file or -fixtures DIR")
	}
	if o.Concurrency < 1 || o.MaxDiffs < 0 || o.Timeout <= 0 {
		problems = append(problems, "-concurrency and -timeout must be positive, -max-diffs not negative")
	}
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "; "))
	}

	var paths []string
	var err error
	switch {
	case o.LogFile != "":
		paths, err = readInput(o.LogFile, o.Stdin, pathsFromLog)
	case o.PathsFile != "":
		paths, err = readInput(o.PathsFile, o.Stdin, pathsFromList)
	default:
		paths, err = legacyfixture.Paths(o.Fixtures)
	}
	if err != nil {
		return err
	}
	if len(paths) == 0 {
		return errors.New("no paths to compare")
	}

	hc := &http.Client{
		Transport: &http.Transport{
			Proxy:               http.ProxyFromEnvironment,
			DialContext:         (&net.Dialer{Timeout: o.Timeout}).DialContext,
			MaxIdleConnsPerHost: o.Concurrency,
			IdleConnTimeout:     30 * time.Second,
		},
		Timeout: o.Timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse // a redirect is an answer to compare
		},
	}
	defer hc.CloseIdleConnections()

	results := compareAll(ctx, hc, old, nw, paths, o.Concurrency, o.IgnoreContentType)
	differ, failed := 0, 0
	for _, r := range results {
		switch {
		case r.err != nil:
			failed++
			fmt.Fprintf(w, "FAIL %s\n  %v\n", r.path, r.err)
		case len(r.diffs) > 0:
			differ++
			fmt.Fprintf(w, "DIFF %s (%d)\n", r.path, len(r.diffs))
			for i, d := range r.diffs {
				if i == o.MaxDiffs {
					fmt.Fprintf(w, "  ... %d more\n", len(r.diffs)-i)
					break
				}
				fmt.Fprintf(w, "  %s\n", d)
			}
		}
	}
	fmt.Fprintf(w, "%d paths, %d differ, %d failed\n", len(results), differ, failed)
	if differ > 0 || failed > 0 {
		return fmt.Errorf("%d of %d paths differ, %d failed", differ, len(results), failed)
	}
	return nil
}

// compareAll compares every path, at most concurrency at once, and returns
// the results in the order of paths.
func compareAll(ctx context.Context, hc *http.Client, old, nw side, paths []string, concurrency int, ignoreCT bool) []result {
	results := make([]result, len(paths))
	var g errgroup.Group
	g.SetLimit(max(concurrency, 1))
	for i, p := range paths {
		g.Go(func() error {
			results[i] = comparePath(ctx, hc, old, nw, p, ignoreCT)
			return nil
		})
	}
	_ = g.Wait() // comparePath reports its failures in its result
	return results
}

// answer is one endpoint's response to a path.
type answer struct {
	status      int
	contentType string
	body        []byte
}

func comparePath(ctx context.Context, hc *http.Client, old, nw side, path string, ignoreCT bool) result {
	res := result{path: path}
	var a, b answer
	var errA, errB error
	var wg sync.WaitGroup
	wg.Go(func() { a, errA = fetchAnswer(ctx, hc, old, path) })
	wg.Go(func() { b, errB = fetchAnswer(ctx, hc, nw, path) })
	wg.Wait()
	if err := errors.Join(sideErr("old", errA), sideErr("new", errB)); err != nil {
		res.err = err
		return res
	}
	if a.status != b.status {
		res.diffs = append(res.diffs, docdiff.Difference{Path: "(status)", Kind: "status", Old: strconv.Itoa(a.status), New: strconv.Itoa(b.status)})
	}
	if ca, cb := normalizeContentType(a.contentType), normalizeContentType(b.contentType); ca != cb && !ignoreCT && old.fixtures == "" {
		res.diffs = append(res.diffs, docdiff.Difference{Path: "(content-type)", Kind: "content-type", Old: strconv.Quote(ca), New: strconv.Quote(cb)})
	}
	format := docdiff.Detect(a.contentType, a.body)
	if format == docdiff.Unknown {
		format = docdiff.Detect(b.contentType, b.body)
	}
	res.diffs = append(res.diffs, docdiff.Compare(a.body, b.body, format)...)
	return res
}

func sideErr(name string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: %w", name, err)
}

// normalizeContentType lower-cases the media type and parameter names and
// drops insignificant spacing, so only meaningful differences show.
func normalizeContentType(ct string) string {
	mt, params, err := mime.ParseMediaType(ct)
	if err != nil {
		return strings.TrimSpace(ct)
	}
	return mime.FormatMediaType(mt, params)
}

func fetchAnswer(ctx context.Context, hc *http.Client, s side, path string) (answer, error) {
	if s.fixtures != "" {
		b, ok := legacyfixture.Read(s.fixtures, path)
		if !ok {
			return answer{}, fmt.Errorf("no recorded answer for %s under %s", path, s.fixtures)
		}
		return answer{status: http.StatusOK, body: b}, nil
	}
	u, err := joinPath(s.base, path)
	if err != nil {
		return answer{}, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return answer{}, err
	}
	if s.user != "" || s.password != "" {
		req.SetBasicAuth(s.user, s.password)
	}
	req.Header.Set("User-Agent", "listingproxy-diff")
	resp, err := hc.Do(req)
	if err != nil {
		return answer{}, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return answer{}, fmt.Errorf("reading the body of %s: %w", u, err)
	}
	return answer{status: resp.StatusCode, contentType: resp.Header.Get("Content-Type"), body: body}, nil
}

// joinPath appends a request path (with its query) to a base URL that may
// have a path of its own: base http://h/api and /au/agents.xml?limit=2 give
// http://h/api/au/agents.xml?limit=2. The path is sent as written.
func joinPath(base *url.URL, path string) (string, error) {
	p, q, _ := strings.Cut(path, "?")
	if !strings.HasPrefix(p, "/") {
		return "", fmt.Errorf("path %q: must start with /", path)
	}
	u := *base
	u.RawQuery, u.Fragment, u.RawFragment = "", "", ""
	s := strings.TrimRight(u.String(), "/") + p
	if q != "" {
		s += "?" + q
	}
	return s, nil
}

// readInput reads name ("-" for stdin) with parse.
func readInput(name string, stdin io.Reader, parse func(io.Reader) ([]string, error)) ([]string, error) {
	if name == "-" {
		return parse(stdin)
	}
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	paths, err := parse(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return paths, nil
}

// pathsFromList reads one request path per line; blank lines and lines
// starting with # are skipped. A full URL counts as its path and query.
func pathsFromList(r io.Reader) ([]string, error) {
	var out []string
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		p, err := requestPath(line)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		out = append(out, p)
	}
	return out, sc.Err()
}

func requestPath(s string) (string, error) {
	if strings.HasPrefix(s, "http://") || strings.HasPrefix(s, "https://") {
		u, err := url.Parse(s)
		if err != nil {
			return "", err
		}
		return u.RequestURI(), nil
	}
	if !strings.HasPrefix(s, "/") {
		return "", fmt.Errorf("%q: want a path starting with / or a URL", s)
	}
	return s, nil
}

// logRequest matches the request line of a common or combined log format
// entry: "GET /path?query HTTP/1.1".
var logRequest = regexp.MustCompile(`"GET (\S+) HTTP/[0-9.]+"`)

// pathsFromLog extracts the GET paths of an access log, in order of first
// appearance, each once. Lines without a GET request are skipped.
func pathsFromLog(r io.Reader) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		m := logRequest.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		p, err := requestPath(m[1])
		if err != nil || seen[p] {
			continue
		}
		seen[p] = true
		out = append(out, p)
	}
	return out, sc.Err()
}
