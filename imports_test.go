package listingproxy

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// importRule is what one package may import: the listingproxy packages it
// may use (exactly these), the third-party module prefixes, and standard
// library packages it must not use. docs/architecture.md states the same
// rules in prose; this table is what holds them.
type importRule struct {
	own    []string // listingproxy packages, relative to the module ("upstream", "wire")
	ext    []string // third-party import path prefixes
	notStd []string // standard library packages it must not import
}

// otelAPI is the OpenTelemetry trace API, never the SDK: packages below cmd
// and telemetry make spans through an injected TracerProvider.
var otelAPI = []string{"go.opentelemetry.io/otel/trace", "go.opentelemetry.io/otel/attribute", "go.opentelemetry.io/otel/codes"}

// importRules holds a row for every package of the module. cmd/... and
// bench/cmd/... (programs) may import anything and have no row.
var importRules = map[string]importRule{
	"":                       {}, // the embedded default configuration
	"normalize":              {own: []string{"internal/suggest"}, notStd: []string{"database/sql"}},
	"clientip":               {},
	"upstream":               {own: []string{"normalize"}},
	"upstream/breaker":       {own: []string{"upstream"}, ext: append([]string{"github.com/sony/gobreaker/v2"}, otelAPI...)},
	"upstream/sqlstore/demo": {notStd: []string{"database/sql"}},
	"upstream/sqlstore": {own: []string{"normalize", "upstream", "upstream/sqlstore/demo"},
		ext: append([]string{"github.com/cenkalti/backoff/v5", "github.com/hashicorp/golang-lru/v2", "github.com/jackc/pgx/v5", "github.com/go-sql-driver/mysql", "modernc.org/sqlite"}, otelAPI...)},
	"upstream/crm":    {own: []string{"internal/xmltext", "normalize", "upstream", "wire"}, ext: []string{"golang.org/x/sync/", "golang.org/x/text/", "github.com/beevik/etree", "github.com/hashicorp/golang-lru/v2"}},
	"wire":            {own: []string{"normalize", "upstream"}, ext: []string{"github.com/beevik/etree"}, notStd: []string{"encoding/json", "reflect", "database/sql"}},
	"cache":           {ext: append([]string{"github.com/dgraph-io/ristretto/v2", "github.com/hashicorp/golang-lru/v2", "github.com/klauspost/compress/", "golang.org/x/sync/"}, otelAPI...)},
	"cache/redistier": {own: []string{"cache"}, ext: append([]string{"github.com/cenkalti/backoff/v5", "github.com/redis/go-redis/v9", "github.com/sony/gobreaker/v2", "golang.org/x/sync/"}, otelAPI...)},
	"cache/disktier":  {own: []string{"cache"}, ext: []string{"modernc.org/sqlite"}},
	"openapi":         {}, // the embedded OpenAPI description
	"proxy": {own: []string{"cache", "clientip", "normalize", "openapi", "upstream", "wire"},
		ext:    append([]string{"golang.org/x/crypto/bcrypt", "golang.org/x/sync/", "golang.org/x/time/rate"}, otelAPI...),
		notStd: []string{"database/sql"}},
	"telemetry": {own: []string{"cache", "cache/disktier", "cache/redistier", "clientip", "upstream", "upstream/breaker", "upstream/crm"},
		ext: []string{"github.com/prometheus/client_golang/", "go.opentelemetry.io/"}, notStd: []string{"database/sql"}},
	"statuspage":       {own: []string{"cache", "cache/disktier", "cache/redistier", "telemetry", "upstream/breaker"}},
	"upstream/webhook": {own: []string{"upstream"}, ext: []string{"github.com/hashicorp/golang-lru/v2", "golang.org/x/time/rate"}},
	"upstream/poll":    {own: []string{"normalize", "upstream"}},
	"upstream/binlog":  {own: []string{"upstream"}, ext: []string{"github.com/go-mysql-org/go-mysql/", "github.com/go-sql-driver/mysql", "github.com/cenkalti/backoff/v5"}},
	"freshness":        {own: []string{"cache", "proxy", "telemetry", "upstream"}, notStd: []string{"database/sql"}},
	"admin":            {own: []string{"cache", "cache/disktier", "cache/redistier", "telemetry", "upstream/breaker"}, ext: []string{"golang.org/x/crypto/bcrypt", "golang.org/x/sync/semaphore", "golang.org/x/time/rate", "github.com/hashicorp/golang-lru/v2"}},
	"config": {own: []string{"cache", "cache/disktier", "cache/redistier", "clientip", "internal/connlimit", "internal/serving", "internal/suggest", "internal/warmup", "proxy", "telemetry",
		"upstream", "upstream/binlog", "upstream/breaker", "upstream/crm", "upstream/sqlstore", "upstream/webhook"}, ext: []string{"gopkg.in/yaml.v3", "golang.org/x/crypto/bcrypt"}},
	"docdiff":                {own: []string{"internal/xmltext"}, ext: []string{"github.com/beevik/etree"}},
	"docdiff/endpoints":      {own: []string{"docdiff", "internal/legacyfixture"}, ext: []string{"golang.org/x/sync/errgroup"}},
	"internal/memlimit":      {},
	"internal/onewrite":      {},
	"internal/progress":      {},
	"internal/secret":        {ext: []string{"golang.org/x/term"}},
	"internal/suggest":       {},
	"internal/serving":       {own: []string{"internal/connlimit", "internal/h2guard", "internal/onewrite", "internal/tlsreload"}, ext: []string{"golang.org/x/sys/unix"}},
	"internal/tlsreload":     {},
	"internal/warmup":        {own: []string{"cache", "proxy"}, ext: []string{"golang.org/x/time/rate"}},
	"internal/tcpproxy":      {},
	"internal/legacyfixture": {},
	"internal/xmltext":       {ext: []string{"golang.org/x/text/"}},
	"internal/crmchanges":    {own: []string{"upstream/webhook"}},
	"internal/connlimit":     {ext: []string{"github.com/hashicorp/golang-lru/v2", "golang.org/x/time/rate"}},
	"internal/h2guard":       {ext: []string{"golang.org/x/time/rate"}},
	"internal/testkit":       {own: []string{"normalize", "upstream"}},
}

// testOnly are packages that only _test.go files may import.
var testOnly = []string{"internal/testkit"}

// TestImportRules checks every package of the module against importRules:
// config stays in cmd, normalize is a leaf, proxy never reaches a database
// driver, cache knows no listingproxy package, the SDKs stay in telemetry
// and cmd. A package without a row fails the test: add one here and a line
// in docs/architecture.md.
func TestImportRules(t *testing.T) {
	pkgs := map[string][]string{} // package -> imports of its non-test files (tests may import anything)
	fset := token.NewFileSet()
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if path != "." && (strings.HasPrefix(name, ".") || name == "testdata" || name == "docs" || name == "deploy") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		pkg := filepath.ToSlash(filepath.Dir(path))
		if pkg == "." {
			pkg = ""
		}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if !strings.HasSuffix(path, "_test.go") {
				pkgs[pkg] = append(pkgs[pkg], p)
			}
		}
		if _, ok := pkgs[pkg]; !ok && !strings.HasSuffix(path, "_test.go") {
			pkgs[pkg] = nil
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	names := make([]string, 0, len(pkgs))
	for p := range pkgs {
		names = append(names, p)
	}
	sort.Strings(names)
	for _, pkg := range names {
		if isProgram(pkg) {
			continue
		}
		rule, ok := importRules[pkg]
		if !ok {
			t.Errorf("package %q has no row in importRules (imports_test.go): add one, and a line in docs/architecture.md", pkg)
			continue
		}
		for _, imp := range pkgs[pkg] {
			if msg := rule.check(imp); msg != "" {
				t.Errorf("%s imports %s: %s", orRoot(pkg), imp, msg)
			}
		}
	}
	for pkg, imps := range pkgs {
		for _, imp := range imps {
			own, ok := strings.CutPrefix(imp, "listingproxy/")
			if ok && slices.Contains(testOnly, own) {
				t.Errorf("%s imports %s outside a _test.go file: it is for tests only", orRoot(pkg), imp)
			}
		}
	}
}

// isProgram reports packages that are programs (main packages under cmd/ and
// bench/cmd/), which may import anything.
func isProgram(pkg string) bool {
	return pkg == "cmd" || strings.HasPrefix(pkg, "cmd/") || strings.HasPrefix(pkg, "bench/")
}

func (r importRule) check(imp string) string {
	if own, ok := strings.CutPrefix(imp, "listingproxy/"); ok || imp == "listingproxy" {
		if slices.Contains(r.own, own) {
			return ""
		}
		return "allowed listingproxy packages: " + list(r.own)
	}
	first, _, _ := strings.Cut(imp, "/")
	if !strings.Contains(first, ".") { // standard library
		if slices.Contains(r.notStd, imp) {
			return "this package must not use it"
		}
		return ""
	}
	for _, prefix := range r.ext {
		if imp == prefix || (strings.HasSuffix(prefix, "/") && strings.HasPrefix(imp, prefix)) ||
			strings.HasPrefix(imp, prefix+"/") {
			return ""
		}
	}
	return "allowed third-party modules: " + list(r.ext)
}

func list(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

func orRoot(pkg string) string {
	if pkg == "" {
		return "listingproxy"
	}
	return "listingproxy/" + pkg
}

// TestImportRulesCatchViolations makes sure the checker itself fails on the
// imports it exists to refuse.
func TestImportRulesCatchViolations(t *testing.T) {
	for _, tc := range []struct{ pkg, imp string }{
		{"normalize", "listingproxy/upstream"},
		{"proxy", "database/sql"},
		{"proxy", "listingproxy/config"},
		{"proxy", "listingproxy/upstream/sqlstore"},
		{"cache", "listingproxy/upstream"},
		{"cache", "go.opentelemetry.io/otel/sdk/trace"},
		{"upstream/crm", "listingproxy/proxy"},
		{"wire", "encoding/json"},
		{"telemetry", "listingproxy/config"},
	} {
		if importRules[tc.pkg].check(tc.imp) == "" {
			t.Errorf("importRules[%q] admits %s", tc.pkg, tc.imp)
		}
	}
	if _, err := os.Stat("go.mod"); err != nil {
		t.Fatalf("the test must run at the module root: %v", err)
	}
}
