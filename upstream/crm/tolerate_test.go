package crm

import (
	"bytes"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"testing/iotest"

	"listingproxy/normalize"
)

// TestTolerated: flaws of one record or of the label never fail a list. A
// value that cannot be read leaves its record in the list without it, a
// well-formed answer labelled text/html is served, and a Latin-1 byte in a
// document that declares UTF-8 is read as the letter it is; each flaw is
// counted and logged.
func TestTolerated(t *testing.T) {
	const list = `<properties count="2">
  <property id="17" last_updated="Fri Nov 20 09:30:00 +1100 2026"><bedrooms>3+</bedrooms><suburb>Bondi</suburb></property>
  <property id="18" last_updated="Fri Nov 20 09:30:00 +1100 2026"><approved>2024-03-01 10:00:00</approved><suburb>Caf` + "\xe9" + ` Row</suburb></property>
</properties>`
	tests := []struct {
		name, contentType, body string
		want                    Stats
		wantLog                 []string
	}{
		{
			name: "bad values, text/html, Latin-1 in UTF-8", contentType: "text/html; charset=UTF-8",
			body:    `<?xml version="1.0" encoding="UTF-8"?>` + "\n" + list,
			want:    Stats{Calls: 1, BadValues: 1, Mislabelled: 1, Repaired: 1},
			wantLog: []string{`bedrooms \"3+\": not an integer`, `content_type="text/html; charset=UTF-8"`, "not UTF-8"},
		},
		{
			name: "declared Latin-1 is decoded, not repaired", contentType: "application/xml",
			body: `<?xml version="1.0" encoding="ISO-8859-1"?>` + "\n" + list,
			want: Stats{Calls: 1, BadValues: 1, Transcoded: 1},
		},
		{
			name: "no declaration", contentType: "",
			body: list,
			want: Stats{Calls: 1, BadValues: 1, Repaired: 1},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeCRM(t, func(w http.ResponseWriter, r *http.Request, user string) {
				if tc.contentType != "" {
					w.Header().Set("Content-Type", tc.contentType)
				} else {
					w.Header()["Content-Type"] = nil // no sniffing
				}
				w.Write([]byte(tc.body))
			})
			var logs bytes.Buffer
			c := newTestClient(t, f, Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
			props, err := c.listProperties(t.Context(), harbourAU, nil, normalize.Short, "k")
			if err != nil {
				t.Fatalf("list failed: %v", err)
			}
			if len(props) != 2 {
				t.Fatalf("got %d properties, want 2", len(props))
			}
			if props[0].Bedrooms != nil || props[0].Suburb != "Bondi" {
				t.Errorf("property 17: bedrooms %v, suburb %q; want missing, Bondi", props[0].Bedrooms, props[0].Suburb)
			}
			if got := props[1].Suburb; got != "Café Row" {
				t.Errorf("property 18 suburb %q, want %q", got, "Café Row")
			}
			if got := props[1].Approved.Format("2006-01-02"); got != "2024-03-01" {
				t.Errorf("property 18 approved %s, want 2024-03-01", got)
			}
			if got := c.Stats(); got != tc.want {
				t.Errorf("stats %+v, want %+v", got, tc.want)
			}
			for _, w := range tc.wantLog {
				if !strings.Contains(logs.String(), w) {
					t.Errorf("log lacks %q:\n%s", w, logs.String())
				}
			}
		})
	}
}

// utf16 is s in UTF-16 of the given byte order.
func utf16(s string, bigEndian bool) string {
	var b []byte
	for _, r := range s {
		if r > 0xffff {
			panic("utf16: outside the BMP")
		}
		if bigEndian {
			b = append(b, byte(r>>8), byte(r))
		} else {
			b = append(b, byte(r), byte(r>>8))
		}
	}
	return string(b)
}

// TestUTF8Repair: valid UTF-8 passes unchanged even when its sequences are
// cut between reads; stray bytes are read as Windows-1252. A document in
// another encoding it knows (a declared single-byte charset, UTF-16 with or
// without a byte order mark) is decoded, its declaration then naming
// UTF-8; XML 1.1 is declared 1.0; a byte order mark or whitespace before
// the declaration is dropped; an encoding it does not know passes
// untouched (the decoder refuses it).
func TestUTF8Repair(t *testing.T) {
	const latin1Doc = `<?xml version="1.0" encoding="latin1"?><a>Caf` + "\xe9</a>"
	for _, tc := range []struct {
		name, in, want string
		repaired       bool
		transcoded     string
		xml11          bool
	}{
		{name: "valid", in: "<a>Zoë 🏠 “q”</a>", want: "<a>Zoë 🏠 “q”</a>"},
		{name: "latin-1", in: "<a>Caf\xe9 \x93q\x94</a>", want: "<a>Café “q”</a>", repaired: true},
		{name: "cut at the end", in: "<a>x</a>\xc3", want: "<a>x</a>Ã", repaired: true},
		{name: "other encoding declared", in: latin1Doc, want: `<?xml version="1.0" encoding="UTF-8"?><a>Café</a>`, transcoded: "latin1"},
		{name: "windows-1252, single quotes, BOM", in: "\xef\xbb\xbf<?xml version='1.0' encoding='Windows-1252'?><a>\x80 \x93q\x94</a>",
			want: `<?xml version='1.0' encoding='UTF-8'?><a>€ “q”</a>`, transcoded: "windows-1252"},
		{name: "ISO-8859-1 keeps C1", in: `<?xml version="1.0" encoding="ISO-8859-1"?>` + "<a>\x80\xa9</a>", want: `<?xml version="1.0" encoding="UTF-8"?>` + "<a>\u0080©</a>", transcoded: "iso-8859-1"},
		{name: "UTF-16LE with BOM", in: "\xff\xfe" + utf16(`<?xml version="1.0" encoding="UTF-16"?><a>Zoë €</a>`, false),
			want: `<?xml version="1.0" encoding="UTF-8"?><a>Zoë €</a>`, transcoded: "utf-16le"},
		{name: "UTF-16BE with BOM", in: "\xfe\xff" + utf16(`<?xml version="1.0" encoding="UTF-16"?><a>Zoë €</a>`, true),
			want: `<?xml version="1.0" encoding="UTF-8"?><a>Zoë €</a>`, transcoded: "utf-16be"},
		{name: "UTF-16LE without BOM", in: utf16(`<?xml version="1.0" encoding="utf-16"?><a>é</a>`, false),
			want: `<?xml version="1.0" encoding="UTF-8"?><a>é</a>`, transcoded: "utf-16le"},
		{name: "UTF-16BE without declaration", in: "\xfe\xff" + utf16(`<a>é</a>`, true), want: `<a>é</a>`, transcoded: "utf-16be"},
		{name: "XML 1.1", in: `<?xml version="1.1" encoding="UTF-8"?><a/>`, want: `<?xml version="1.0" encoding="UTF-8"?><a/>`, xml11: true},
		{name: "whitespace and BOM before the declaration", in: "\xef\xbb\xbf\n  <?xml version=\"1.0\"?>\n<a>Caf\xe9</a>", want: "<?xml version=\"1.0\"?>\n<a>Café</a>", repaired: true},
		{name: "BOM, no declaration", in: "\xef\xbb\xbf<a/>", want: "<a/>"},
		{name: "unknown encoding", in: `<?xml version="1.0" encoding="EBCDIC-US"?><a>` + "\xe9</a>", want: `<?xml version="1.0" encoding="EBCDIC-US"?><a>` + "\xe9</a>"},
	} {
		for _, oneByte := range []bool{false, true} {
			var r io.Reader = strings.NewReader(tc.in)
			if oneByte {
				r = iotest.OneByteReader(r)
			}
			u := &utf8Repair{r: r}
			got, err := io.ReadAll(u)
			if err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			if string(got) != tc.want || u.repaired != tc.repaired || u.transcoded != tc.transcoded || u.xml11 != tc.xml11 {
				t.Errorf("%s (one byte %v): got %q repaired %v transcoded %q xml11 %v, want %q repaired %v transcoded %q xml11 %v",
					tc.name, oneByte, got, u.repaired, u.transcoded, u.xml11, tc.want, tc.repaired, tc.transcoded, tc.xml11)
			}
		}
	}
}
