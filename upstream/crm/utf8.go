package crm

import (
	"bytes"
	"io"
	"unicode/utf8"

	"golang.org/x/text/encoding/charmap"
)

// utf8Repair passes a UTF-8 document through, except that a byte which is
// not part of valid UTF-8 is read as Windows-1252 (a superset of Latin-1
// for printable text): a legacy script that declares UTF-8, or nothing,
// and writes one Latin-1 "é" would otherwise fail the whole answer as
// malformed XML. A document that declares another encoding in its XML
// declaration is passed through untouched (the decoder's CharsetReader
// decodes it); so is any whose declaration is not complete in the first
// read, which for an HTTP body is never the case in practice.
//
// It keeps at most one chunk of its source plus three bytes of an
// incomplete sequence, so it adds nothing to the memory bound of an answer;
// it reads below the size cap, so the cap counts the bytes as sent.
type utf8Repair struct {
	r        io.Reader
	buf      [4096]byte
	pending  []byte // the tail of a chunk: an incomplete sequence
	out      []byte // converted, not yet returned
	started  bool
	off      bool // another encoding is declared
	repaired bool // some byte was not UTF-8
	err      error
}

func (u *utf8Repair) Read(p []byte) (int, error) {
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
		if !u.started {
			other, decided := declaresOther(chunk)
			if !decided && u.err == nil && len(chunk) < declMax {
				u.pending = append([]byte(nil), chunk...) // wait for more of the declaration
				continue
			}
			u.started, u.off = true, other
		}
		if u.off || utf8.Valid(chunk) { // valid as a whole: nothing cut at its end
			u.out = chunk
			continue
		}
		u.out = u.convert(nil, chunk, u.err != nil)
	}
	n := copy(p, u.out)
	u.out = u.out[n:]
	return n, nil
}

// convert appends chunk to dst with every byte outside valid UTF-8 read as
// Windows-1252; unless final, an incomplete sequence at its end is kept for
// the next chunk instead.
func (u *utf8Repair) convert(dst, chunk []byte, final bool) []byte {
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

// declaresOther reports whether the document starting with head declares
// an encoding other than UTF-8 (or ASCII); decided is false while head is
// too short to tell. An unfinished declaration counts as another encoding
// (nothing is repaired).
func declaresOther(head []byte) (other, decided bool) {
	s := bytes.TrimLeft(bytes.TrimPrefix(head, []byte("\xef\xbb\xbf")), " \t\r\n")
	const open = "<?xml"
	if len(s) < len(open) {
		return false, !bytes.HasPrefix([]byte(open), s)
	}
	if !bytes.HasPrefix(s, []byte(open)) {
		return false, true
	}
	decl, _, complete := bytes.Cut(s, []byte("?>"))
	if !complete {
		return true, false
	}
	_, enc, ok := bytes.Cut(decl, []byte("encoding"))
	enc = bytes.TrimLeft(enc, " \t\r\n=")
	if !ok || len(enc) < 2 {
		return false, true
	}
	end := bytes.IndexByte(enc[1:], enc[0])
	if end < 0 {
		return true, true
	}
	switch string(bytes.ToLower(enc[1 : 1+end])) {
	case "utf-8", "utf8", "us-ascii", "ascii":
		return false, true
	}
	return true, true
}
