package wire

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"math"
	"time"

	"listingproxy/normalize"
	"listingproxy/upstream"
)

// A source document is a backend's answer kept once for every variant of a
// request (the proxy's shared fetch): written by the writers with
// SourceOptions (everything, unfiltered: raw prices, unknown fields, every
// open home) and read back by ReadSourceList or ReadSource, which keep the
// records (ReadOptions.Keep), so each variant is then written, filtered
// for its caller, as if from the backend's own answer. Records that came
// without a legacy source are written by the model writers, whose output
// reads back to the same records (TestRoundTrip) and writes the same bytes
// (TestDocumentMatchesWriters).

// SourceOptions are the writers' options for a source document of the
// given detail in loc.
func SourceOptions(d normalize.Detail, loc *time.Location) Options {
	return Options{Detail: d, Prices: true, Unknown: true, Location: loc}
}

// ReadSourceList reads a source list document of properties or agents.
func ReadSourceList[T any](src []byte, loc *time.Location, full bool) ([]T, error) {
	d := NewRawDecoder(bytes.NewReader(src))
	ro := ReadOptions{Keep: true}
	var (
		out any
		err error
	)
	switch any((*T)(nil)).(type) {
	case *upstream.Property:
		out, err = ReadPropertyList(d, loc, full, math.MaxInt, ro)
	case *upstream.Agent:
		out, err = ReadAgentList(d, full, math.MaxInt, ro)
	default:
		return nil, fmt.Errorf("wire: no source list of %T", *new(T))
	}
	if err != nil {
		return nil, err
	}
	return out.([]T), nil
}

// ReadSource reads a source single-resource document.
func ReadSource[T any](src []byte, loc *time.Location) (T, error) {
	d := NewRawDecoder(bytes.NewReader(src))
	ro := ReadOptions{Keep: true}
	var (
		out any
		err error
		z   T
	)
	switch any((*T)(nil)).(type) {
	case *upstream.Property:
		out, err = ReadProperty(d, loc, ro)
	case *upstream.Agent:
		out, err = ReadAgent(d, ro)
	default:
		return z, fmt.Errorf("wire: no source document of %T", z)
	}
	if err != nil {
		return z, err
	}
	return out.(T), nil
}

// ReadAnswer reads an error document (the writers' AppendErrors or
// AppendError) back into the answer it carries: *upstream.CriteriaError or
// *NotFoundError; anything else is a failure.
func ReadAnswer(src []byte) error {
	d := xml.NewDecoder(bytes.NewReader(src))
	start, _, err := rootElement(d)
	if err != nil {
		return err
	}
	n, err := readNode(d, start)
	if err != nil {
		return err
	}
	return answerError(n, n.tag == "error")
}
