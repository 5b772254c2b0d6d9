package sqlstore

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"listingproxy/upstream"
)

// TestStatementCacheOneTextPerStatement lists full pages of every size from
// 1 to 25 at several offsets: the page statement binds its limit and
// offset, and the child-table statement binds the page's ids as one value
// (inIDs), so the SQLite store prepares three statements in all (with the
// tenant's lookup), not one per page size.
func TestStatementCacheOneTextPerStatement(t *testing.T) {
	st, _ := seededSQLite(t)
	ctx := context.Background()
	s := upstream.Scope{Tenant: "harbour", Country: "au"}
	for limit := 1; limit <= 25; limit++ {
		for _, offset := range []int{0, 7, 390} {
			if _, err := st.ListProperties(ctx, s, parseProps(t, fmt.Sprintf("detail=full&order=price&limit=%d&offset=%d", limit, offset))); err != nil {
				t.Fatal(err)
			}
		}
	}
	// tenant lookup, page, children (agents, media, open homes)
	if texts := st.stmts.texts(); len(texts) != 3 {
		t.Errorf("%d statements prepared, want 3 (one per statement of a full list):\n%s", len(texts), strings.Join(texts, "\n"))
	}
}

// TestStatementCacheEvictsInUse runs lists of many shapes from several
// goroutines through a cache of two statements, so statements are evicted
// and closed while other queries still read their rows: every answer must
// be the one a store without the cache gives.
func TestStatementCacheEvictsInUse(t *testing.T) {
	st, _ := seededSQLite(t)
	ctx := context.Background()
	s := upstream.Scope{Tenant: "harbour", Country: "au"}
	var queries []string
	for _, order := range []string{"id", "price", "suburb", "bedrooms", "last_updated", "agency_id"} {
		queries = append(queries, "detail=full&limit=12&order="+order, "limit=5&offset=3&order="+order)
	}
	want := unpreparedAnswers(t, st, s, queries)
	st.stmts.mu.Lock()
	st.stmts.lru.Resize(2)
	st.stmts.mu.Unlock()

	const workers = 6
	errs := make(chan error, workers)
	for w := range workers {
		go func() {
			for round := range 4 {
				for k := range queries {
					i := (k + w + round) % len(queries)
					got, err := st.ListProperties(ctx, s, parseProps(t, queries[i]))
					if err == nil {
						if diff := cmp.Diff(want[i], got); diff != "" {
							err = fmt.Errorf("%s: differs from the unprepared answer (-want +got):\n%s", queries[i], diff)
						}
					}
					if err != nil {
						errs <- err
						return
					}
				}
			}
			errs <- nil
		}()
	}
	for range workers {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	if n := len(st.stmts.texts()); n > 2 {
		t.Errorf("%d statements cached, want at most 2", n)
	}
}

// unpreparedAnswers returns st's answers to queries in scope s with its
// statement cache off: the reference answers of the cache's tests.
func unpreparedAnswers(t *testing.T, st *Store, s upstream.Scope, queries []string) [][]upstream.Property {
	t.Helper()
	cached := st.stmts
	st.stmts = nil
	defer func() { st.stmts = cached }()
	want := make([][]upstream.Property, len(queries))
	for i, q := range queries {
		ps, err := st.ListProperties(context.Background(), s, parseProps(t, q))
		if err != nil {
			t.Fatal(err)
		}
		if len(ps) == 0 {
			t.Fatalf("%s: no properties; the test needs some", q)
		}
		want[i] = ps
	}
	return want
}
