package redistier

import "listingproxy/cache"

// format is the first byte of a stored value; a value of another format
// (a newer or older release during a rolling deploy) is a miss, never
// damage. Format 3 added the checksum.
const format = 3

// encode and decode are the shared second-tier codec (cache.EncodeEntry)
// at this tier's format.
func encode(k cache.Key, gen uint64, e *cache.Entry) []byte {
	return cache.EncodeEntry(format, k, gen, e)
}

func decode(b []byte, k cache.Key) (*cache.Entry, uint64, error) {
	return cache.DecodeEntry(b, format, k)
}
