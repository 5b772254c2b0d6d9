package proxy

import (
	"context"
	"errors"
	"net/http"

	"listingproxy/normalize"
	"listingproxy/upstream"
)

// Error is an HTTP-facing error: what the client sees (Status, Message or
// Fields) is kept apart from what is logged (Err).
type Error struct {
	Status  int
	Message string           // single-error body
	Fields  normalize.Errors // error-list body, when set
	Err     error            // detail for the log only
}

func (e *Error) Error() string {
	if e.Err != nil {
		return e.Message + ": " + e.Err.Error()
	}
	if e.Fields != nil {
		return e.Fields.Error()
	}
	return e.Message
}

func (e *Error) Unwrap() error { return e.Err }

// Messages the service sends.
const (
	msgUnauthorized   = "Authentication required: a valid username and password are needed"
	msgNeedFull       = "Full detail requires the full permission"
	msgUnavailable    = "The listing service is temporarily unavailable; please try again shortly"
	msgInternal       = "internal error"
	msgNotFound       = "Not found"
	msgMethod         = "Method not allowed: use GET or HEAD"
	msgThrottled      = "Too many failed sign-in attempts; please try again later"
	msgBusy           = "Too many sign-in attempts at once; please try again shortly"
	msgTenantLimit    = "Too many requests; please slow down and try again shortly"
	retryAfterSeconds = "15"
)

// classify maps any error a handler returns to the client-facing Error. It
// is the one table from error to HTTP status:
//
//	*Error                   its own status and body
//	normalize.Errors         200, error list (the spec's criteria errors)
//	*upstream.CriteriaError  200, error list (criteria rejected by a legacy backend)
//	context.Canceled         499 (client gone; logged only)
//	any other error          503 + Retry-After, single error (backend failure,
//	                         timeout, open breaker)
func classify(err error) *Error {
	var e *Error
	var fe normalize.Errors
	var ce *upstream.CriteriaError
	switch {
	case errors.As(err, &e):
		return e
	case errors.As(err, &fe):
		return &Error{Status: http.StatusOK, Fields: fe}
	case errors.As(err, &ce):
		return &Error{Status: http.StatusOK, Fields: ce.Errors}
	case errors.Is(err, context.Canceled):
		return &Error{Status: 499, Message: msgUnavailable, Err: err}
	default:
		return &Error{Status: http.StatusServiceUnavailable, Message: msgUnavailable, Err: err}
	}
}
