// Package crm owns the adapter that answers listingproxy's four listing
// operations (upstream.Backend) by calling a legacy HTTP endpoint, "the CRM",
// that already speaks the listing API in XML. Each tenant reaches the CRM
// with its own upstream credentials (HTTP Basic). The package turns the CRM's
// XML into the upstream domain model with the readers of listingproxy/wire,
// fed through its own bounded decoder; rendering stays with the proxy.
//
// It must not import proxy, cache or config: config turns configuration into
// Options, and the proxy consumes the Client through upstream.Backend.
//
// # Calls
//
//	ListProperties  GET {base}/{country}/properties.xml?{criteria}
//	GetProperty     GET {base}/{country}/properties/{id}.xml
//	ListAgents      GET {base}/{country}/agents.xml?{criteria}
//	GetAgent        GET {base}/{country}/agents/{id}.xml
//
// Every call carries the caller's context plus Options.Timeout, and takes
// one of Options.MaxConcurrency slots shared by the whole Client (a
// ceiling: cmd puts upstream/breaker's adaptive limit in front). A wait
// for a slot, or for room in the decode budget, that ends with Timeout is
// upstream.ErrBusy: a bound of listingproxy's own, not the CRM's failure.
//
// # Bounded answers
//
// An answer is decoded as it arrives, token by token (encoding/xml's
// Decoder), while its bytes are granted from the decode budget
// (Options.MaxDecodingBytes, budget.go) and within its deadline: the
// caller's context (for the proxy, cache.fill_timeout or the client's own
// deadline) and Options.Timeout. No copy of the body and no tree of the
// whole document is ever built: a list is read one record at a time into a
// small tree of the elements wire's readers read (unknown elements are skipped
// as they come), which is dropped once the record is in the model. The
// bounding lives in boundedDecoder (bounded.go), a token reader that knows
// nothing of the model, so another parser can be put behind it:
//
//   - bytes: Content-Length over Options.MaxBodyBytes is refused before a
//     byte is read; otherwise the body is read through a reader that stops
//     one byte past the cap, so no buffer grows beyond it;
//   - structure: more than Options.MaxElements elements (kept or skipped)
//     or deeper than Options.MaxDepth fails the call;
//   - records: of a list with more records than the limit it was asked
//     for (the proxy always sends one; the legacy ignored paging), only
//     the page is kept, and at most twice the limit is ever held, so tiny
//     records, each ~25 times its XML size in the model, cannot pile up;
//   - time: the decoder looks at the call's context every 256 tokens, so a
//     body already buffered stops within microseconds of the deadline.
//
// Memory for one answer is therefore the model it yields, plus the tree of
// one record, plus the decoder's buffers (the longest single text, up to
// about three times its size while it is copied). For text-heavy answers
// that is about 1.3 times the body kept and 3 times allocated; the worst
// case is many tiny known elements inside records (<photo/> is 8 bytes of
// XML, about 80 bytes of model and 100 of transient tree), bounded by
// MaxElements: about 20 MB at the default 100,000.
// The decode budget bounds the answers decoded at once by their bytes (at
// once from a Content-Length, else as they are read, in 64 KiB steps), so
// many small answers are decoded side by side while few huge ones are; it
// is a golang.org/x/sync/semaphore.Weighted. Figures are in
// docs/performance.md, "Hostile CRM answers". With Options.PassThrough each record is also kept
// whole, unknown elements included (about 106 bytes per kept element, so
// MaxElements still bounds an answer, at ~11 MB by default); figures in
// docs/crm.md, "Pass-through".
//
// # Failure mapping
//
//	CRM answer                                      Client returns
//	----------------------------------------------  -----------------------------------------
//	200, root <errors> (list calls)                 *upstream.CriteriaError, errors in CRM order
//	200, root <error> (single-resource calls)       *NotFoundError (errors.Is upstream.ErrNotFound)
//	200, root <error> (list calls)                  failure: "upstream error: <message>"
//	200, expected root, well-formed XML             the records
//	401 or 403                                      failure: upstream rejected the tenant's credentials
//	any other status than 200 (5xx, 404, 3xx...)    failure: "upstream status N"
//	content type neither XML nor absent (HTML...)   served when the body is a well-formed answer (counted,
//	                                                logged); else the body's failure, prefixed
//	                                                "unexpected content type \"text/html\": "
//	truncated or malformed XML, wrong root element  failure: "malformed XML" / "unexpected root element"
//	a value of a record that cannot be read         served: the record without it (counted, logged);
//	                                                a record without a readable id is left out
//	bytes not UTF-8 in a UTF-8 (or undeclared) doc  served: read as Windows-1252 (counted, logged)
//	another charset (declared, or the Content-Type  served: decoded to UTF-8 below the Recorder (counted),
//	charset of an undeclared document); UTF-16      the declaration then naming UTF-8
//	an XML 1.1 declaration                          served: read as 1.0 (counted, logged)
//	any other declared encoding                     failure: "malformed XML: ... unsupported charset"
//	body larger than Options.MaxBodyBytes           failure: "body exceeds the size limit of N bytes"
//	more than MaxElements elements, deeper than     failure: "answer has too many elements" /
//	MaxDepth                                        "answer nests too deep"
//	a list with more records than its limit asked   served: paged here, [offset, offset+limit) (counted, logged)
//	Options.Timeout elapsed (also mid-body)         failure: "upstream timed out after D"
//	no slot or decode budget within Options.Timeout upstream.ErrBusy (not a failure: a local bound)
//	connection refused, reset, DNS...               failure: "upstream request: ..."
//	a panic while reading the answer (our bug)      upstream.ErrInternal: logged with its stack, counted
//	                                                (Stats.Panics), not a failure for the breakers
//	tenant without credentials                      failure: "no upstream credentials for tenant"
//	caller's ctx cancelled or past its deadline     the ctx error, wrapped (errors.Is ctx.Err()); but a
//	                                                wait for a slot or budget its deadline ended is
//	                                                upstream.ErrBusy
//
// Failures are plain wrapped errors prefixed with the operation, such as
// "crm: list properties au: upstream status 502"; a failure caused by this
// package's own Timeout deliberately does not wrap context.DeadlineExceeded,
// so callers can tell an upstream timeout (a backend failure) from their own
// cancellation (not a failure). Only upstream.IsAnswer errors
// (*upstream.CriteriaError, upstream.ErrNotFound) are answers; everything
// else should count against a breaker.
//
// The CRM enforces its own permissions on the tenant's upstream user: full
// detail needs its "full" permission and raw prices its "prices" permission,
// so every field present is parsed; with Options.PassThrough each record is
// also kept as sent (upstream.Property.Legacy), and the proxy's writers pass
// it through, filtered for their caller, instead of rendering the model.
// A single-resource call that the CRM refuses for want of "full" comes back
// as the same single error as a missing record and therefore reads as not
// found, and a full list refused that way comes back as a criteria error on
// "detail": upstream users should hold both permissions.
//
// # Hydration of full-detail property lists
//
// A full-detail property list can be answered in two ways:
//
//   - one call: the list with detail=full;
//   - hydration: the list with detail=short (ids, last_updated, counts), then
//     each property's document from /properties/{id}.xml, fetched
//     concurrently (at most Options.HydrateConcurrency at a time, and never
//     more than MaxConcurrency upstream calls in all), in list order.
//     Documents are reused for Options.DocTTL from a small bounded cache
//     keyed by tenant, country and id (never shared between tenants), and
//     only while their last_updated still equals the one in the short list.
//     Concurrent fetches of one document are single-flighted. A property
//     that disappeared between the two calls (not found) is dropped.
//
// Options.Hydrate chooses: HydrateNever always makes one call,
// HydrateAlways always hydrates, and HydrateAuto (the default) hydrates only
// when it is likely to be cheaper: when the same tenant, country and
// criteria were answered within DocTTL and at least 80% of that answer's
// property documents are still cached. Otherwise it makes the one full call
// and seeds the document cache from it, so a repeated query is then answered
// by a short list plus a few document fetches. The rule counts upstream calls
// and bytes, not latencies: a hydrated repeat costs one short list (a fraction
// of the full body) and at most 20% of N document calls, run in parallel;
// a cold hydration would cost 1+N calls where one full list costs one.
// With DocTTL negative (no reuse), HydrateAuto never hydrates.
//
// Open homes that have ended by Options.Now are dropped from every property
// returned, so a reused document never shows a past open home.
package crm
