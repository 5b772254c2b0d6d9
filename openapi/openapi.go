// Package openapi holds the OpenAPI 3.1 description of the listing API as
// listingproxy implements it (openapi.json), embedded in the binary and
// served at GET /openapi.json.
//
// openapi.json is built by document_test.go (go test ./openapi -run
// TestDocument -update): its schemas and texts are written there, the query
// parameters come from normalize.QueryKeys and the examples from the golden
// bodies of testdata/golden, so TestDocument fails when either changes and
// the file has not followed. The tests also hold it to the code: each
// parameter single- or multi-valued as normalize parses it, the routes (in
// proxy), a schema for every golden JSON body. CI (.ci/run) validates it
// with @redocly/cli, validates the golden bodies and the compatibility
// switches' shapes against its schemas with ajv, and compiles and runs a
// TypeScript client generated from it (ts-check/).
package openapi

import (
	"crypto/sha256"
	_ "embed"
	"encoding/base64"
)

// Document is openapi.json as shipped.
//
//go:embed openapi.json
var Document []byte

// ETag is Document's strong entity tag: its SHA-256, so it changes with
// the document and nothing else.
var ETag = func() string {
	sum := sha256.Sum256(Document)
	return `"` + base64.RawURLEncoding.EncodeToString(sum[:16]) + `"`
}()
