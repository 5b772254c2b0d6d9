package disktier

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"time"

	"listingproxy/cache"
)

// format is the first byte of a stored value; a value of another format
// (written by another release) is a miss, never damage.
const format = 1

// castagnoli is CRC-32C's table: the checksum of a stored value.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

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

// encode is an entry's stored form, as cache/redistier stores one in Redis:
// format, generation, stored-at (Unix nanoseconds), negative flag, then the
// Key's four fields, content type, ETag, body and gzip form, each
// length-prefixed, then the tag count and the tags (8 bytes each,
// little-endian), and last the CRC-32C of all that (4 bytes,
// little-endian). One checksum of the whole value: the gzip form, the tags
// and the generation decide what is served as much as the body does (a
// damaged generation or tag list could bring a purged body back). It is
// against damage (a torn or overwritten page, a bit flip), not against
// someone who may write the file.
func encode(k cache.Key, gen uint64, e *cache.Entry) []byte {
	fields := [...]string{k.Tenant, k.Resource, k.Scope, k.Variant, e.ContentType, e.ETag}
	n := 1 + 4 + 4*binary.MaxVarintLen64 + len(e.Body) + len(e.Gzip) + 8*binary.MaxVarintLen64 + 8*len(e.Tags)
	for _, f := range fields {
		n += len(f)
	}
	b := make([]byte, 0, n)
	b = append(b, format)
	b = binary.AppendUvarint(b, gen)
	b = binary.AppendVarint(b, e.StoredAt.UnixNano())
	neg := byte(0)
	if e.Negative {
		neg = 1
	}
	b = append(b, neg)
	for _, f := range fields {
		b = binary.AppendUvarint(b, uint64(len(f)))
		b = append(b, f...)
	}
	for _, f := range [...][]byte{e.Body, e.Gzip} {
		b = binary.AppendUvarint(b, uint64(len(f)))
		b = append(b, f...)
	}
	b = binary.AppendUvarint(b, uint64(len(e.Tags)))
	for _, t := range e.Tags {
		b = binary.LittleEndian.AppendUint64(b, uint64(t))
	}
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

var errCorrupt = errors.New("disktier: corrupt entry")

// decode returns the entry stored in b if it is k's (nil, 0, nil when it
// is another key's or of another format), and errCorrupt when b is
// damaged: its checksum does not match, or its fields do not parse. The
// entry's slices are b's.
func decode(b []byte, k cache.Key) (*cache.Entry, uint64, error) {
	if len(b) == 0 || b[0] != format {
		return nil, 0, nil
	}
	if len(b) < 5 {
		return nil, 0, fmt.Errorf("%w (%d bytes)", errCorrupt, len(b))
	}
	body, sum := b[:len(b)-4], binary.LittleEndian.Uint32(b[len(b)-4:])
	if crc32.Checksum(body, castagnoli) != sum {
		return nil, 0, fmt.Errorf("%w (checksum)", errCorrupt)
	}
	b = body[1:]
	gen, n := binary.Uvarint(b)
	if n <= 0 {
		return nil, 0, errCorrupt
	}
	b = b[n:]
	at, n := binary.Varint(b)
	if n <= 0 || len(b) < n+1 {
		return nil, 0, errCorrupt
	}
	neg := b[n] == 1
	b = b[n+1:]
	next := func() ([]byte, error) {
		l, n := binary.Uvarint(b)
		if n <= 0 || uint64(len(b)-n) < l {
			return nil, errCorrupt
		}
		f := b[n : n+int(l) : n+int(l)]
		b = b[n+int(l):]
		return f, nil
	}
	var f [8][]byte
	for i := range f {
		v, err := next()
		if err != nil {
			return nil, 0, fmt.Errorf("%w (field %d)", err, i)
		}
		f[i] = v
	}
	if string(f[0]) != k.Tenant || string(f[1]) != k.Resource || string(f[2]) != k.Scope || string(f[3]) != k.Variant {
		return nil, 0, nil // another key with the same id
	}
	nt, n := binary.Uvarint(b)
	if n <= 0 || uint64(len(b)-n) != 8*nt {
		return nil, 0, fmt.Errorf("%w (tags)", errCorrupt)
	}
	b = b[n:]
	e := &cache.Entry{
		ContentType: string(f[4]), ETag: string(f[5]), Body: f[6],
		Negative: neg, StoredAt: time.Unix(0, at),
	}
	if nt > 0 {
		e.Tags = make([]cache.Tag, nt)
		for i := range e.Tags {
			e.Tags[i] = cache.Tag(binary.LittleEndian.Uint64(b[8*i:]))
		}
	}
	if len(f[7]) > 0 {
		e.Gzip = f[7]
	}
	return e, gen, nil
}
