package crm

import (
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"

	"listingproxy/internal/xmltext"
	"listingproxy/upstream"
	"listingproxy/wire"
)

// Defaults of the structure limits of one answer (Options.MaxElements and
// Options.MaxDepth).
const (
	// DefaultMaxElements is about three times the elements of the largest
	// legitimate answer: a full-detail list of 1,000 properties (the
	// proxy's default max_results) at ~35 elements each.
	DefaultMaxElements = 100_000
	// DefaultMaxDepth is far beyond the CRM's documents, which nest four
	// deep at most.
	DefaultMaxDepth = 64
)

// checkEvery is how many tokens a boundedDecoder reads between two looks at
// its context: often enough to stop within a millisecond of the deadline,
// rarely enough to cost nothing measurable.
const checkEvery = 256

// Failures of a bounded decode (besides errTooLarge).
var (
	errTooManyElements = errors.New("answer has too many elements")
	errTooDeep         = errors.New("answer nests too deep")
)

// limits bound the work of decoding one answer. Every field must be
// positive.
type limits struct {
	maxBytes    int64 // bytes read from the body
	maxElements int   // start elements, kept or skipped
	maxDepth    int   // open elements at once
}

// boundedReader reads at most max bytes of r and stops with errTooLarge
// beyond, so no buffer ever grows past the cap; it also stops as soon as ctx
// is done. It keeps the first error of r (err), so a decoder's failure can
// be told apart from the body's (a reset connection is not malformed XML).
type boundedReader struct {
	ctx context.Context
	r   io.Reader
	n   int64 // bytes read so far
	max int64
	err error // the first error of r other than io.EOF
	// grant, when not nil, holds the bytes of the decode budget this
	// answer uses: each read first makes sure its bytes are granted.
	grant *grant
}

func (b *boundedReader) Read(p []byte) (int, error) {
	if err := b.ctx.Err(); err != nil {
		return 0, err
	}
	if b.n > b.max {
		return 0, fmt.Errorf("%w of %d bytes", errTooLarge, b.max)
	}
	if left := b.max + 1 - b.n; int64(len(p)) > left {
		p = p[:left] // one byte past the cap is enough to know
	}
	if b.grant != nil {
		if err := b.grant.cover(b.ctx, b.n+int64(len(p))); err != nil {
			return 0, err
		}
	}
	n, err := b.r.Read(p)
	b.n += int64(n)
	if b.n > b.max {
		return n, fmt.Errorf("%w of %d bytes", errTooLarge, b.max)
	}
	if err != nil && err != io.EOF && b.err == nil {
		b.err = err
	}
	return n, err
}

// boundedDecoder is an XML token reader over a boundedReader that counts
// elements and depth against its limits and checks its context every
// checkEvery tokens, so a hostile or slow answer ends with an error instead
// of memory or time. It owns no document model: whatever consumes its
// tokens (today the record readers of listingproxy/wire) decides what to keep.
type boundedDecoder struct {
	ctx      context.Context
	body     *boundedReader
	text     *xmltext.Reader // between body and rec: the document in UTF-8
	rec      *wire.Recorder  // between text and dec: keeps records as written (wire.RawTokens)
	dec      *xml.Decoder
	lim      limits
	elements int
	depth    int
	tokens   int
}

// newBoundedDecoder decodes r within lim until ctx is done; g, when not
// nil, is the answer's share of the decode budget.
func newBoundedDecoder(ctx context.Context, r io.Reader, lim limits, g *grant) *boundedDecoder {
	body := &boundedReader{ctx: ctx, r: r, max: lim.maxBytes, grant: g}
	text := xmltext.NewReader(body)
	rec := wire.NewRecorder(text)
	dec := xml.NewDecoder(rec) // a ByteReader: read directly, so offsets are rec's
	dec.CharsetReader = func(charset string, input io.Reader) (io.Reader, error) {
		r, err := xmltext.CharsetReader(charset, input)
		if r != input {
			rec.Disable() // the decoder now reads converted bytes: none is kept as written
		}
		return r, err
	}
	dec.Entity = xml.HTMLEntity // legacy text sometimes carries &nbsp; and friends
	return &boundedDecoder{ctx: ctx, body: body, text: text, rec: rec, dec: dec, lim: lim}
}

// InputOffset is the decoder's offset in rec's stream (wire.RawTokens).
func (d *boundedDecoder) InputOffset() int64 { return d.dec.InputOffset() }

// Recorder returns rec (wire.RawTokens), or nil once a declared charset is
// converted.
func (d *boundedDecoder) Recorder() *wire.Recorder {
	if d.rec.Disabled() {
		return nil
	}
	return d.rec
}

// Token returns the next token (see xml.Decoder.Token: its data is valid
// until the next call). At the end of a well-formed document it returns
// io.EOF. Its errors are errTooLarge, errTooManyElements, errTooDeep, the
// context's error, the body's read error, or errMalformed.
func (d *boundedDecoder) Token() (xml.Token, error) {
	d.tokens++
	if d.tokens%checkEvery == 0 {
		if err := d.ctx.Err(); err != nil {
			return nil, err
		}
	}
	t, err := d.dec.Token()
	if err != nil {
		return nil, d.explain(err)
	}
	switch t.(type) {
	case xml.StartElement:
		d.elements++
		d.depth++
		switch {
		case d.elements > d.lim.maxElements:
			return nil, fmt.Errorf("%w: more than %d", errTooManyElements, d.lim.maxElements)
		case d.depth > d.lim.maxDepth:
			return nil, fmt.Errorf("%w: more than %d levels", errTooDeep, d.lim.maxDepth)
		}
	case xml.EndElement:
		d.depth--
	}
	return t, nil
}

// explain turns an error of the xml.Decoder into the cause the caller
// should see: the body's own failure (size cap, context, transport) wins
// over the syntax error it provoked.
func (d *boundedDecoder) explain(err error) error {
	switch {
	case err == io.EOF:
		return io.EOF
	case errors.Is(err, errTooLarge), errors.Is(err, upstream.ErrBusy), errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return err
	case d.body.err != nil:
		return d.body.err
	case d.ctx.Err() != nil:
		return d.ctx.Err()
	}
	return fmt.Errorf("%w: %v", errMalformed, err)
}
