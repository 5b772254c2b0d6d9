// Package xmltext turns an XML document in whatever encoding a legacy
// endpoint writes into the UTF-8 document Go's XML decoder (and a
// wire.Recorder above it) reads, as a stream: upstream/crm reads every
// answer through it, and docdiff reads both sides of a comparison through
// it, so the two agree on what a legacy document says. Standard library and
// golang.org/x/text only. Hand-written rather than x/net/html/charset
// because it must also rewrite the declaration (and never buffer more than
// the declaration's head) so that the bytes above it can be kept as
// written.
package xmltext

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/encoding"
	"golang.org/x/text/encoding/charmap"
	"golang.org/x/text/encoding/htmlindex"
	"golang.org/x/text/encoding/ianaindex"
	"golang.org/x/text/encoding/unicode"
	"golang.org/x/text/transform"
)

// Reader turns an XML document into the UTF-8 document the decoder and a
// wire.Recorder above it read, so that records are kept as written
// (docs/wire-format.md) whatever the legacy's encoding:
//
//   - A UTF-8 document (declared so, or undeclared) passes through, except
//     that a byte which is not part of valid UTF-8 is read as Windows-1252
//     (a superset of Latin-1 for printable text): a legacy script that
//     writes one Latin-1 "é" would otherwise fail the whole answer as
//     malformed XML (repaired).
//   - A document declaring any charset x/text decodes (decoderOf: the
//     legacy spellings of Latin-1 and Windows-1252, every IANA name and
//     alias, the WHATWG labels), or without a declaration the charset its
//     transport names (SetCharset), or in UTF-16 (by its byte order mark,
//     or by "<?" in UTF-16 without one), is decoded to UTF-8 (transcoded).
//     A UTF-16 declaration over bytes that are not is read as UTF-8.
//   - Its XML declaration is then rewritten to say what follows: encoding
//     "UTF-8" for a transcoded document, version "1.0" for one declaring
//     XML 1.1 (read as 1.0: the characters 1.1 allows beyond 1.0, control
//     characters as references, still fail as malformed); a byte order
//     mark or whitespace before it is dropped (either would make the
//     declaration the proxy writes again not the document's first bytes).
//   - A document declaring an encoding nothing decodes passes through
//     untouched, and the decoder's CharsetReader refuses it ("unsupported
//     charset").
//
// It keeps at most one chunk of its source (and the head it sniffs, up to
// declMax bytes) plus three bytes of an incomplete sequence, so it adds
// nothing to the memory bound of an answer; it reads below the size cap,
// so the cap counts the bytes as sent.
type Reader struct {
	r          io.Reader // the source; after the head, the decoded stream when transcoded
	buf        [4096]byte
	pending    []byte // the tail of a chunk: an incomplete sequence
	out        []byte // converted, not yet returned
	started    bool
	off        bool   // no repair: transcoded, or an unsupported encoding declared
	repaired   bool   // some byte was not UTF-8
	transcoded string // the encoding decoded to UTF-8, or ""
	xml11      bool   // an XML 1.1 declaration, read as 1.0
	relabelled bool   // a wide encoding declared over ASCII-compatible bytes, read as UTF-8
	label      string // the transport's charset (SetCharset), lower case
	err        error
}

// NewReader reads the document r.
func NewReader(r io.Reader) *Reader { return &Reader{r: r} }

// SetCharset names the charset the transport gives the document (the
// charset of an HTTP Content-Type), before the first Read. It is used only
// when the document declares no encoding and starts with no byte order
// mark (a legacy's declaration is more often right than its server's
// default label: PHP's text/html; charset=UTF-8 over a Latin-1 document),
// and never for a Latin-1 or Windows-1252 label (a server's old default,
// often over UTF-8): there the UTF-8 reading with its Windows-1252 repair
// reads both right.
func (u *Reader) SetCharset(label string) {
	u.label = strings.ToLower(strings.Trim(strings.TrimSpace(label), `"`))
}

// Repaired reports whether some byte was not UTF-8 (read as Windows-1252).
func (u *Reader) Repaired() bool { return u.repaired }

// Transcoded returns the encoding decoded to UTF-8 (lower case, as
// declared, or "utf-16le"/"utf-16be"), or "" when the document was UTF-8.
func (u *Reader) Transcoded() string { return u.transcoded }

// XML11 reports whether the document declared XML 1.1 (read as 1.0).
func (u *Reader) XML11() bool { return u.xml11 }

// Read reads the document, in UTF-8.
func (u *Reader) Read(p []byte) (int, error) {
	if !u.started {
		u.start()
	}
	for len(u.out) == 0 {
		if u.err != nil {
			if len(u.pending) > 0 { // a sequence cut by the end
				u.out = u.convert(nil, u.pending, true)
				u.pending = nil
				continue
			}
			return 0, u.err
		}
		n, err := u.r.Read(u.buf[len(u.pending):])
		copy(u.buf[:], u.pending) // pending always fits before the new bytes
		chunk := u.buf[:len(u.pending)+n]
		u.pending = nil
		u.err = err
		u.out = u.repair(chunk, u.err != nil)
	}
	n := copy(p, u.out)
	u.out = u.out[n:]
	return n, nil
}

// repair returns chunk, repaired unless off.
func (u *Reader) repair(chunk []byte, final bool) []byte {
	if u.off || utf8.Valid(chunk) { // valid as a whole: nothing cut at its end
		return chunk
	}
	return u.convert(nil, chunk, final)
}

// start reads the head of the document, decides its encoding, puts a
// decoder between the source and Read when it is not UTF-8, and queues the
// head (decoded, its declaration rewritten) as the first bytes to return.
// Read errors are left to Read: the source gives them again.
func (u *Reader) start() {
	u.started = true
	head := u.head(u.r, func(h []byte) bool { _, decided := sniff(h); return decided })
	enc, _ := sniff(head)
	if enc == "" && u.label != "" && !bytes.HasPrefix(head, []byte(utf8BOM)) && !wideName(u.label) && !latinLabel(u.label) {
		enc = u.label // no declaration: the transport's charset
	}
	if !strings.HasPrefix(enc, "utf-16") {
		head = bytes.TrimPrefix(head, []byte(utf8BOM)) // before a single-byte charset's declaration: not one of its letters
	}
	src := io.MultiReader(bytes.NewReader(head), u.r)
	switch e := decoderOf(enc); {
	case e != nil:
		u.r = transform.NewReader(src, e.NewDecoder())
		u.transcoded, u.off = enc, true
		head = u.head(u.r, declComplete)
	case isUTF8(enc): // the head is queued below, the rest read from u.r
	case wideName(enc): // a wide encoding named over bytes that are not
		u.relabelled = true
	default: // unsupported: the decoder names it
		u.r, u.off = src, true
		return
	}
	head, u.xml11 = rewriteDecl(head, u.transcoded != "" || u.relabelled)
	u.out = u.repair(head, false)
}

// head reads r until enough reports true, declMax bytes are read, or r
// fails, and returns what it read.
func (u *Reader) head(r io.Reader, enough func([]byte) bool) []byte {
	var h []byte
	for {
		n, err := r.Read(u.buf[:])
		h = append(h, u.buf[:n]...)
		if err != nil || len(h) >= declMax || enough(h) {
			return h
		}
	}
}

// convert appends chunk to dst with every byte outside valid UTF-8 read as
// Windows-1252; unless final, an incomplete sequence at its end is kept for
// the next chunk instead.
func (u *Reader) convert(dst, chunk []byte, final bool) []byte {
	for len(chunk) > 0 {
		r, size := utf8.DecodeRune(chunk)
		if r == utf8.RuneError && size <= 1 {
			if !final && !utf8.FullRune(chunk) {
				u.pending = append([]byte(nil), chunk...)
				return dst
			}
			u.repaired = true
			dst = utf8.AppendRune(dst, charmap.Windows1252.DecodeByte(chunk[0]))
			chunk = chunk[1:]
			continue
		}
		dst = append(dst, chunk[:size]...)
		chunk = chunk[size:]
	}
	return dst
}

// declMax is how far into a document its XML declaration is looked for.
const declMax = 512

const utf8BOM = "\xef\xbb\xbf"

// sniff returns the encoding of the document starting with head, lower
// case: "utf-16be" or "utf-16le" by a byte order mark or by "<?" in
// UTF-16, else the encoding its XML declaration names, else "" (UTF-8).
// decided is false while head is too short to tell. An unfinished
// declaration names an encoding of its own ("?").
func sniff(head []byte) (enc string, decided bool) {
	for _, u := range []struct{ enc, prefix string }{
		{"utf-16be", "\xfe\xff"}, {"utf-16le", "\xff\xfe"}, {"utf-16be", "\x00<\x00?"}, {"utf-16le", "<\x00?\x00"},
	} {
		switch {
		case bytes.HasPrefix(head, []byte(u.prefix)):
			return u.enc, true
		case len(head) < len(u.prefix) && bytes.HasPrefix([]byte(u.prefix), head):
			return "", false
		}
	}
	if len(head) < len(utf8BOM) && bytes.HasPrefix([]byte(utf8BOM), head) {
		return "", false
	}
	s := bytes.TrimLeft(bytes.TrimPrefix(head, []byte(utf8BOM)), " \t\r\n")
	const open = "<?xml"
	if len(s) <= len(open) {
		return "", !bytes.HasPrefix([]byte(open), s) || len(head) >= declMax
	}
	if !isDecl(s) {
		return "", true
	}
	decl, _, complete := bytes.Cut(s, []byte("?>"))
	if !complete {
		return "?", len(head) >= declMax
	}
	v, _, ok := pseudoAttr(decl, "encoding")
	if !ok {
		return "", true
	}
	return strings.ToLower(strings.TrimSpace(string(v))), true
}

// declComplete reports whether head holds a whole XML declaration, or
// cannot start with one.
func declComplete(head []byte) bool {
	s := bytes.TrimLeft(bytes.TrimPrefix(head, []byte(utf8BOM)), " \t\r\n")
	if len(s) <= len("<?xml") {
		return !bytes.HasPrefix([]byte("<?xml"), s)
	}
	return !isDecl(s) || bytes.Contains(s, []byte("?>"))
}

// isDecl reports whether b starts with an XML declaration (not a processing
// instruction whose name starts with xml, such as <?xml-stylesheet?>).
func isDecl(b []byte) bool {
	return len(b) > 5 && bytes.HasPrefix(b, []byte("<?xml")) && bytes.IndexByte([]byte(" \t\r\n?"), b[5]) >= 0
}

// pseudoAttr finds name="value" (or single quotes) in an XML declaration
// and returns the value and its offsets in decl.
func pseudoAttr(decl []byte, name string) (value []byte, at int, ok bool) {
	i := bytes.Index(decl, []byte(name))
	if i < 0 {
		return nil, 0, false
	}
	rest := decl[i+len(name):]
	eq := len(rest) - len(bytes.TrimLeft(rest, " \t\r\n"))
	if eq >= len(rest) || rest[eq] != '=' {
		return nil, 0, false
	}
	q := eq + 1 + len(rest[eq+1:]) - len(bytes.TrimLeft(rest[eq+1:], " \t\r\n"))
	if q >= len(rest) || (rest[q] != '"' && rest[q] != '\'') {
		return nil, 0, false
	}
	end := bytes.IndexByte(rest[q+1:], rest[q])
	if end < 0 {
		return nil, 0, false
	}
	start := i + len(name) + q + 1
	return decl[start : start+end], start, true
}

// rewriteDecl returns head (UTF-8 now) without what precedes its XML
// declaration (a byte order mark, whitespace), the declaration naming
// UTF-8 when transcoded and version 1.0 when it said 1.1; and whether it
// said 1.1. A head without a whole declaration loses only its byte order
// mark.
func rewriteDecl(head []byte, transcoded bool) ([]byte, bool) {
	head = bytes.TrimPrefix(head, []byte(utf8BOM))
	s := bytes.TrimLeft(head, " \t\r\n")
	if !isDecl(s) {
		return head, false
	}
	end := bytes.Index(s, []byte("?>"))
	if end < 0 {
		return head, false
	}
	decl := string(s[:end])
	xml11 := false
	if v, at, ok := pseudoAttr(s[:end], "version"); ok && string(v) == "1.1" {
		decl, xml11 = decl[:at]+"1.0"+decl[at+len(v):], true
	}
	if v, at, ok := pseudoAttr([]byte(decl), "encoding"); ok && transcoded {
		decl = decl[:at] + "UTF-8" + decl[at+len(v):]
	}
	return append([]byte(decl), s[end:]...), xml11
}

// CharsetReader is an xml.Decoder's CharsetReader for a declaration that
// a Reader did not rewrite (one longer than declMax): it decodes the
// ASCII-compatible charsets a Reader decodes; UTF-8 passes through;
// anything else (UTF-16 named in bytes that are not, an unknown name) is
// refused.
func CharsetReader(charset string, input io.Reader) (io.Reader, error) {
	enc := strings.ToLower(strings.TrimSpace(charset))
	if isUTF8(enc) {
		return input, nil
	}
	if e := decoderOf(enc); e != nil && !strings.HasPrefix(enc, "utf-16") {
		return e.NewDecoder().Reader(input), nil
	}
	return nil, fmt.Errorf("unsupported charset %q", charset)
}

// isUTF8 reports whether enc (as sniff returns it) is UTF-8 or a subset.
func isUTF8(enc string) bool {
	switch enc {
	case "", "utf-8", "utf8", "us-ascii", "ascii":
		return true
	}
	return false
}

// decoderOf returns the encoding to decode a document in enc (as sniff
// returns it) with, or nil for UTF-8, for a wide encoding named in a
// document whose bytes are not (wideName), and for encodings not known: the
// legacy spellings of Latin-1 and Windows-1252, then every charset IANA
// registers that x/text decodes (ISO-8859-2 to -16, KOI8-R, windows-1250
// to -1258, Shift_JIS, EUC-JP, EUC-KR, Big5, GB18030...), then the
// WHATWG labels (x-cp1252, gb2312...). ISO-8859-1 is Latin-1 as XML
// parsers read it (0x80 is U+0080), not the WHATWG's Windows-1252.
func decoderOf(enc string) encoding.Encoding {
	switch enc {
	case "utf-16be":
		return unicode.UTF16(unicode.BigEndian, unicode.UseBOM)
	case "utf-16le":
		return unicode.UTF16(unicode.LittleEndian, unicode.UseBOM)
	case "iso-8859-1", "iso8859-1", "iso_8859-1", "latin1", "latin-1", "l1":
		return charmap.ISO8859_1
	case "iso-8859-15", "latin-9", "latin9":
		return charmap.ISO8859_15
	case "windows-1252", "cp1252", "cp-1252":
		return charmap.Windows1252
	}
	if isUTF8(enc) || wideName(enc) || enc == "?" || enc == "" {
		return nil
	}
	if e, err := ianaindex.IANA.Encoding(enc); err == nil && e != nil {
		return e
	}
	if e, err := htmlindex.Get(enc); err == nil && e != nil {
		return e
	}
	return nil
}

// latinLabel reports whether label names Latin-1 or Windows-1252.
func latinLabel(label string) bool {
	e := decoderOf(label)
	return e == charmap.ISO8859_1 || e == charmap.Windows1252
}

// wideName reports whether enc names a UTF-16 or UTF-32 form: declared in
// a document whose first bytes read as ASCII, it is not what the document
// is in (its bytes would be two or four to a letter), which is then read
// as UTF-8 and declared so.
func wideName(enc string) bool {
	for _, p := range []string{"utf-16", "utf16", "utf-32", "utf32", "ucs-2", "ucs2", "ucs-4", "ucs4", "iso-10646-ucs"} {
		if strings.HasPrefix(enc, p) {
			return true
		}
	}
	return false
}
