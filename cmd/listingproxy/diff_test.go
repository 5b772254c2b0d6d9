package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// diffPaths is a small corpus over the demo: lists, single resources, errors
// and not found, in both formats.
var diffPaths = []string{
	"/au/properties.xml?limit=3",
	"/au/properties.json?limit=3&detail=full",
	"/au/properties/1.xml",
	"/au/properties/1.json",
	"/au/agents.xml?limit=2&detail=full",
	"/au/agents/1.json",
	"/au/properties.xml?approved_from=2024-01-01",
	"/au/properties/999999.json",
}

func writePaths(t *testing.T, lines ...string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "paths.txt")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func runDiff(t *testing.T, env map[string]string, args ...string) (string, error) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), append([]string{"listingproxy", "diff"}, args...), func(k string) string { return env[k] }, nil, &stdout, &stderr)
	if stderr.Len() > 0 {
		t.Logf("stderr: %s", stderr.String())
	}
	return stdout.String(), err
}

// modify serves h with some answers changed, as a migration gone wrong
// would: a text, a JSON key order, a status and an element.
func modify(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Header.Del("Accept-Encoding") // edit the identity body
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		body := rec.Body.String()
		status := rec.Code
		switch r.URL.Path {
		case "/au/properties.xml":
			body = strings.ReplaceAll(body, "<status>", "<status>X")
			body = strings.Replace(body, "<photos ", "<photo_count>1</photo_count><photos ", 1)
		case "/au/properties/1.json":
			body = strings.Replace(body, `{"property":{"id":"1","agency_id":`, `{"property":{"agency_id":`, 1)
			body = strings.Replace(body, `"last_updated"`, `"id":"1","last_updated"`, 1)
		case "/au/agents/1.json":
			status = http.StatusServiceUnavailable
		}
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.Header().Del("Content-Length")
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
	})
}

func TestDiffDemoAgainstItself(t *testing.T) {
	a := newDemoApp(t)
	oldSrv := httptest.NewServer(a.handler)
	defer oldSrv.Close()
	newSrv := httptest.NewServer(a.handler)
	defer newSrv.Close()

	out, err := runDiff(t, map[string]string{"LISTINGPROXY_DIFF_PASSWORD": "harbour-demo"},
		"-old", oldSrv.URL, "-new", newSrv.URL, "-user", "harbour", writePaths(t, append([]string{"# demo corpus", ""}, diffPaths...)...))
	if err != nil {
		t.Fatalf("diff of identical endpoints: %v\n%s", err, out)
	}
	if want := "8 paths, 0 differ, 0 failed\n"; out != want {
		t.Errorf("output = %q, want %q", out, want)
	}
}

func TestDiffDemoModified(t *testing.T) {
	a := newDemoApp(t)
	oldSrv := httptest.NewServer(a.handler)
	defer oldSrv.Close()
	newSrv := httptest.NewServer(modify(a.handler))
	defer newSrv.Close()

	out, err := runDiff(t, nil, "-old", oldSrv.URL, "-new", newSrv.URL, "-user", "harbour", "-password", "harbour-demo",
		"-max-diffs", "2", "-paths", writePaths(t, diffPaths...))
	if err == nil || !strings.Contains(err.Error(), "3 of 8 paths differ") {
		t.Errorf("err = %v, want 3 of 8 paths differ", err)
	}
	for _, want := range []string{
		"DIFF /au/properties.xml?limit=3 (4)\n" +
			"  /properties/property[1]/status: text differs: old \"CURRENT\", new \"XCURRENT\"\n" +
			"  /properties/property[1]/photo_count: extra in new (new: <photo_count>)\n" +
			"  ... 2 more\n",
		"DIFF /au/properties/1.json (1)\n  /property: order differs: old keys from 1: id,agency_id,last_updated,approved,..., new keys from 1: agency_id,id,last_updated,approved,...\n",
		"DIFF /au/agents/1.json (1)\n  (status): status differs: old 200, new 503\n",
		"8 paths, 3 differ, 0 failed\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestDiffFailures(t *testing.T) {
	a := newDemoApp(t)
	oldSrv := httptest.NewServer(a.handler)
	defer oldSrv.Close()
	gone := httptest.NewServer(a.handler)
	gone.Close()

	out, err := runDiff(t, nil, "-old", oldSrv.URL, "-new", gone.URL, "-user", "harbour", "-password", "harbour-demo",
		"-paths", writePaths(t, "/au/properties/1.xml"))
	if err == nil || !strings.Contains(out, "FAIL /au/properties/1.xml\n  new: ") || !strings.Contains(out, "1 paths, 0 differ, 1 failed") {
		t.Errorf("err = %v, output:\n%s\nwant one failed path", err, out)
	}

	// Different credentials per side: the wrong one is a status difference.
	out, err = runDiff(t, map[string]string{"LISTINGPROXY_DIFF_NEW_PASSWORD": "wrong"},
		"-old", oldSrv.URL, "-new", oldSrv.URL, "-old-user", "harbour", "-old-password", "harbour-demo", "-new-user", "harbour",
		"-paths", writePaths(t, "/au/properties/1.xml"))
	if err == nil || !strings.Contains(out, "(status): status differs: old 200, new 401") {
		t.Errorf("err = %v, output:\n%s\nwant a 200/401 status difference", err, out)
	}
}

func TestDiffAccessLog(t *testing.T) {
	const log = `127.0.0.1 - harbour [21/Nov/2026:10:00:00 +0000] "GET /au/properties.xml?limit=3 HTTP/1.1" 200 512
10.0.0.2 - - [21/Nov/2026:10:00:01 +0000] "GET /au/properties/1.json HTTP/1.1" 200 900 "-" "curl/8.0"
10.0.0.2 - - [21/Nov/2026:10:00:02 +0000] "POST /au/properties.xml HTTP/1.1" 405 80 "-" "curl/8.0"
10.0.0.3 - - [21/Nov/2026:10:00:03 +0000] "GET /au/properties.xml?limit=3 HTTP/2.0" 200 512 "-" "Mozilla/5.0"
garbage line
10.0.0.4 - - [21/Nov/2026:10:00:04 +0000] "GET http://listings.example/au/agents/1.xml HTTP/1.1" 200 300
`
	a := newDemoApp(t)
	srv := httptest.NewServer(a.handler)
	defer srv.Close()
	logPath := filepath.Join(t.TempDir(), "access.log")
	if err := os.WriteFile(logPath, []byte(log), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := runDiff(t, nil, "-old", srv.URL, "-new", srv.URL+"/", "-user", "harbour", "-password", "harbour-demo", "-log", logPath)
	if err != nil || out != "3 paths, 0 differ, 0 failed\n" {
		t.Errorf("diff -log: %v\n%s", err, out)
	}
}

func TestDiffFlagErrors(t *testing.T) {
	paths := writePaths(t, "/au/agents.xml")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-new", "http://h", paths}, "-old is required"},
		{[]string{"-old", "ftp://h", "-new", "http://h", paths}, `-old "ftp://h": want an http(s) base URL`},
		{[]string{"-old", "http://h", "-new", "http://h"}, "give one of -paths FILE, -log FILE, a paths file or -fixtures DIR"},
		{[]string{"-old", "http://h", "-new", "http://h", "-paths", paths, "-log", paths}, "give one of"},
		{[]string{"-old", "http://h", "-new", "http://h", "-concurrency", "0", paths}, "-concurrency"},
		{[]string{"-old", "http://h", "-new", "http://h", "-paths", filepath.Join(t.TempDir(), "none")}, "no such file"},
		{[]string{"-old", "http://h", "-new", "http://h", writePaths(t, "# nothing")}, "no paths to compare"},
	} {
		_, err := runDiff(t, nil, tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("diff %v: err = %v, want one containing %q", tc.args, err, tc.want)
		}
	}
}
