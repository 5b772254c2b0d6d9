package crm

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakeCRM is an httptest legacy endpoint. It checks HTTP Basic credentials
// against users, counts calls per path and tracks the most requests in flight
// at once, then hands the request to handle.
type fakeCRM struct {
	t      *testing.T
	users  map[string]string // username → password
	handle func(w http.ResponseWriter, r *http.Request, user string)
	srv    *httptest.Server

	mu          sync.Mutex
	calls       map[string]int // by path
	queries     []string       // raw queries, in arrival order
	inFlight    atomic.Int64
	maxInFlight atomic.Int64
	handlers    atomic.Int64 // running handlers
}

func newFakeCRM(t *testing.T, handle func(w http.ResponseWriter, r *http.Request, user string)) *fakeCRM {
	t.Helper()
	f := &fakeCRM{
		t:      t,
		users:  map[string]string{"harbour-crm": "s3cret", "summit-crm": "p@ss:word"},
		handle: handle,
		calls:  map[string]int{},
	}
	f.srv = httptest.NewServer(f)
	t.Cleanup(f.close)
	return f
}

func (f *fakeCRM) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.handlers.Add(1)
	defer f.handlers.Add(-1)
	n := f.inFlight.Add(1)
	defer f.inFlight.Add(-1)
	for {
		m := f.maxInFlight.Load()
		if n <= m || f.maxInFlight.CompareAndSwap(m, n) {
			break
		}
	}
	f.mu.Lock()
	f.calls[r.URL.Path]++
	f.queries = append(f.queries, r.URL.RawQuery)
	f.mu.Unlock()

	if r.Method != http.MethodGet {
		f.t.Errorf("%s %s: want GET", r.Method, r.URL)
	}
	if got := r.Header.Get("Accept"); got != "application/xml" {
		f.t.Errorf("%s: Accept = %q, want application/xml", r.URL, got)
	}
	user, pass, ok := r.BasicAuth()
	if want, known := f.users[user]; !ok || !known || pass != want {
		w.Header().Set("WWW-Authenticate", `Basic realm="crm"`)
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprint(w, `<?xml version="1.0" encoding="UTF-8"?>`+"\n<error>Unauthorized</error>\n")
		return
	}
	f.handle(w, r, user)
}

// close stops the server after every handler has returned; a handler that
// outlives the client by more than a few seconds fails the test.
func (f *fakeCRM) close() {
	for deadline := time.Now().Add(10 * time.Second); f.handlers.Load() > 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			f.t.Errorf("fake CRM: %d handlers still running 10s after the test", f.handlers.Load())
			break
		}
	}
	f.srv.CloseClientConnections()
	f.srv.Close()
}

func (f *fakeCRM) count(path string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[path]
}

func (f *fakeCRM) total() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, c := range f.calls {
		n += c
	}
	return n
}

func (f *fakeCRM) allQueries() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.queries...)
}

func (f *fakeCRM) lastQuery() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.queries) == 0 {
		return ""
	}
	return f.queries[len(f.queries)-1]
}

func writeXML(w http.ResponseWriter, body string) {
	w.Header().Set("Content-Type", "application/xml; charset=utf-8")
	fmt.Fprint(w, body)
}

// serveFixtures answers from testdata: the short or full list, one document
// per id (property_{country}_{id}.xml or property_{id}.xml), and the single
// error for anything else.
func serveFixtures(t *testing.T) func(w http.ResponseWriter, r *http.Request, user string) {
	return func(w http.ResponseWriter, r *http.Request, user string) {
		country, rest, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
		detail := r.URL.Query().Get("detail")
		var name string
		switch {
		case rest == "properties.xml":
			name = "properties_" + detail + ".xml"
		case rest == "agents.xml":
			name = "agents_" + detail + ".xml"
		case strings.HasPrefix(rest, "properties/"):
			id := strings.TrimSuffix(strings.TrimPrefix(rest, "properties/"), ".xml")
			name = "property_" + country + "_" + id + ".xml"
			if _, err := os.Stat(filepath.Join("testdata", name)); err != nil {
				name = "property_" + id + ".xml"
			}
			if _, err := os.Stat(filepath.Join("testdata", name)); err != nil {
				name = "error_property.xml"
			}
		case strings.HasPrefix(rest, "agents/"):
			name = "agent_" + strings.TrimSuffix(strings.TrimPrefix(rest, "agents/"), ".xml") + ".xml"
			if _, err := os.Stat(filepath.Join("testdata", name)); err != nil {
				name = "error_agent.xml"
			}
		default:
			http.NotFound(w, r)
			return
		}
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			t.Errorf("fixture for %s: %v", r.URL, err)
			http.Error(w, "no fixture", http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/xml")
		w.Write(b)
	}
}

// generated is a fake CRM's data set: properties by id with a last_updated
// that a test may change, and ids that are listed but whose document is gone.
type generated struct {
	mu      sync.Mutex
	ids     []int64
	updated map[int64]time.Time
	gone    map[int64]bool
	delay   time.Duration // before answering a document
}

func newGenerated(ids ...int64) *generated {
	g := &generated{ids: ids, updated: map[int64]time.Time{}, gone: map[int64]bool{}}
	for _, id := range ids {
		g.updated[id] = time.Date(2026, 11, 1, 9, 0, 0, 0, time.FixedZone("", 11*3600)).Add(time.Duration(id) * time.Minute)
	}
	return g
}

func (g *generated) touch(id int64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.updated[id] = g.updated[id].Add(time.Hour)
}

func (g *generated) property(id int64, full bool, user string) string {
	g.mu.Lock()
	lu := g.updated[id].Format("Mon Jan 02 15:04:05 -0700 2006")
	g.mu.Unlock()
	var b strings.Builder
	fmt.Fprintf(&b, "<property id=\"%d\" last_updated=\"%s\">\n", id, lu)
	fmt.Fprintf(&b, "  <agency_id>%s-%d</agency_id>\n  <address display=\"true\">%d Test Street</address>\n  <status>CURRENT</status>\n", user, id, id)
	if full {
		fmt.Fprintf(&b, "  <price>$%d</price>\n  <suburb>Suburb %d</suburb>\n", id*1000, id)
		b.WriteString("  <photos count=\"1\"><photo type=\"Normal\" caption=\"\" position=\"1\" thumbnail=\"t\">u</photo></photos>\n")
		b.WriteString("  <openhomes count=\"0\"/>\n")
	} else {
		b.WriteString("  <photos count=\"1\"/>\n")
	}
	b.WriteString("  <agents count=\"0\"/>\n</property>\n")
	return b.String()
}

// serve answers lists of every id (short or full) and one document per id;
// agency_id carries the CRM user, so a test can tell tenants' documents apart.
func (g *generated) serve(w http.ResponseWriter, r *http.Request, user string) {
	_, rest, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	if rest == "properties.xml" {
		full := r.URL.Query().Get("detail") == "full"
		var b strings.Builder
		fmt.Fprintf(&b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<properties count=\"%d\">\n", len(g.ids))
		for _, id := range g.ids {
			b.WriteString(g.property(id, full, user))
		}
		b.WriteString("</properties>\n")
		writeXML(w, b.String())
		return
	}
	var id int64
	if _, err := fmt.Sscanf(rest, "properties/%d.xml", &id); err != nil {
		http.NotFound(w, r)
		return
	}
	if g.delay > 0 {
		select {
		case <-time.After(g.delay):
		case <-r.Context().Done():
			return
		}
	}
	g.mu.Lock()
	_, known := g.updated[id]
	gone := g.gone[id]
	g.mu.Unlock()
	if !known || gone {
		writeXML(w, fmt.Sprintf("<?xml version=\"1.0\"?>\n<error>Property with ID %d not found</error>\n", id))
		return
	}
	writeXML(w, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"+g.property(id, true, user))
}
