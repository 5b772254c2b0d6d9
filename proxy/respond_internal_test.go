package proxy

import (
	"bytes"
	"strconv"
	"strings"
	"testing"
	"time"

	"listingproxy/cache"
)

// TestEntryHeaders: an entry's precomputed header values are its
// Content-Type, ETag and Content-Length and its gzip form's, whatever the
// body (empty, too small to compress, compressed) and whatever the ETag
// (an entry read from a second tier may carry one of any length, which
// then does not fit the values' own bytes), whether made with the entry
// (cache.NewEntryWith) or after it (PrepareEntry); and each value is a
// header of its own (appending to one does not write into the next).
func TestEntryHeaders(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	const ct = "application/json; charset=utf-8"
	bodies := [][]byte{nil, []byte("<x/>"), bytes.Repeat([]byte("<property><id>1</id></property>"), 400)}
	etags := []string{"", `""`, `"` + strings.Repeat("e", 32) + `"`, `"` + strings.Repeat("f", 200) + `"`}
	for _, body := range bodies {
		for _, etag := range etags {
			for _, with := range []bool{true, false} {
				var e *cache.Entry
				if with {
					var eh *entryHeaders
					e, eh = cache.NewEntryWith[entryHeaders](body, ct, false, now)
					e.ETag = etag
					eh.fill(e)
				} else {
					e = cache.NewEntry(body, ct, false, now)
					e.ETag = etag
					PrepareEntry(e)
				}
				eh := e.Meta.(*entryHeaders)
				gzETag, gzLength := "", ""
				if e.Gzip != nil {
					gzETag, gzLength = gzipETag(etag), strconv.Itoa(len(e.Gzip))
				}
				if len(body) > 1000 && e.Gzip == nil {
					t.Fatal("a large repetitive body has no gzip form")
				}
				got := [][]string{eh.contentType(), eh.etag(), eh.length(), eh.etagGzip(), eh.lengthGzip()}
				want := []string{ct, etag, strconv.Itoa(len(body)), gzETag, gzLength}
				for i := range want {
					if len(got[i]) != 1 || got[i][0] != want[i] {
						t.Errorf("body of %d bytes, ETag of %d, with entry %v: value %d = %q, want %q", len(body), len(etag), with, i, got[i], want[i])
					}
					if cap(got[i]) != 1 {
						t.Errorf("value %d has room to append into its neighbour", i)
					}
				}
			}
		}
	}
}

// TestAgeValue: the Age header's value is the whole seconds of the age
// (none below zero), below the table's reach, at its edges and past it,
// each a header of its own.
func TestAgeValue(t *testing.T) {
	for _, secs := range []int64{-3, 0, 1, 9, 10, 59, 60, 999, 1000, 4095, 4096, 4097, 5120, 86_400, 1 << 32} {
		for _, extra := range []time.Duration{0, time.Second - 1} {
			got := ageValue(time.Duration(secs)*time.Second + extra)
			want := strconv.FormatInt(max(secs, 0), 10)
			if len(got) != 1 || cap(got) != 1 || got[0] != want {
				t.Errorf("ageValue(%ds + %v) = %q (cap %d), want [%q]", secs, extra, got, cap(got), want)
			}
		}
	}
}
