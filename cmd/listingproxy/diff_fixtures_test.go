package main

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/crypto/bcrypt"

	"listingproxy/internal/legacyfixture"
)

// fixtureDir is the corpus of hand-written legacy answers the stand-in
// serves with -fixtures (decimals, server-local times, unknown elements,
// mixed content, a comment, tabs, the legacy's not-found message).
const fixtureDir = "../legacy-crm/testdata/fixtures"

// startFixtureFront starts the stand-in's fixture handler on dir (as
// legacy-crm -fixtures DIR serves it, text/html as PHP labels it) and the
// service (run) in front of it, as a team validating the switch would run
// them, and returns both base URLs. Users: harbour (full, prices, as the
// upstream user) and noprice (full).
func startFixtureFront(t *testing.T, dir string) (legacy, front string) {
	t.Helper()
	crm := httptest.NewServer(legacyfixture.Handler(dir, "text/html; charset=UTF-8", http.NotFoundHandler()))
	t.Cleanup(crm.Close)
	hash, err := bcrypt.GenerateFromPassword([]byte("pw"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	cfg := `listen: "127.0.0.1:0"
admin_listen: "127.0.0.1:0"
countries: [au]
backends:
  legacy: {kind: crm, url: "` + crm.URL + `", hydrate: never}
tenants:
  harbour: {backend: legacy, upstream_username: u, upstream_password: p}
users:
  - {username: harbour, password_bcrypt: "` + string(hash) + `", tenant: harbour, permissions: [full, prices]}
  - {username: noprice, password_bcrypt: "` + string(hash) + `", tenant: harbour, permissions: [full]}
`
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	front, _ = startRun(t, path)
	return crm.URL, front
}

// TestDiffFixtureCorpus runs listingproxy diff over the fixture corpus: the
// stand-in (legacy-crm -fixtures) against listingproxy in front of it, for
// a caller with the upstream user's permissions: 0 differences, by
// structure and by text, whether the old answers come from the stand-in
// (-old URL) or straight from the recorded files (no -old). Without
// -ignore-content-type the legacy's text/html label is reported.
func TestDiffFixtureCorpus(t *testing.T) {
	legacy, front := startFixtureFront(t, fixtureDir)
	paths, err := legacyfixture.Paths(fixtureDir)
	if err != nil || len(paths) < 4 {
		t.Fatalf("fixture paths %v, %v: want the corpus", paths, err)
	}

	out, err := runDiff(t, nil, "-old", legacy, "-new", front, "-new-user", "harbour", "-new-password", "pw",
		"-fixtures", fixtureDir, "-ignore-content-type")
	if err != nil || out != "4 paths, 0 differ, 0 failed\n" {
		t.Errorf("diff stand-in vs listingproxy: %v\n%s", err, out)
	}
	out, err = runDiff(t, nil, "-new", front, "-new-user", "harbour", "-new-password", "pw", "-fixtures", fixtureDir)
	if err != nil || out != "4 paths, 0 differ, 0 failed\n" {
		t.Errorf("diff recorded corpus vs listingproxy: %v\n%s", err, out)
	}
	// Requests with a query: the recorded file of the path answers.
	list := writePaths(t, "/au/properties.xml?detail=full&limit=10", "/au/properties/3301.xml")
	out, err = runDiff(t, nil, "-new", front, "-new-user", "harbour", "-new-password", "pw", "-fixtures", fixtureDir, "-paths", list)
	if err != nil || out != "2 paths, 0 differ, 0 failed\n" {
		t.Errorf("diff -fixtures -paths: %v\n%s", err, out)
	}

	out, err = runDiff(t, nil, "-old", legacy, "-new", front, "-new-user", "harbour", "-new-password", "pw", "-fixtures", fixtureDir)
	if err == nil || !strings.Contains(out, `(content-type): content-type differs: old "text/html; charset=UTF-8", new "application/xml; charset=utf-8"`) {
		t.Errorf("diff without -ignore-content-type: %v\n%s\nwant the content types reported", err, out)
	}
}

// TestDiffFixturePlanted plants differences in a copy of the recorded
// corpus (what a team recorded from its legacy endpoint) while listingproxy
// fronts the original: diff reports each with its location and both texts,
// and exits non-zero. A caller narrower than the upstream user (no prices)
// is reported as missing the raw price.
func TestDiffFixturePlanted(t *testing.T) {
	_, front := startFixtureFront(t, fixtureDir)
	recorded := t.TempDir()
	for _, p := range []string{"/au/properties.xml", "/au/properties/3301.xml", "/au/agents/51.xml", "/au/properties/9998.xml"} {
		b, ok := legacyfixture.Read(fixtureDir, p)
		if !ok {
			t.Fatalf("no fixture %s", p)
		}
		switch p {
		case "/au/properties/3301.xml":
			b = []byte(strings.Replace(string(b), "<floor_size>320.0</floor_size>", "<floor_size>320</floor_size>", 1))
		case "/au/properties/9998.xml":
			b = []byte(strings.Replace(string(b), "no longer available", "withdrawn", 1))
		}
		dst := filepath.Join(recorded, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}

	out, err := runDiff(t, nil, "-new", front, "-new-user", "harbour", "-new-password", "pw", "-fixtures", recorded)
	if err == nil || !strings.Contains(err.Error(), "2 of 4 paths differ") {
		t.Errorf("err = %v, want 2 of 4 paths differ", err)
	}
	for _, want := range []string{
		"DIFF /au/properties/3301.xml (1)\n  /property/floor_size: text differs: old \"320\", new \"320.0\"\n",
		"DIFF /au/properties/9998.xml (1)\n  /error: text differs: old \"Listing 9998 is withdrawn\", new \"Listing 9998 is no longer available\"\n",
		"4 paths, 2 differ, 0 failed\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}

	out, err = runDiff(t, nil, "-new", front, "-new-user", "noprice", "-new-password", "pw", "-fixtures", fixtureDir,
		"-paths", writePaths(t, "/au/properties/3301.xml"))
	if err == nil || !strings.Contains(out, "/property/price_from: missing in new (old: <price_from>)") {
		t.Errorf("noprice caller: %v\n%s\nwant price_from reported missing", err, out)
	}
}

// TestDiffClassCorpus runs listingproxy diff over the corpus of legacy
// document classes (internal/legacyfixture/testdata/classes: other
// charsets, UTF-16, XML 1.1, namespaces, repeated and omitted elements):
// the recorded documents against listingproxy in front of them, 0
// differences, whatever their encoding.
func TestDiffClassCorpus(t *testing.T) {
	const dir = "../../internal/legacyfixture/testdata/classes"
	_, front := startFixtureFront(t, dir)
	paths, err := legacyfixture.Paths(dir)
	if err != nil || len(paths) < 10 {
		t.Fatalf("class paths %v, %v", paths, err)
	}
	out, err := runDiff(t, nil, "-new", front, "-new-user", "harbour", "-new-password", "pw", "-fixtures", dir)
	if want := strconv.Itoa(len(paths)) + " paths, 0 differ, 0 failed\n"; err != nil || out != want {
		t.Errorf("diff: %v\n%s\nwant %q", err, out, want)
	}
}
