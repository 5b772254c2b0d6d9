package sqlstore

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestInBuckets: rows reach f bucket by bucket, each bucket's in cmp's
// order, as sorting them all by bucket then cmp puts them; appending to a
// bucket's slice never writes over the next bucket.
func TestInBuckets(t *testing.T) {
	type row struct{ bucket, key, id int }
	rng := rand.New(rand.NewPCG(1, 2))
	for n := range 200 {
		buckets := 1 + rng.IntN(8)
		rows := make([]row, n)
		for i := range rows {
			// Few keys, so that equal keys occur; id breaks the ties, as the
			// callers' orders are total.
			rows[i] = row{rng.IntN(buckets), rng.IntN(4), i}
		}
		if n%3 == 0 { // mostly in order already, as from an index
			slices.SortFunc(rows, func(x, y row) int { return cmp.Or(cmp.Compare(x.bucket, y.bucket), cmp.Compare(x.key, y.key)) })
		}
		byKey := func(x, y *row) int { return cmp.Or(cmp.Compare(x.key, y.key), cmp.Compare(x.id, y.id)) }
		want := slices.Clone(rows)
		slices.SortFunc(want, func(x, y row) int { return cmp.Or(cmp.Compare(x.bucket, y.bucket), byKey(&x, &y)) })

		var got []row
		var parts [][]row
		last := -1
		inBuckets(rows, buckets, func(r *row) int { return r.bucket }, byKey, func(r *row) row { return *r },
			func(b int, values []row) {
				if b <= last || len(values) == 0 {
					t.Fatalf("%d rows: bucket %d (%d rows) after bucket %d", n, b, len(values), last)
				}
				last = b
				for _, v := range values {
					if v.bucket != b {
						t.Fatalf("%d rows: row %v in bucket %d", n, v, b)
					}
				}
				got = append(got, values...)
				parts = append(parts, values)
			})
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("%d rows in %d buckets: got %v, want %v", n, buckets, got, want)
		}
		for i, s := range parts {
			_ = append(s, row{-1, -1, -1})
			if i+1 < len(parts) && parts[i+1][0].bucket == -1 {
				t.Fatalf("appending to bucket %d wrote over the next", s[0].bucket)
			}
		}
	}
	if got := join(join([]string{}, []string{"d", "e"}), []string{"g"}); fmt.Sprint(got) != "[d e g]" {
		t.Errorf("join = %q", got)
	}
}
