package telemetry

import (
	"encoding/hex"
	"testing"
)

// TestHexPairs: the table of newIDBatch's digits is hex.Encode's, byte by
// byte, so the ids are the lowercase hex of their random bytes.
func TestHexPairs(t *testing.T) {
	for c := range 256 {
		if got, want := hexPairs[2*c:2*c+2], hex.EncodeToString([]byte{byte(c)}); got != want {
			t.Errorf("byte %#x: %q, want %q", c, got, want)
		}
	}
	b := newIDBatch()
	for _, id := range b.vals {
		raw, err := hex.DecodeString(id)
		if err != nil || len(raw) != 16 || hex.EncodeToString(raw) != id {
			t.Errorf("id %q: not 32 lowercase hex digits (%v)", id, err)
		}
	}
}
