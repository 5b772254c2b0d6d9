package wire

import (
	"bytes"
	"encoding/xml"
	"io"
)

// Byte-level pass-through. A record read from a RawTokens source keeps its
// bytes as the legacy wrote them, and each element and text of its tree
// keeps its slice of them, so the writers give back what the proxy did not
// change byte for byte (entities and CDATA as written, <x></x> as written,
// the legacy's own indentation and attribute quoting), and re-render only
// the elements it changed (docs/wire-format.md). The xml.Decoder cannot
// give back its input; a Recorder sits under it as its io.ByteReader (the
// decoder then reads it directly, with no buffer of its own in between), so
// the decoder's InputOffset is an offset in the Recorder's stream, and keeps
// the bytes from a mark on.

// MaxRawRecord is the longest record (and list prolog) kept as written;
// a longer one is kept as a tree only and written normalised, so the
// bytes kept per answer stay near its size (a 15 MiB description is not
// held twice). Real records are a few KB.
const MaxRawRecord = 1 << 20

// RawTokens is a Tokens source that can give back the bytes it read:
// NewRawDecoder's, and upstream/crm's bounded decoder.
type RawTokens interface {
	Tokens
	// InputOffset is (*xml.Decoder).InputOffset: the offset of the end of
	// the last token in the Recorder's stream.
	InputOffset() int64
	// Recorder is the decoder's byte source, or nil when the bytes the
	// decoder reads are not the Recorder's (a declared charset was
	// converted); nothing is then kept as written. It may turn nil once
	// the XML declaration is read (the readers ask again after it), never
	// later.
	Recorder() *Recorder
}

// A Recorder is an io.ByteReader over r that keeps the bytes from a mark
// on, so a decoder reading it can be asked for the raw bytes between two of
// its offsets.
type Recorder struct {
	r    io.Reader
	buf  []byte
	pos  int   // next byte of buf to hand out
	base int64 // stream offset of buf[0]
	mark int64 // bytes from here on are kept; -1: none
	off  bool  // Disable was called
	err  error
}

// NewRecorder reads r, keeping everything from offset 0 until the first
// Mark or Unmark.
func NewRecorder(r io.Reader) *Recorder {
	return &Recorder{r: r, buf: make([]byte, 0, 4096)}
}

// ReadByte hands out the next byte.
func (r *Recorder) ReadByte() (byte, error) {
	if r.pos >= len(r.buf) {
		if err := r.fill(); err != nil {
			return 0, err
		}
	}
	b := r.buf[r.pos]
	r.pos++
	return b, nil
}

// Read hands out the next bytes (an xml.Decoder only calls ReadByte).
func (r *Recorder) Read(p []byte) (int, error) {
	if r.pos >= len(r.buf) {
		if err := r.fill(); err != nil {
			return 0, err
		}
	}
	n := copy(p, r.buf[r.pos:])
	r.pos += n
	return n, nil
}

func (r *Recorder) fill() error {
	if r.err != nil {
		return r.err
	}
	if r.mark >= 0 && r.base+int64(len(r.buf))-r.mark > MaxRawRecord {
		r.mark = -1 // too long to keep as written
	}
	keep := r.pos // nothing before the next byte is needed...
	if r.mark >= 0 && !r.off {
		keep = min(keep, int(r.mark-r.base)) // ...unless marked
	}
	if keep > 0 {
		n := copy(r.buf, r.buf[keep:])
		r.buf = r.buf[:n]
		r.base += int64(keep)
		r.pos -= keep
	}
	if cap(r.buf)-len(r.buf) < 512 {
		r.buf = append(r.buf[:cap(r.buf)], make([]byte, max(4096, cap(r.buf)))...)[:len(r.buf)]
	}
	for range 100 {
		n, err := r.r.Read(r.buf[len(r.buf):cap(r.buf)])
		r.buf = r.buf[:len(r.buf)+n]
		if n > 0 {
			return nil
		}
		if err != nil {
			r.err = err
			return err
		}
	}
	r.err = io.ErrNoProgress
	return r.err
}

// Mark keeps the bytes from offset off (not before the current mark, nor
// before the oldest byte still held) on.
func (r *Recorder) Mark(off int64) {
	if off < r.base {
		off = r.base
	}
	r.mark = off
}

// Unmark keeps nothing.
func (r *Recorder) Unmark() { r.mark = -1 }

// Disable keeps nothing from now on: the decoder reads converted bytes.
func (r *Recorder) Disable() { r.off = true }

// Disabled reports whether Disable was called.
func (r *Recorder) Disabled() bool { return r.off }

// Bytes returns a copy of the bytes between offsets from and to, or nil when
// they are not all held (not marked, disabled, or longer than MaxRawRecord).
func (r *Recorder) Bytes(from, to int64) []byte {
	if r == nil || r.off || from < r.base || to > r.base+int64(len(r.buf)) || from > to || to-from > MaxRawRecord {
		return nil
	}
	return bytes.Clone(r.buf[from-r.base : to-r.base])
}

// RawDecoder is an xml.Decoder over a Recorder: a RawTokens source for
// documents already in UTF-8 (the proxy's source documents).
type RawDecoder struct {
	*xml.Decoder
	rec *Recorder
}

// NewRawDecoder decodes r, keeping what it reads for records.
func NewRawDecoder(r io.Reader) *RawDecoder {
	rec := NewRecorder(r)
	return &RawDecoder{Decoder: xml.NewDecoder(rec), rec: rec}
}

// Recorder returns the decoder's Recorder.
func (d *RawDecoder) Recorder() *Recorder { return d.rec }
