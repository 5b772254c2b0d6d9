package cache

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"time"
)

// castagnoli is CRC-32C's table: the checksum of a stored value.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// EncodeEntry is an entry's stored form in a second tier (Redis, a
// local disk), the first byte format naming the tier's version of it: format, generation, stored-at (Unix
// nanoseconds), negative flag, then the Key's four fields, content type,
// ETag, body and gzip form, each length-prefixed, then the tag count and
// the tags (8 bytes each, little-endian), and last the CRC-32C of all
// that (4 bytes, little-endian).
//
// The checksum covers the whole value rather than the body against its
// ETag: the gzip form, the tags and the generation decide what is served
// as much as the body does (a damaged generation or tag list could bring
// a purged body back), and CRC-32C is one instruction per 8 bytes on
// amd64 and arm64, so a 45 KB entry costs microseconds on a first-tier
// miss. It detects every error of up to 32 consecutive bits and any other
// with probability 1 - 2^-32: this is against damage (a bit flip, a
// truncated or overwritten value), not against someone who may write to
// Redis, who could write any entry anyway.
func EncodeEntry(format byte, k Key, gen uint64, e *Entry) []byte {
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

// ErrDamagedEntry is DecodeEntry's error for a damaged value.
var ErrDamagedEntry = errors.New("damaged entry")

// DecodeEntry returns the entry stored in b by EncodeEntry with format if
// it is k's (nil, 0, nil when it is another key's or of another format),
// and ErrDamagedEntry when b is damaged: its checksum does not match, or
// its fields do not parse. The entry's slices are b's.
func DecodeEntry(b []byte, format byte, k Key) (*Entry, uint64, error) {
	if len(b) == 0 || b[0] != format {
		return nil, 0, nil
	}
	if len(b) < 5 {
		return nil, 0, fmt.Errorf("%w (%d bytes)", ErrDamagedEntry, len(b))
	}
	body, sum := b[:len(b)-4], binary.LittleEndian.Uint32(b[len(b)-4:])
	if crc32.Checksum(body, castagnoli) != sum {
		return nil, 0, fmt.Errorf("%w (checksum)", ErrDamagedEntry)
	}
	b = body[1:]
	gen, n := binary.Uvarint(b)
	if n <= 0 {
		return nil, 0, ErrDamagedEntry
	}
	b = b[n:]
	at, n := binary.Varint(b)
	if n <= 0 || len(b) < n+1 {
		return nil, 0, ErrDamagedEntry
	}
	neg := b[n] == 1
	b = b[n+1:]
	next := func() ([]byte, error) {
		l, n := binary.Uvarint(b)
		if n <= 0 || uint64(len(b)-n) < l {
			return nil, ErrDamagedEntry
		}
		f := b[n : n+int(l) : n+int(l)] // capped: an append to one field never writes the next
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
		return nil, 0, nil // another key with the same hash
	}
	nt, n := binary.Uvarint(b)
	if n <= 0 || uint64(len(b)-n) != 8*nt {
		return nil, 0, fmt.Errorf("%w (tags)", ErrDamagedEntry)
	}
	b = b[n:]
	e := &Entry{
		ContentType: string(f[4]), ETag: string(f[5]), Body: f[6],
		Negative: neg, StoredAt: time.Unix(0, at),
	}
	if nt > 0 {
		e.Tags = make([]Tag, nt)
		for i := range e.Tags {
			e.Tags[i] = Tag(binary.LittleEndian.Uint64(b[8*i:]))
		}
	}
	if len(f[7]) > 0 {
		e.Gzip = f[7]
	}
	return e, gen, nil
}
