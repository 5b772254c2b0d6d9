package xmltext

import (
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

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

// TestReader: valid UTF-8 passes unchanged even when its sequences are
// cut between reads; stray bytes are read as Windows-1252. A document in
// another encoding it knows (a declared single-byte charset, UTF-16 with or
// without a byte order mark) is decoded, its declaration then naming
// UTF-8; XML 1.1 is declared 1.0; a byte order mark or whitespace before
// the declaration is dropped; an encoding it does not know passes
// untouched (the decoder refuses it).
func TestReader(t *testing.T) {
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
		{name: "ISO-8859-2 (IANA)", in: `<?xml version="1.0" encoding="ISO-8859-2"?><a>` + "\xa3\xf3d\xbc</a>", want: `<?xml version="1.0" encoding="UTF-8"?><a>Łódź</a>`, transcoded: "iso-8859-2"},
		{name: "windows-1251", in: `<?xml version="1.0" encoding="windows-1251"?><a>` + "\xcf\xf0\xe8\xe2\xe5\xf2</a>", want: `<?xml version="1.0" encoding="UTF-8"?><a>Привет</a>`, transcoded: "windows-1251"},
		{name: "Shift_JIS", in: `<?xml version="1.0" encoding="Shift_JIS"?><a>` + "\x93\x8c\x8b\x9e</a>", want: `<?xml version="1.0" encoding="UTF-8"?><a>東京</a>`, transcoded: "shift_jis"},
		{name: "IBM819 is Latin-1", in: `<?xml version="1.0" encoding="IBM819"?><a>` + "\xe9\x80</a>", want: `<?xml version="1.0" encoding="UTF-8"?><a>é` + "\u0080</a>", transcoded: "ibm819"},
		{name: "x-cp1252 (WHATWG)", in: `<?xml version="1.0" encoding="x-cp1252"?><a>` + "\x80</a>", want: `<?xml version="1.0" encoding="UTF-8"?><a>€</a>`, transcoded: "x-cp1252"},
		{name: "UTF-16 declared over 8-bit bytes", in: `<?xml version="1.0" encoding="UTF-16"?><a>Caf` + "\xe9</a>", want: `<?xml version="1.0" encoding="UTF-8"?><a>Café</a>`, repaired: true},
		{name: "a stylesheet, not a declaration", in: "\n<?xml-stylesheet version=\"1.1\" href=\"s.xsl\"?><a>Caf\xe9</a>", want: "\n<?xml-stylesheet version=\"1.1\" href=\"s.xsl\"?><a>Café</a>", repaired: true},
		{name: "unknown encoding", in: `<?xml version="1.0" encoding="EBCDIC-US"?><a>` + "\xe9</a>", want: `<?xml version="1.0" encoding="EBCDIC-US"?><a>` + "\xe9</a>"},
	} {
		for _, oneByte := range []bool{false, true} {
			var r io.Reader = strings.NewReader(tc.in)
			if oneByte {
				r = iotest.OneByteReader(r)
			}
			u := NewReader(r)
			got, err := io.ReadAll(u)
			if err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			if string(got) != tc.want || u.Repaired() != tc.repaired || u.Transcoded() != tc.transcoded || u.XML11() != tc.xml11 {
				t.Errorf("%s (one byte %v): got %q repaired %v transcoded %q xml11 %v, want %q repaired %v transcoded %q xml11 %v",
					tc.name, oneByte, got, u.Repaired(), u.Transcoded(), u.XML11(), tc.want, tc.repaired, tc.transcoded, tc.xml11)
			}
		}
	}
}

// TestReaderTransportCharset: the transport's charset decodes a document
// that declares none and has no byte order mark; a declaration or a byte
// order mark wins over it; a Latin-1 or Windows-1252 label is left to the
// UTF-8 reading and its repair, which read UTF-8 and Latin-1 both right.
func TestReaderTransportCharset(t *testing.T) {
	for _, tc := range []struct{ name, label, in, want, transcoded string }{
		{"no declaration", "ISO-8859-2", "<a>\xa3\xf3d\xbc</a>", "<a>Łódź</a>", "iso-8859-2"},
		{"a declaration wins", "ISO-8859-2", `<?xml version="1.0" encoding="windows-1252"?><a>` + "\x80</a>", `<?xml version="1.0" encoding="UTF-8"?><a>€</a>`, "windows-1252"},
		{"a UTF-8 declaration wins", "ISO-8859-2", `<?xml version="1.0" encoding="UTF-8"?><a>é</a>`, `<?xml version="1.0" encoding="UTF-8"?><a>é</a>`, ""},
		{"a byte order mark wins", "ISO-8859-2", "\xef\xbb\xbf<a>é</a>", "<a>é</a>", ""},
		{"UTF-8 label", "utf-8", "<a>é</a>", "<a>é</a>", ""},
		{"quoted label", `"windows-1251"`, "<a>\xcf</a>", "<a>П</a>", "windows-1251"},
		{"a Latin-1 label over UTF-8", "ISO-8859-1", "<a>é</a>", "<a>é</a>", ""},
		{"a Windows-1252 label over Latin-1", "windows-1252", "<a>\x80\xe9</a>", "<a>€é</a>", ""},
	} {
		u := NewReader(strings.NewReader(tc.in))
		u.SetCharset(tc.label)
		got, err := io.ReadAll(u)
		if err != nil || string(got) != tc.want || u.Transcoded() != tc.transcoded {
			t.Errorf("%s: %q %v transcoded %q; want %q transcoded %q", tc.name, got, err, u.Transcoded(), tc.want, tc.transcoded)
		}
	}
}
