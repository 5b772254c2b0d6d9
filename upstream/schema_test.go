package upstream_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"listingproxy/upstream"
)

// TestSchemaRows: each row of the listing schema is one its users can
// follow: a name used once, exactly the accessor of its kind (none for a
// hand-written part, which has no column either), the id first.
func TestSchemaRows(t *testing.T) {
	checkRows(t, "property", upstream.PropertyFields)
	checkRows(t, "agent", upstream.AgentFields)
}

func checkRows[R any](t *testing.T, record string, fields []upstream.Field[R]) {
	t.Helper()
	if len(fields) == 0 || fields[0].Kind != upstream.KindID {
		t.Errorf("%s: the first field is not the id", record)
	}
	seen := map[string]bool{}
	for _, f := range fields {
		if seen[f.Name] {
			t.Errorf("%s/%s: named twice", record, f.Name)
		}
		seen[f.Name] = true
		var set []upstream.Kind
		for kind, ok := range map[upstream.Kind]bool{
			upstream.KindID: f.ID != nil, upstream.KindText: f.Text != nil, upstream.KindInt: f.Int != nil,
			upstream.KindFloat: f.Float != nil, upstream.KindDate: f.Time != nil, upstream.KindFlag: f.Flag != nil,
		} {
			if ok {
				set = append(set, kind)
			}
		}
		want := f.Kind
		if want == upstream.KindInstant {
			want = upstream.KindDate // both read through Time
		}
		switch {
		case f.Kind == upstream.KindHand && (len(set) > 0 || f.Column != ""):
			t.Errorf("%s/%s: a hand-written part with an accessor or a column", record, f.Name)
		case f.Kind != upstream.KindHand && (len(set) != 1 || set[0] != want):
			t.Errorf("%s/%s: accessors of kinds %v, want exactly that of kind %d", record, f.Name, set, f.Kind)
		case f.Kind != upstream.KindHand && (len(f.Inner) > 0 || len(f.Attrs) > 0):
			t.Errorf("%s/%s: a scalar field with inner elements or attributes", record, f.Name)
		case f.XML == upstream.NotOnWire && f.Column == "":
			t.Errorf("%s/%s: neither on the wire nor in the database", record, f.Name)
		}
	}
}

// TestOneFieldFewFiles: a scalar field is named (as its wire name and
// column) by at most three non-test Go files: the schema, the demo's seed
// and at most one more. floor_size stands for any field.
func TestOneFieldFewFiles(t *testing.T) {
	var files []string
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); n == "testdata" || n == "node_modules" || strings.HasPrefix(n, ".") && n != ".." {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if strings.Contains(string(b), "floor_size") {
			files = append(files, filepath.ToSlash(path))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 || len(files) > 3 {
		t.Errorf("non-test Go files naming floor_size: %d %v, want 1 to 3", len(files), files)
	}
}
