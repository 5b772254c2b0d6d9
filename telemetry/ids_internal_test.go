package telemetry

import (
	"encoding/hex"
	"strconv"
	"testing"
)

// TestHexDigits: each of the 16 nibble values, in each of the eight bytes,
// becomes strconv's lowercase hex digit for it, and its neighbours'
// digits are their own.
func TestHexDigits(t *testing.T) {
	for v := range uint64(16) {
		for pos := range 8 {
			other := (v + 7) % 16 // a different nibble beside it
			var n uint64
			for i := range 8 {
				if i == pos {
					n |= v << (8 * i)
				} else {
					n |= other << (8 * i)
				}
			}
			got := hexDigits(n)
			for i := range 8 {
				want := other
				if i == pos {
					want = v
				}
				if c := byte(got >> (8 * i)); string(c) != strconv.FormatUint(want, 16) {
					t.Errorf("nibble %d at byte %d: byte %d is %q, want %q", v, pos, i, c, strconv.FormatUint(want, 16))
				}
			}
		}
	}
}

// TestIDBatch: every id is 32 lowercase hex digits (16 bytes), no two ids
// of many batches are alike, and every digit position takes all 16
// values: the ids carry 128 random bits, not a constant part.
func TestIDBatch(t *testing.T) {
	seen := map[string]bool{}
	var digits [32]map[byte]bool
	for i := range digits {
		digits[i] = map[byte]bool{}
	}
	for range 20 {
		b := newIDBatch()
		for _, id := range b.vals {
			raw, err := hex.DecodeString(id)
			if err != nil || len(raw) != 16 || hex.EncodeToString(raw) != id {
				t.Fatalf("id %q: not 32 lowercase hex digits (%v)", id, err)
			}
			if seen[id] {
				t.Fatalf("id %q made twice", id)
			}
			seen[id] = true
			for i := range id {
				digits[i][id[i]] = true
			}
		}
	}
	for i, d := range digits {
		if len(d) != 16 {
			t.Errorf("position %d took %d of the 16 digits over %d ids", i, len(d), len(seen))
		}
	}
}
