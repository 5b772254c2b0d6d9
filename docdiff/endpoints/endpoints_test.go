package endpoints

import (
	"net/url"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestPathsFromLog(t *testing.T) {
	const log = `127.0.0.1 - harbour [21/Nov/2026:10:00:00 +0000] "GET /au/properties.xml?limit=3 HTTP/1.1" 200 512
10.0.0.2 - - [21/Nov/2026:10:00:01 +0000] "GET /au/properties/1.json HTTP/1.1" 200 900 "-" "curl/8.0"
10.0.0.2 - - [21/Nov/2026:10:00:02 +0000] "POST /au/properties.xml HTTP/1.1" 405 80 "-" "curl/8.0"
10.0.0.3 - - [21/Nov/2026:10:00:03 +0000] "GET /au/properties.xml?limit=3 HTTP/2.0" 200 512 "-" "Mozilla/5.0"
garbage line
10.0.0.4 - - [21/Nov/2026:10:00:04 +0000] "GET http://listings.example/au/agents/1.xml HTTP/1.1" 200 300
`
	got, err := pathsFromLog(strings.NewReader(log))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"/au/properties.xml?limit=3", "/au/properties/1.json", "/au/agents/1.xml"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("pathsFromLog mismatch (-want +got):\n%s", diff)
	}
}

func TestPathsFromList(t *testing.T) {
	got, err := pathsFromList(strings.NewReader("# comment\n\n  /au/agents.xml?limit=2  \nhttps://h.example/base/au/agents/1.xml?x=1\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"/au/agents.xml?limit=2", "/base/au/agents/1.xml?x=1"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("pathsFromList mismatch (-want +got):\n%s", diff)
	}
	if _, err := pathsFromList(strings.NewReader("au/agents.xml\n")); err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Errorf("relative path: err = %v, want one naming line 1", err)
	}
}

func TestJoinPath(t *testing.T) {
	for _, tc := range []struct{ base, path, want string }{
		{"http://h:9000", "/au/agents.xml?limit=2", "http://h:9000/au/agents.xml?limit=2"},
		{"http://h/api/", "/au/agents.xml", "http://h/api/au/agents.xml"},
		{"https://h/api?x=1", "/au/properties.xml?status[]=sold&geo[lat]=1", "https://h/api/au/properties.xml?status[]=sold&geo[lat]=1"},
	} {
		u, err := url.Parse(tc.base)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := joinPath(u, tc.path); err != nil || got != tc.want {
			t.Errorf("joinPath(%q, %q) = %q, %v; want %q", tc.base, tc.path, got, err, tc.want)
		}
	}
}
