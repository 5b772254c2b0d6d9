package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
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

	"listingproxy/docdiff"
	"listingproxy/internal/legacyfixture"
)

const diffUsage = `usage: listingproxy diff -old URL -new URL [flags] [-paths FILE | -log FILE | PATHS-FILE]
       listingproxy diff [-old URL] -new URL -fixtures DIR [flags] [-paths FILE | -log FILE | PATHS-FILE]

Requests every path from the old and the new endpoint and compares the
answers: status code, content type, and the documents structurally (XML:
elements, their order, attributes and text; JSON: keys, their order, and
values). Prints the first differences of each path that differs and a
summary line, and exits 1 when any path differs or fails.

With -fixtures DIR (a corpus of recorded legacy answers, DIR/au/properties.xml
answering /au/properties.xml), the paths are the files under DIR unless
-paths or -log give them, and without -old each file is the old answer
(status 200; its content type is not compared; a path's query is ignored
to find its file, as the stand-in legacy-crm -fixtures does).

Passwords may come from the environment instead of flags:
LISTINGPROXY_DIFF_PASSWORD (both), LISTINGPROXY_DIFF_OLD_PASSWORD,
LISTINGPROXY_DIFF_NEW_PASSWORD.

Flags:
`

// diffSide is one endpoint of a comparison: a base URL, or a directory of
// recorded answers (fixtures).
type diffSide struct {
	base           *url.URL
	user, password string
	fixtures       string
}

// diffResult is the comparison of one path.
type diffResult struct {
	path  string
	diffs []docdiff.Difference
	err   error // a request failed
}

// diffCommand compares an old and a new endpoint path by path; see
// diffUsage.
func diffCommand(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("listingproxy diff", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, diffUsage)
		fs.PrintDefaults()
	}
	oldURL := fs.String("old", "", "base URL of the old endpoint, e.g. http://crm.example/api")
	newURL := fs.String("new", "", "base URL of the new endpoint, e.g. http://127.0.0.1:8080")
	user := fs.String("user", "", "Basic auth user of both endpoints")
	password := fs.String("password", "", "Basic auth password of both endpoints (or $LISTINGPROXY_DIFF_PASSWORD)")
	oldUser := fs.String("old-user", "", "user of the old endpoint (default -user)")
	oldPassword := fs.String("old-password", "", "password of the old endpoint (default -password, or $LISTINGPROXY_DIFF_OLD_PASSWORD)")
	newUser := fs.String("new-user", "", "user of the new endpoint (default -user)")
	newPassword := fs.String("new-password", "", "password of the new endpoint (default -password, or $LISTINGPROXY_DIFF_NEW_PASSWORD)")
	pathsFile := fs.String("paths", "", "file of request paths, one per line (# comments); - is stdin")
	logFile := fs.String("log", "", "access log (common or combined format) whose GET requests are compared")
	maxDiffs := fs.Int("max-diffs", 5, "differences printed per path")
	concurrency := fs.Int("concurrency", 4, "paths compared at once")
	timeout := fs.Duration("timeout", 10*time.Second, "per request")
	fixtures := fs.String("fixtures", "", "directory of recorded legacy answers: the corpus of paths, and without -old the old answers")
	ignoreCT := fs.Bool("ignore-content-type", false, "do not compare content types (a legacy endpoint that labels its XML text/html)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 1 {
		return fmt.Errorf("diff: unexpected argument %q", fs.Arg(1))
	}
	if fs.NArg() == 1 {
		if *pathsFile != "" || *logFile != "" {
			return errors.New("diff: give one of -paths, -log or a paths file")
		}
		*pathsFile = fs.Arg(0)
	}
	if *fixtures != "" {
		if st, err := os.Stat(*fixtures); err != nil || !st.IsDir() {
			return fmt.Errorf("diff: -fixtures %q: not a directory", *fixtures)
		}
	}

	var problems []string
	side := func(name, raw, u, p string) diffSide {
		base, err := url.Parse(raw)
		switch {
		case raw == "":
			problems = append(problems, "-"+name+" is required")
		case err != nil || (base.Scheme != "http" && base.Scheme != "https") || base.Host == "":
			problems = append(problems, fmt.Sprintf("-%s %q: want an http(s) base URL", name, raw))
		}
		return diffSide{base: base, user: u, password: p}
	}
	pw := cmpOr(*password, getenv("LISTINGPROXY_DIFF_PASSWORD"))
	var old diffSide
	if *oldURL != "" || *fixtures == "" {
		old = side("old", *oldURL, cmpOr(*oldUser, *user), cmpOr(*oldPassword, getenv("LISTINGPROXY_DIFF_OLD_PASSWORD"), pw))
	} else {
		old = diffSide{fixtures: *fixtures}
	}
	nw := side("new", *newURL, cmpOr(*newUser, *user), cmpOr(*newPassword, getenv("LISTINGPROXY_DIFF_NEW_PASSWORD"), pw))
	switch {
	case *pathsFile != "" && *logFile != "":
		problems = append(problems, "give one of -paths FILE, -log FILE or a paths file")
	case *pathsFile == "" && *logFile == "" && *fixtures == "":
		problems = append(problems, "give one of -paths FILE, -log FILE, a paths file or -fixtures DIR")
	}
	if *concurrency < 1 || *maxDiffs < 0 || *timeout <= 0 {
		problems = append(problems, "-concurrency and -timeout must be positive, -max-diffs not negative")
	}
	if len(problems) > 0 {
		return errors.New("diff: " + strings.Join(problems, "; "))
	}

	var paths []string
	var err error
	switch {
	case *logFile != "":
		paths, err = readInput(*logFile, stdin, pathsFromLog)
	case *pathsFile != "":
		paths, err = readInput(*pathsFile, stdin, pathsFromList)
	default:
		paths, err = legacyfixture.Paths(*fixtures)
	}
	if err != nil {
		return fmt.Errorf("diff: %w", err)
	}
	if len(paths) == 0 {
		return errors.New("diff: no paths to compare")
	}

	hc := &http.Client{
		Transport: &http.Transport{
			Proxy:               http.ProxyFromEnvironment,
			DialContext:         (&net.Dialer{Timeout: *timeout}).DialContext,
			MaxIdleConnsPerHost: *concurrency,
			IdleConnTimeout:     30 * time.Second,
		},
		Timeout: *timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse // a redirect is an answer to compare
		},
	}
	defer hc.CloseIdleConnections()

	results := compareAll(ctx, hc, old, nw, paths, *concurrency, *ignoreCT)
	differ, failed := 0, 0
	for _, r := range results {
		switch {
		case r.err != nil:
			failed++
			fmt.Fprintf(stdout, "FAIL %s\n  %v\n", r.path, r.err)
		case len(r.diffs) > 0:
			differ++
			fmt.Fprintf(stdout, "DIFF %s (%d)\n", r.path, len(r.diffs))
			for i, d := range r.diffs {
				if i == *maxDiffs {
					fmt.Fprintf(stdout, "  ... %d more\n", len(r.diffs)-i)
					break
				}
				fmt.Fprintf(stdout, "  %s\n", d)
			}
		}
	}
	fmt.Fprintf(stdout, "%d paths, %d differ, %d failed\n", len(results), differ, failed)
	if differ > 0 || failed > 0 {
		return fmt.Errorf("diff: %d of %d paths differ, %d failed", differ, len(results), failed)
	}
	return nil
}

func cmpOr(vals ...string) string {
	for _, v := range vals {
		if v != "" {
			return v
		}
	}
	return ""
}

// compareAll compares every path, at most concurrency at once, and returns
// the results in the order of paths.
func compareAll(ctx context.Context, hc *http.Client, old, nw diffSide, paths []string, concurrency int, ignoreCT bool) []diffResult {
	results := make([]diffResult, len(paths))
	sem := make(chan struct{}, concurrency)
	var wg sync.WaitGroup
	for i, p := range paths {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			results[i] = comparePath(ctx, hc, old, nw, p, ignoreCT)
		})
	}
	wg.Wait()
	return results
}

// answer is one endpoint's response to a path.
type answer struct {
	status      int
	contentType string
	body        []byte
}

func comparePath(ctx context.Context, hc *http.Client, old, nw diffSide, path string, ignoreCT bool) diffResult {
	res := diffResult{path: path}
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

func sideErr(side string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: %w", side, err)
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

func fetchAnswer(ctx context.Context, hc *http.Client, s diffSide, path string) (answer, error) {
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
