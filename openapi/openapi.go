// Package openapi holds the OpenAPI 3.1 description of the listing API as
// listingproxy implements it (openapi.json, written by hand next to this
// file), embedded in the binary and served at GET /openapi.json.
//
// openapi_test.go holds it to the code: every query key normalize accepts
// and no other, the routes (in proxy), and a schema for every golden JSON
// body. CI (.ci/run) validates it with @redocly/cli, validates the golden
// bodies and the compatibility switches' shapes against its schemas with
// ajv, and compiles and runs a TypeScript client generated from it
// (ts-check/).
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
