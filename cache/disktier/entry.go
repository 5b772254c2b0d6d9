package disktier

import (
	"crypto/sha256"
	"encoding/binary"

	"listingproxy/cache"
)

// format is the first byte of a stored value; a value of another format
// (written by another release) is a miss, never damage.
const format = 1

// keyID is an entry's row id: a SHA-256 of the whole cache.Key, each field
// length-prefixed. The stored value repeats the Key, which Get compares,
// so a collision costs a miss, never another key's body.
func keyID(k cache.Key) []byte {
	h := sha256.New()
	var n [binary.MaxVarintLen64]byte
	for _, f := range [...]string{k.Tenant, k.Resource, k.Scope, k.Variant} {
		h.Write(n[:binary.PutUvarint(n[:], uint64(len(f)))])
		h.Write([]byte(f))
	}
	return h.Sum(nil)
}

// encode and decode are the shared second-tier codec (cache.EncodeEntry,
// the format cache/redistier stores in Redis) at this tier's format.
func encode(k cache.Key, gen uint64, e *cache.Entry) []byte {
	return cache.EncodeEntry(format, k, gen, e)
}

func decode(b []byte, k cache.Key) (*cache.Entry, uint64, error) {
	return cache.DecodeEntry(b, format, k)
}
