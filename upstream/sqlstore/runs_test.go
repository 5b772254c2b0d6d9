package sqlstore

import (
	"fmt"
	"testing"
)

// TestRuns: each run of rows of the same owner and kind reaches f as one
// slice, in order, and appending to it never writes over the next run.
func TestRuns(t *testing.T) {
	r := newRuns[string](1)
	for _, row := range []struct {
		owner, kind int
		v           string
	}{{0, 0, "a"}, {0, 0, "b"}, {0, 1, "c"}, {2, 1, "d"}, {2, 1, "e"}, {1, 0, "f"}, {2, 1, "g"}} {
		r.add(row.owner, row.kind, row.v)
	}
	var got []string
	var first []string
	r.each(func(owner, kind int, rows []string) {
		got = append(got, fmt.Sprint(owner, kind, rows))
		if first == nil {
			first = rows
		}
	})
	want := []string{"0 0 [a b]", "0 1 [c]", "2 1 [d e]", "1 0 [f]", "2 1 [g]"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("runs = %q, want %q", got, want)
	}
	_ = append(first, "x")
	if r.rows[2] != "c" {
		t.Errorf("appending to a run wrote over the next: %q", r.rows)
	}
	if got := join(join([]string{}, []string{"d", "e"}), []string{"g"}); fmt.Sprint(got) != "[d e g]" {
		t.Errorf("join = %q", got)
	}
}
