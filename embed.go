// Package listingproxy holds the files shipped inside the binary: the default
// configuration that runs the embedded SQLite demo.
package listingproxy

import _ "embed"

// DefaultConfig is config.yaml as shipped. The service uses it when no
// -config flag is given and no config.yaml is in the working directory.
//
//go:embed config.yaml
var DefaultConfig []byte
