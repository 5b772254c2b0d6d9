package crm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"runtime/debug"
	"strings"

	"listingproxy/upstream"
	"listingproxy/wire"
)

// Failures of an upstream call, wrapped with detail.
var (
	errNoCredentials = errors.New("no upstream credentials for tenant")
	errCredentials   = errors.New("upstream rejected the credentials")
	errStatus        = errors.New("upstream status")
	errContentType   = errors.New("unexpected content type")
	errTooLarge      = errors.New("body exceeds the size limit")
	errTimeout       = errors.New("upstream timed out")
	errRequest       = errors.New("upstream request")
	errMalformed     = wire.ErrMalformed
	errRoot          = wire.ErrRoot
	errUpstream      = wire.ErrAnswerError
	errBadCountry    = errors.New("invalid country")
)

// NotFoundError is the CRM's single-error answer to a single-resource call.
// It matches upstream.ErrNotFound with errors.Is and keeps the CRM's message.
type NotFoundError = wire.NotFoundError

// drainBytes is how much of an unread body is read before closing it, so
// that a small remainder does not cost the connection; anything longer is
// cheaper to abandon with its connection.
const drainBytes = 8 << 10

// call makes GET {base}/{country}/{path...}?{q} for the scope's tenant
// within Timeout and one of MaxConcurrency slots, and hands the body of a
// 200 XML answer to decode as a boundedDecoder. The body is decoded as it
// arrives, within the call's deadline, its bytes granted from the decode
// budget (MaxDecodingBytes) as they are read, so the budget bounds the
// memory of parsing as well as of reading, and a slow or oversized answer
// stops at its limit. A wait for a slot or for budget that ends with the
// call's Timeout is upstream.ErrBusy, not a failure. Errors are unprefixed.
func (c *Client) call(ctx context.Context, s upstream.Scope, q url.Values, path []string, decode func(*boundedDecoder) error) (err error) {
	cred, ok := c.creds[s.Tenant]
	if !ok {
		return fmt.Errorf("%w %q", errNoCredentials, s.Tenant)
	}
	if !validCountry(s.Country) {
		return fmt.Errorf("%w %q", errBadCountry, s.Country)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	u := c.base.JoinPath(append([]string{s.Country}, path...)...)
	if len(q) > 0 {
		u.RawQuery = q.Encode()
	}

	callCtx, cancel := c.withTimeout(ctx, c.timeout)
	defer cancel()
	// failed explains a transport error, which may come from the call's
	// context ending: the caller's own cancellation wins, then this
	// package's timeout (or a transport's, such as a dial timeout).
	failed := func(what string, err error) error {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return ctxErr
		}
		if callCtx.Err() != nil {
			return fmt.Errorf("%w after %s", errTimeout, c.timeout)
		}
		if ne, ok := errors.AsType[net.Error](err); ok && ne.Timeout() {
			return fmt.Errorf("%w: %s%v", errTimeout, what, err)
		}
		// The transport error stays in the chain (a refused dial is a
		// connection-level failure to upstream/breaker).
		return fmt.Errorf("%w: %s%w", errRequest, what, err)
	}

	if err := c.sem.Acquire(callCtx, 1); err != nil {
		if err := ctx.Err(); errors.Is(err, context.Canceled) {
			return err
		}
		// Our own bound was full until a deadline passed (ours or the
		// caller's): nothing of the CRM's doing.
		return fmt.Errorf("waiting for one of %d slots: %w", c.maxConc, upstream.ErrBusy)
	}
	c.inFlight.Add(1)
	defer func() { c.inFlight.Add(-1); c.sem.Release(1) }()

	req, err := http.NewRequestWithContext(callCtx, http.MethodGet, u.String(), nil)
	if err != nil {
		return fmt.Errorf("%w: %v", errRequest, err)
	}
	req.SetBasicAuth(cred.Username, cred.Password)
	req.Header.Set("Accept", "application/xml")
	req.Header.Set("User-Agent", "listingproxy-crm")

	c.stats.calls.Add(1)
	resp, err := c.hc.Do(req)
	if err != nil {
		return failed("", err)
	}
	defer func() {
		// A body refused for its size or shape is abandoned with its
		// connection: its remainder may be long or never come; so is one
		// whose reading panicked (its state is unknown).
		if !errors.Is(err, errTooLarge) && !errors.Is(err, errTooManyElements) && !errors.Is(err, errTooDeep) && !errors.Is(err, upstream.ErrInternal) {
			_, _ = io.CopyN(io.Discard, resp.Body, drainBytes)
		}
		resp.Body.Close()
	}()

	switch {
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		return fmt.Errorf("%w of tenant %q (user %q): HTTP %d; check the tenant's upstream username and password",
			errCredentials, s.Tenant, cred.Username, resp.StatusCode)
	case resp.StatusCode != http.StatusOK:
		return fmt.Errorf("%w %d", errStatus, resp.StatusCode)
	}
	if resp.ContentLength > c.maxBody {
		// Refused before reading a byte.
		return fmt.Errorf("%w of %d bytes (Content-Length %d)", errTooLarge, c.maxBody, resp.ContentLength)
	}
	g := &grant{b: c.budget}
	defer g.release()
	if resp.ContentLength > 0 { // all of it at once: no partial grant waits for more
		g.known = resp.ContentLength + 1
		if err := g.cover(callCtx, g.known); err != nil {
			if ctxErr := ctx.Err(); errors.Is(ctxErr, context.Canceled) {
				return ctxErr
			}
			return err
		}
	}
	// A legacy script often sends XML with its language's default content
	// type (PHP: text/html). The document decides: a well-formed answer of
	// the right root is served (and the label counted); anything else fails
	// as a document would, naming the content type too.
	ct := resp.Header.Get("Content-Type")
	mislabelled := ct != "" && !isXML(ct)
	d := newBoundedDecoder(callCtx, resp.Body, c.limits, g)
	if _, params, err := mime.ParseMediaType(ct); err == nil {
		d.text.SetCharset(params["charset"]) // for a document that declares no encoding
	}
	if err := c.decodeSafely(s, u.Path, d, decode); err != nil {
		if errors.Is(err, upstream.ErrBusy) && !errors.Is(ctx.Err(), context.Canceled) {
			return err
		}
		if errors.Is(err, upstream.ErrInternal) {
			return err
		}
		if d.body.err != nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return failed("reading the body: ", err)
		}
		if mislabelled {
			return fmt.Errorf("%w %q: %w", errContentType, ct, err)
		}
		return err
	}
	if mislabelled {
		c.stats.mislabelled.Add(1)
		c.log.Warn("crm: XML answer with a content type that is not XML; served", "tenant", s.Tenant, "path", u.Path, "content_type", ct)
	}
	if d.text.Repaired() {
		c.stats.repaired.Add(1)
		c.log.Warn("crm: answer with bytes that are not UTF-8, read as Windows-1252", "tenant", s.Tenant, "path", u.Path)
	}
	if d.text.Transcoded() != "" {
		c.stats.transcoded.Add(1)
	}
	if d.text.XML11() {
		c.stats.xml11.Add(1)
		c.log.Warn("crm: answer declaring XML 1.1, read as XML 1.0", "tenant", s.Tenant, "path", u.Path)
	}
	return nil
}

// decodeSafely runs decode on d, turning a panic into an error that wraps
// upstream.ErrInternal. The CRM answered; a panic while reading its answer
// is listingproxy's own bug, so it is logged with its stack and counted
// (Stats.Panics), and the breakers do not count it against the CRM. This is
// the one seam every answer goes through (lists, documents, hydration's
// fetches, which run on goroutines of their own where an unrecovered panic
// would end the process).
func (c *Client) decodeSafely(s upstream.Scope, path string, d *boundedDecoder, decode func(*boundedDecoder) error) (err error) {
	defer func() {
		if v := recover(); v != nil {
			c.stats.panics.Add(1)
			c.log.Error("crm: panic while reading an answer: a bug of listingproxy, not a failure of the CRM",
				"tenant", s.Tenant, "path", path, "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
			err = fmt.Errorf("%w: reading the answer to %s: panic: %v", upstream.ErrInternal, path, v)
		}
	}()
	return decode(d)
}

// validCountry accepts the lower-case letters of a country segment, so a
// scope can never steer the request path.
func validCountry(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < 'a' || r > 'z' {
			return false
		}
	}
	return true
}

// isXML reports whether a Content-Type names XML: application/xml, text/xml
// or any +xml type.
func isXML(ct string) bool {
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return false
	}
	return mt == "application/xml" || mt == "text/xml" || strings.HasSuffix(mt, "+xml")
}
