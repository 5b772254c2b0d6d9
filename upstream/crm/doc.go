// Package crm owns the adapter that answers listingproxy's four listing
// operations (upstream.Backend) by calling a legacy HTTP endpoint, "the CRM",
// that already speaks the listing API in XML. Each tenant reaches the CRM
// with its own upstream credentials (HTTP Basic). The package turns the CRM's
// XML into the upstream domain model; rendering stays with the proxy.
//
// It must not import proxy, cache or config: cmd turns configuration into
// Options, and the proxy consumes the Client through upstream.Backend.
//
// # Calls
//
//	ListProperties  GET {base}/{country}/properties.xml?{criteria}
//	GetProperty     GET {base}/{country}/properties/{id}.xml
//	ListAgents      GET {base}/{country}/agents.xml?{criteria}
//	GetAgent        GET {base}/{country}/agents/{id}.xml
//
// Every call carries the caller's context plus Options.Timeout, and waits for
// one of Options.MaxConcurrency slots shared by the whole Client.
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
//	content type neither XML nor absent (HTML...)   failure: "unexpected content type"
//	truncated or malformed XML, wrong root element  failure: "malformed XML" / "unexpected root element"
//	body larger than Options.MaxBodyBytes           failure: "body exceeds the size limit of N bytes"
//	Options.Timeout elapsed (also mid-body)         failure: "upstream timed out after D"
//	connection refused, reset, DNS...               failure: "upstream request: ..."
//	tenant without credentials                      failure: "no upstream credentials for tenant"
//	caller's ctx cancelled or past its deadline     the ctx error, wrapped (errors.Is ctx.Err())
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
// so every field present is parsed and the proxy re-renders from the model.
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
