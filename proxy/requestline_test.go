package proxy_test

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"listingproxy/proxy"
)

// startServer serves h on a real listener configured as cmd/listingproxy
// configures the public server (net/http's own OPTIONS * answer disabled).
func startServer(t *testing.T, h http.Handler) *httptest.Server {
	t.Helper()
	ts := httptest.NewUnstartedServer(h)
	ts.Config.DisableGeneralOptionsHandler = true
	ts.Start()
	t.Cleanup(ts.Close)
	return ts
}

// rawResponse is what came back for a raw request.
type rawResponse struct {
	Status int
	Header map[string]string // the headers the test looks at
	Body   string
}

// sendRaw writes one request with the given request line over a new
// connection and reads the answer, so that request targets that an
// http.Client would never send ("*", authority and absolute forms,
// uncleaned paths) reach the server as written.
func sendRaw(t *testing.T, addr, method, target, user string) rawResponse {
	t.Helper()
	resp, body := exchangeRaw(t, addr, method, target, user)
	got := rawResponse{Status: resp.StatusCode, Body: body, Header: map[string]string{}}
	for _, k := range []string{"Content-Type", "Allow", "Location", "WWW-Authenticate", "Cache-Control"} {
		if v := resp.Header.Get(k); v != "" {
			got.Header[k] = v
		}
	}
	return got
}

// exchangeRaw is sendRaw's exchange: the whole response and its body.
func exchangeRaw(t *testing.T, addr, method, target, user string) (*http.Response, string) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	req := method + " " + target + " HTTP/1.1\r\nHost: listings.example\r\nConnection: close\r\n"
	if user != "" {
		req += "Authorization: " + basic(user) + "\r\n"
	}
	if _, err := io.WriteString(conn, req+"\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), &http.Request{Method: method})
	if err != nil {
		t.Fatalf("%s %s: reading the response: %v", method, target, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(b)
}

// TestEveryRequestLineGetsOurAnswer sends request lines that net/http's
// ServeMux would answer itself (a 307 to the cleaned path with an HTML body,
// an empty 400 for "*", a text/plain 404 for CONNECT) and checks that each
// gets the spec's single-error body in the path's format, with a fitting
// status, whether or not the request carries credentials: these answers
// depend on the request line alone and come before authentication.
func TestEveryRequestLineGetsOurAnswer(t *testing.T) {
	ts := startServer(t, newServer(t, newFake(), proxy.Options{}))
	addr := ts.Listener.Addr().String()

	const (
		xmlType  = "application/xml; charset=utf-8"
		jsonType = "application/json; charset=utf-8"
	)
	xmlErr := func(msg string) string { return xmlHeader + "<error>" + msg + "</error>\n" }
	jsonErr := func(msg string) string { return `{"error":"` + strings.ReplaceAll(msg, `"`, `\"`) + `"}` + "\n" }
	const (
		badPath   = `Bad request: the path must not contain empty, "." or ".." segments`
		badTarget = "Bad request: the request target must be a path, such as /au/properties.xml"
		method    = "Method not allowed: use GET or HEAD"
		notFound  = "Not found"
		noAuth    = "Authentication required: a valid username and password are needed"
	)
	xml := func(status int, msg string, hdr ...string) rawResponse {
		r := rawResponse{Status: status, Body: xmlErr(msg), Header: map[string]string{"Content-Type": xmlType, "Cache-Control": "private, no-store"}}
		for i := 0; i+1 < len(hdr); i += 2 {
			r.Header[hdr[i]] = hdr[i+1]
		}
		return r
	}
	json := func(status int, msg string, hdr ...string) rawResponse {
		r := xml(status, msg, hdr...)
		r.Body, r.Header["Content-Type"] = jsonErr(msg), jsonType
		return r
	}
	allow := []string{"Allow", "GET, HEAD"}
	challenge := []string{"WWW-Authenticate", `Basic realm="listings", charset="UTF-8"`}

	tests := []struct {
		name, method, target string
		want                 rawResponse // the same with and without credentials, unless wantAuthed is set
		wantAuthed           *rawResponse
	}{
		{name: "double slash", method: "GET", target: "//au/properties.xml", want: xml(400, badPath)},
		{name: "double slash json", method: "GET", target: "//au/properties.json", want: json(400, badPath)},
		{name: "inner double slash", method: "GET", target: "/au//properties/1.json", want: json(400, badPath)},
		{name: "dot dot", method: "GET", target: "/../au/properties.xml", want: xml(400, badPath)},
		{name: "inner dot dot", method: "GET", target: "/au/x/../properties.json", want: json(400, badPath)},
		{name: "escaped dot dot", method: "GET", target: "/%2e%2e/au/properties.json", want: json(400, badPath)},
		{name: "dot", method: "GET", target: "/au/./properties.xml", want: xml(400, badPath)},
		{name: "trailing dot dot", method: "GET", target: "/au/properties.json/..", want: xml(400, badPath)},
		{name: "unclean path, other method", method: "POST", target: "//au/properties.xml", want: xml(400, badPath)},
		{name: "asterisk", method: "GET", target: "*", want: xml(400, badTarget)},
		{name: "OPTIONS asterisk", method: "OPTIONS", target: "*", want: xml(400, badTarget)},
		{name: "CONNECT authority", method: "CONNECT", target: "listings.example:443", want: xml(405, method, allow...)},
		{name: "CONNECT path", method: "CONNECT", target: "/au/properties.json", want: json(405, method, allow...)},
		{name: "OPTIONS unknown path", method: "OPTIONS", target: "/x", want: xml(404, notFound)},
		{name: "OPTIONS api path", method: "OPTIONS", target: "/au/properties.json", want: json(405, method, allow...)},
		{name: "root", method: "GET", target: "/", want: xml(404, notFound)},
		{name: "trailing slash", method: "GET", target: "/au/properties.xml/", want: xml(404, notFound)},
		{name: "absolute URI, no path", method: "GET", target: "http://listings.example", want: xml(404, notFound)},
		{name: "absolute URI, unclean path", method: "GET", target: "http://listings.example//au/properties.json", want: json(400, badPath)},
		{
			// RFC 9112 §3.2.2: a server must accept the absolute form; it
			// is the same request as its origin form.
			name: "absolute URI", method: "GET", target: "http://listings.example/au/agents.xml",
			want:       xml(401, noAuth, challenge...),
			wantAuthed: &rawResponse{Status: 200, Header: map[string]string{"Content-Type": xmlType}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, user := range []string{"", "harbour"} {
				want := tt.want
				if user != "" && tt.wantAuthed != nil {
					want = *tt.wantAuthed
				}
				got := sendRaw(t, addr, tt.method, tt.target, user)
				if want.Body == "" {
					got.Body = "" // a 200's body is the endpoint's business
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("%s %s as %q (-want +got):\n%s", tt.method, tt.target, user, diff)
				}
			}
		})
	}
}
