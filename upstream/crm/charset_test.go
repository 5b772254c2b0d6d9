package crm

import (
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/text/encoding/charmap"

	"listingproxy/normalize"
	"listingproxy/wire"
)

// latin1Record is a property whose texts hold bytes of a single-byte
// charset: é (0xE9), © (0xA9), and 0x80 (€ in Windows-1252, a C1 control
// in ISO-8859-1), with an entity, a character reference and a CDATA section.
const latin1Record = "<property id=\"21\" last_updated=\"Tue Nov 03 10:00:00 +1300 2026\">\n" +
	"  <agency_id>SU-NZ-21</agency_id>\n" +
	"  <address display=\"true\">7 Caf\xe9 Street</address>\n" +
	"  <status>CURRENT</status>\n" +
	"  <price>\x80650,000 \xa9 Caf\xe9 &amp; Co</price>\n" +
	"  <suburb>Mangere &#233;</suburb>\n" +
	"  <description><![CDATA[Near the caf\xe9 <b>bold</b>]]></description>\n" +
	"  <photos count=\"0\"/>\n" +
	"  <agents count=\"0\"/>\n" +
	"  <openhomes count=\"0\"/>\n" +
	"</property>"

// TestDeclaredCharsets: a document that declares a single-byte charset
// (ISO-8859-1, Windows-1252, with and without a byte order mark) is served
// through pass-through, as a list, a single property and a hydrated list,
// decoded to UTF-8: every letter as the charset means it, in the XML and
// the JSON, and nothing panics. For a caller with the upstream user's
// permissions, the list and the single document are the legacy's bytes
// decoded, byte for byte (entities, CDATA, layout as written), the
// declaration naming UTF-8.
func TestDeclaredCharsets(t *testing.T) {
	for _, cs := range []struct {
		name, euro string
		enc        *charmap.Charmap
	}{
		{"ISO-8859-1", "\u0080", charmap.ISO8859_1},
		{"windows-1252", "€", charmap.Windows1252},
		{"latin1", "\u0080", charmap.ISO8859_1},
		{"cp1252", "€", charmap.Windows1252},
	} {
		decoded, err := cs.enc.NewDecoder().String(latin1Record)
		if err != nil {
			t.Fatal(err)
		}
		const utf8Decl = `<?xml version="1.0" encoding="UTF-8"?>` + "\n"
		wantSingle := utf8Decl + decoded + "\n"
		wantList := utf8Decl + "<properties count=\"1\">\n  " + decoded + "\n</properties>\n"
		for _, bom := range []string{"", "\xef\xbb\xbf"} {
			decl := bom + `<?xml version="1.0" encoding="` + cs.name + `"?>` + "\n"
			f := newFakeCRM(t, func(w http.ResponseWriter, r *http.Request, user string) {
				w.Header().Set("Content-Type", "application/xml")
				switch r.URL.Path {
				case "/nz/properties/21.xml":
					w.Write([]byte(decl + latin1Record + "\n"))
				case "/nz/properties.xml":
					w.Write([]byte(decl + "<properties count=\"1\">\n  " + latin1Record + "\n</properties>\n"))
				default:
					http.NotFound(w, r)
				}
			})
			for _, mode := range []HydrateMode{HydrateNever, HydrateAlways} {
				name := cs.name + "/" + mode.String()
				if bom != "" {
					name += "/BOM"
				}
				t.Run(name, func(t *testing.T) {
					c := newTestClient(t, f, Options{PassThrough: true, Hydrate: mode})
					o := wire.Options{Detail: normalize.Full, Prices: true, Unknown: true, Location: auckland}
					p, err := c.GetProperty(t.Context(), harbourNZ, 21)
					if err != nil {
						t.Fatalf("GetProperty: %v", err)
					}
					ps, err := c.listProperties(t.Context(), harbourNZ, url.Values{"detail": {"full"}}, normalize.Full, "k")
					if err != nil {
						t.Fatalf("list: %v", err)
					}
					if got := string(wire.AppendProperty(nil, wire.XML, &p, o)); got != wantSingle {
						t.Errorf("single, as written (-want +got):\n%s", cmp.Diff(wantSingle, got))
					}
					if got := string(wire.AppendPropertyList(nil, wire.XML, ps, o)); got != wantList && mode == HydrateNever {
						t.Errorf("list, as written (-want +got):\n%s", cmp.Diff(wantList, got))
					}
					wants := []string{"7 Café Street", cs.euro + "650,000 © Café", "Near the café"}
					for _, doc := range []struct {
						name string
						b    []byte
					}{
						{"single XML", wire.AppendProperty(nil, wire.XML, &p, o)},
						{"single JSON", wire.AppendProperty(nil, wire.JSON, &p, o)},
						{"list XML", wire.AppendPropertyList(nil, wire.XML, ps, o)},
						{"list JSON", wire.AppendPropertyList(nil, wire.JSON, ps, o)},
					} {
						s := string(doc.b)
						for _, w := range wants {
							if !strings.Contains(s, w) && !strings.Contains(s, strings.ReplaceAll(w, "&", `\u0026`)) {
								t.Errorf("%s lacks %q:\n%s", doc.name, w, s)
							}
						}
						if strings.Contains(strings.ToLower(s), strings.ToLower(cs.name)) {
							t.Errorf("%s still declares %s:\n%s", doc.name, cs.name, s)
						}
						if strings.Contains(s, "\xef\xbb\xbf") {
							t.Errorf("%s carries a byte order mark", doc.name)
						}
					}
				})
			}
		}
	}
}

// TestXML11: a document declaring XML 1.1 is read as 1.0, served declared
// 1.0, counted and logged; one using what only 1.1 allows (a control
// character as a reference) fails as malformed, with the parser's
// message: the 503 every malformed answer gets, counted as a failure.
func TestXML11(t *testing.T) {
	const rec = `<property id="1" last_updated="Tue Nov 03 10:00:00 +1300 2026"><agency_id>A</agency_id><suburb>%s</suburb></property>`
	body := ""
	f := newFakeCRM(t, func(w http.ResponseWriter, r *http.Request, user string) { writeXML(w, body) })
	c := newTestClient(t, f, Options{PassThrough: true, Hydrate: HydrateNever})

	body = `<?xml version="1.1" encoding="UTF-8"?>` + "\n" + strings.Replace(rec, "%s", "Mangere", 1)
	p, err := c.GetProperty(t.Context(), harbourNZ, 1)
	if err != nil {
		t.Fatalf("XML 1.1: %v", err)
	}
	if got := string(wire.AppendProperty(nil, wire.XML, &p, wire.Options{Unknown: true, Prices: true})); !strings.HasPrefix(got, `<?xml version="1.0" encoding="UTF-8"?>`+"\n<property") {
		t.Errorf("XML 1.1 served as:\n%s", got)
	}
	if got := c.Stats().XML11; got != 1 {
		t.Errorf("Stats.XML11 = %d, want 1", got)
	}

	body = `<?xml version="1.1" encoding="UTF-8"?>` + "\n" + strings.Replace(rec, "%s", "bell&#7;", 1)
	_, err = c.GetProperty(t.Context(), harbourNZ, 1)
	if !errors.Is(err, errMalformed) || !strings.Contains(err.Error(), "illegal character code U+0007") {
		t.Errorf("XML 1.1 with a control character: %v, want malformed XML naming it", err)
	}
}

// TestEveryCharset: a document in any charset x/text decodes (declared, or
// named by the Content-Type when the document declares none) is served
// decoded, records passing as written, and counted; an encoding nobody
// decodes fails as malformed, naming it.
func TestEveryCharset(t *testing.T) {
	const rec = "<property id=\"1\" last_updated=\"Tue Nov 03 10:00:00 +1300 2026\"><agency_id>A</agency_id><suburb>%s</suburb></property>\n"
	var ct, body string
	f := newFakeCRM(t, func(w http.ResponseWriter, r *http.Request, user string) {
		w.Header().Set("Content-Type", ct)
		io.WriteString(w, body)
	})
	c := newTestClient(t, f, Options{PassThrough: true, Hydrate: HydrateNever})
	for i, tc := range []struct {
		name, ct, decl, suburb, want string
	}{
		{"ISO-8859-2", "application/xml", `<?xml version="1.0" encoding="ISO-8859-2"?>` + "\n", "\xa3\xf3d\xbc", "Łódź"},
		{"KOI8-R", "text/html; charset=UTF-8", `<?xml version="1.0" encoding="KOI8-R"?>` + "\n", "\xf0\xd2\xc9\xd7\xc5\xd4", "Привет"},
		{"EUC-JP", "application/xml", `<?xml version="1.0" encoding="EUC-JP"?>` + "\n", "\xc5\xec\xb5\xfe", "東京"},
		{"windows-1251 by Content-Type", "application/xml; charset=windows-1251", "", "\xcf\xf0\xe8\xe2\xe5\xf2", "Привет"},
	} {
		ct, body = tc.ct, tc.decl+strings.Replace(rec, "%s", tc.suburb, 1)
		p, err := c.GetProperty(t.Context(), harbourNZ, 1)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		want := `<?xml version="1.0" encoding="UTF-8"?>` + "\n" + strings.Replace(rec, "%s", tc.want, 1)
		if got := string(wire.AppendProperty(nil, wire.XML, &p, wire.Options{Unknown: true, Prices: true})); got != want {
			t.Errorf("%s (-want +got):\n%s", tc.name, cmp.Diff(want, got))
		}
		if got := c.Stats().Transcoded; got != int64(i+1) {
			t.Errorf("%s: Stats.Transcoded = %d, want %d", tc.name, got, i+1)
		}
	}
	ct, body = "application/xml", `<?xml version="1.0" encoding="x-nobody"?>`+"\n"+strings.Replace(rec, "%s", "x", 1)
	if _, err := c.GetProperty(t.Context(), harbourNZ, 1); !errors.Is(err, errMalformed) || !strings.Contains(err.Error(), `unsupported charset "x-nobody"`) {
		t.Errorf("unknown encoding: %v, want malformed naming it", err)
	}
}
