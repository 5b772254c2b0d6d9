package crm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"listingproxy/normalize"
	"listingproxy/wire"
)

// TestHostileAnswers: answers built to cost memory or time end with a
// specific failure, within the limits given, without the caller's deadline.
func TestHostileAnswers(t *testing.T) {
	type handler = func(w http.ResponseWriter, r *http.Request, user string)
	xmlBody := func(parts ...string) handler {
		return func(w http.ResponseWriter, r *http.Request, user string) { writeXML(w, strings.Join(parts, "")) }
	}
	tests := []struct {
		name    string
		handle  handler
		opts    Options
		get     bool // GetProperty 1 rather than a short list
		limit   string
		want    error
		wantMsg string
	}{
		{
			name:   "many tiny unknown elements",
			handle: xmlBody(`<properties><property id="1">`, strings.Repeat("<x/>", 1000), `</property></properties>`),
			opts:   Options{MaxElements: 500}, want: errTooManyElements, wantMsg: "answer has too many elements: more than 500",
		},
		{
			name:   "many tiny records",
			handle: xmlBody(`<properties>`, strings.Repeat(`<property id="1"/>`, 1000), `</properties>`),
			opts:   Options{MaxElements: 500}, want: errTooManyElements,
		},
		{
			name:   "many photos",
			handle: xmlBody(`<properties><property id="1"><photos>`, strings.Repeat(`<photo/>`, 1000), `</photos></property></properties>`),
			opts:   Options{MaxElements: 500}, want: errTooManyElements,
		},
		{
			name:   "deep nesting in a skipped element",
			handle: xmlBody(`<properties>`, strings.Repeat("<x>", 100), strings.Repeat("</x>", 100), `</properties>`),
			opts:   Options{MaxDepth: 10}, want: errTooDeep, wantMsg: "answer nests too deep: more than 10 levels",
		},
		{
			name:   "deep nesting of known elements",
			handle: xmlBody(strings.Repeat("<property>", 100), strings.Repeat("</property>", 100)),
			get:    true, want: errTooDeep, wantMsg: "more than 64 levels",
		},
		{
			name:   "elements after the root count",
			handle: xmlBody(`<properties/>`, strings.Repeat("<x/>", 1000)),
			opts:   Options{MaxElements: 500}, want: errTooManyElements,
		},
		{
			name: "Content-Length over the cap is refused before the body",
			opts: Options{MaxBodyBytes: 1 << 20},
			handle: func(w http.ResponseWriter, r *http.Request, user string) {
				w.Header().Set("Content-Type", "application/xml")
				w.Header().Set("Content-Length", "1073741824")
				w.WriteHeader(http.StatusOK)
				w.(http.Flusher).Flush()
				<-r.Context().Done() // the body never comes: only the header can refuse it
			},
			want: errTooLarge, wantMsg: "body exceeds the size limit of 1048576 bytes (Content-Length 1073741824)",
		},
		{
			name: "chunked body over the cap",
			opts: Options{MaxBodyBytes: 1 << 20},
			handle: func(w http.ResponseWriter, r *http.Request, user string) {
				w.Header().Set("Content-Type", "application/xml")
				fmt.Fprint(w, `<properties>`)
				chunk := []byte(strings.Repeat(`<property id="1"/>`, 1000))
				for {
					if _, err := w.Write(chunk); err != nil {
						return
					}
					select {
					case <-r.Context().Done():
						return
					default:
					}
				}
			},
			want: errTooLarge, wantMsg: "body exceeds the size limit of 1048576 bytes",
		},
		{
			name:   "one huge text over the cap",
			opts:   Options{MaxBodyBytes: 1 << 20},
			handle: xmlBody(`<property id="1"><description>`, strings.Repeat("x", 2<<20), `</description></property>`),
			get:    true, want: errTooLarge,
		},
		{
			name:   "garbage after the root",
			handle: xmlBody(`<properties></properties><property id="x"/>`, "<"),
			want:   errMalformed,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeCRM(t, tc.handle)
			tc.opts.Timeout = time.Minute // a failure by timeout would be a wrong answer
			c := newTestClient(t, f, tc.opts)
			var err error
			if tc.get {
				_, err = c.GetProperty(t.Context(), harbourAU, 1)
			} else {
				var q url.Values
				if tc.limit != "" {
					q = url.Values{"limit": {tc.limit}}
				}
				_, err = c.listProperties(t.Context(), harbourAU, q, normalize.Short, "k")
			}
			checkFailure(t, err, tc.want, tc.wantMsg)
		})
	}
}

// TestUnknownElementsAreSkipped: padding a record with elements the parser
// does not read changes nothing in the model.
func TestUnknownElementsAreSkipped(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("testdata", "property_17.xml"))
	if err != nil {
		t.Fatal(err)
	}
	padded := bytes.Replace(doc, []byte("<description>"),
		[]byte("<junk a='1'><property id='99'/><deeper><photo/></deeper></junk>"+strings.Repeat("<x/>", 100)+"<description>"), 1)
	if bytes.Equal(padded, doc) {
		t.Fatal("property_17.xml has no <description>")
	}
	get := func(body []byte) any {
		f := newFakeCRM(t, func(w http.ResponseWriter, r *http.Request, user string) { writeXML(w, string(body)) })
		p, err := newTestClient(t, f, Options{}).GetProperty(t.Context(), harbourAU, 17)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	if diff := cmp.Diff(get(doc), get(padded)); diff != "" {
		t.Errorf("padded document parsed differently (-plain +padded):\n%s", diff)
	}
}

// TestBoundedReaderNeverReadsPastTheCap: the source is read at most one
// byte past the cap, whatever the buffer sizes asked.
func TestBoundedReaderNeverReadsPastTheCap(t *testing.T) {
	src := &countingReader{}
	b := &boundedReader{ctx: t.Context(), r: src, max: 1000}
	n, err := io.Copy(io.Discard, b)
	if !errors.Is(err, errTooLarge) {
		t.Errorf("err = %v, want errTooLarge", err)
	}
	if src.n != 1001 || n != 1001 {
		t.Errorf("read %d bytes from the source, copied %d, want 1001 (the cap + 1)", src.n, n)
	}
}

// countingReader is an endless stream of spaces that counts what it gives.
type countingReader struct{ n int64 }

func (c *countingReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = ' '
	}
	c.n += int64(len(p))
	return len(p), nil
}

// TestDecoderStopsAtItsDeadline: a decoder working through a buffered body
// stops within checkEvery tokens of its context ending, with the context's
// error, even while its reader has data.
func TestDecoderStopsAtItsDeadline(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	body := "<properties>" + strings.Repeat("<x/>", 100_000) + "</properties>"
	d := newBoundedDecoder(ctx, strings.NewReader(body), limits{maxBytes: 1 << 30, maxElements: 1 << 30, maxDepth: 64}, nil)
	if _, err := d.Token(); err != nil {
		t.Fatal(err)
	}
	cancel()
	var err error
	n := 0
	for ; err == nil; n++ {
		_, err = d.Token()
	}
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
	if n > checkEvery {
		t.Errorf("%d tokens read after the context ended, want at most %d", n, checkEvery)
	}
}

// TestDecodeHoldsTheSlot: the body is decoded while the call holds its
// concurrency slot, so MaxConcurrency bounds parsing too.
func TestDecodeHoldsTheSlot(t *testing.T) {
	f := newFakeCRM(t, serveFile(t, "property_17.xml"))
	c := newTestClient(t, f, Options{MaxConcurrency: 1})
	held := -1
	err := c.call(t.Context(), harbourAU, nil, []string{"properties", "17.xml"}, func(d *boundedDecoder) error {
		held = int(c.inFlight.Load())
		_, err := wire.ReadProperty(d, sydney, wire.ReadOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if held != 1 {
		t.Errorf("slots held while decoding = %d, want 1", held)
	}
	if c.inFlight.Load() != 0 {
		t.Errorf("slots held after the call = %d, want 0", c.inFlight.Load())
	}
}

// TestDeadlineDuringDecode: a body that keeps coming ends at the call's
// Timeout as an upstream timeout, and at the caller's deadline as the
// caller's error.
func TestDeadlineDuringDecode(t *testing.T) {
	endless := func(w http.ResponseWriter, r *http.Request, user string) {
		w.Header().Set("Content-Type", "application/xml")
		fmt.Fprint(w, `<properties>`)
		chunk := []byte(strings.Repeat(`<x/>`, 1000))
		for {
			if _, err := w.Write(chunk); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
				return
			case <-time.After(time.Millisecond):
			}
		}
	}
	t.Run("Timeout", func(t *testing.T) {
		c := newTestClient(t, newFakeCRM(t, endless), Options{Timeout: 200 * time.Millisecond, MaxElements: 1 << 30})
		_, err := c.listProperties(t.Context(), harbourAU, nil, normalize.Short, "k")
		checkFailure(t, err, errTimeout, "upstream timed out after 200ms")
	})
	t.Run("caller deadline", func(t *testing.T) {
		c := newTestClient(t, newFakeCRM(t, endless), Options{Timeout: time.Minute, MaxElements: 1 << 30})
		ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
		defer cancel()
		_, err := c.listProperties(ctx, harbourAU, nil, normalize.Short, "k")
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("err = %v, want the caller's context.DeadlineExceeded", err)
		}
	})
}
