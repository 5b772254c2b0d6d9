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
