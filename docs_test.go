package listingproxy

import (
	"bufio"
	"bytes"
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"

	"listingproxy/config"
)

// The documentation's cross-references are checked here, so that a page
// rewritten, a heading renamed or a key removed cannot leave a reference
// pointing at nothing: every relative link of README.md, docs/*.md,
// deploy/*.md and bench/NOTES.md reaches a file and, with an #anchor, a
// heading of it (by GitHub's rules for heading ids); every page a comment
// cites (the configuration files, the deployment files, the bench scripts,
// Go comments) is a file of the repository, and the section it names in
// quotes is a heading of that page; and every key docs/configuration.md
// lists is a key the config package decodes.

// linkedDocs are the Markdown files whose links are checked.
func linkedDocs(t *testing.T) []string {
	t.Helper()
	docs, err := filepath.Glob("docs/*.md")
	if err != nil || len(docs) == 0 {
		t.Fatalf("docs/*.md: %v (%d files)", err, len(docs))
	}
	deploy, _ := filepath.Glob("deploy/*.md")
	return append(append([]string{"README.md", "bench/NOTES.md"}, docs...), deploy...)
}

// mdLine is a line of a Markdown file outside fenced code blocks.
type mdLine struct {
	n    int
	text string
}

var codeSpan = regexp.MustCompile("`+[^`]*`+")

// mdLines returns the lines of a Markdown document that are not inside a
// fenced code block (a link or heading in an example is not a reference).
func mdLines(src []byte) []mdLine {
	var out []mdLine
	fence := ""
	sc := bufio.NewScanner(bytes.NewReader(src))
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		trimmed := strings.TrimLeft(line, " ")
		if len(line)-len(trimmed) <= 3 {
			for _, f := range []string{"```", "~~~"} {
				if strings.HasPrefix(trimmed, f) {
					switch {
					case fence == "":
						fence = f
						line = ""
					case fence == f:
						fence = ""
						line = ""
					}
				}
			}
		}
		if fence != "" || line == "" {
			continue
		}
		out = append(out, mdLine{n, line})
	}
	return out
}

var (
	atxHeading = regexp.MustCompile(`^ {0,3}(#{1,6})[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$`)
	leadIn     = regexp.MustCompile(`^(?:\*\*([^*\s][^*]*)\*\*|\*([^*\s][^*]*)\*)`)
	mdLink     = regexp.MustCompile(`\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)`)
	mdRefDef   = regexp.MustCompile(`^ {0,3}\[[^\]]+\]:\s+<?(\S+?)>?(?:\s|$)`)
	inlineLink = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)
	htmlTag    = regexp.MustCompile(`<[^>]+>`)
)

// headingText is a heading as GitHub renders it to text: code spans keep
// their content, links their text, tags and emphasis go.
func headingText(raw string) string {
	s := strings.ReplaceAll(raw, "`", "")
	s = inlineLink.ReplaceAllString(s, "$1")
	return htmlTag.ReplaceAllString(s, "")
}

// slug is GitHub's id for a heading: lower case, letters, digits, "-" and
// "_" kept, spaces made "-", everything else dropped.
func slug(text string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(text)) {
		switch {
		case unicode.IsLetter(r) || unicode.IsNumber(r) || r == '_' || r == '-':
			b.WriteRune(r)
		case r == ' ':
			b.WriteByte('-')
		}
	}
	return b.String()
}

// mdDoc is what other files may point at in a Markdown document.
type mdDoc struct {
	anchors  map[string]bool // GitHub ids of its headings (a repeated one gets -1, -2, …)
	sections []string        // the headings' text, and the bold or italic lead-ins of paragraphs
}

type docCache map[string]*mdDoc

func (c docCache) get(t *testing.T, file string) *mdDoc {
	t.Helper()
	if d, ok := c[file]; ok {
		return d
	}
	src, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	d := &mdDoc{anchors: map[string]bool{}}
	seen := map[string]int{}
	for _, l := range mdLines(src) {
		if m := leadIn.FindStringSubmatch(l.text); m != nil {
			d.sections = append(d.sections, headingText(m[1]+m[2]))
		}
		m := atxHeading.FindStringSubmatch(l.text)
		if m == nil {
			continue
		}
		text := headingText(m[2])
		id := slug(text)
		if n := seen[id]; n > 0 {
			d.anchors[fmt.Sprintf("%s-%d", id, n)] = true
		} else {
			d.anchors[id] = true
		}
		seen[id]++
		d.sections = append(d.sections, text)
	}
	c[file] = d
	return d
}

// checkTarget reports what is wrong with a relative link target written in
// file ("" when it resolves).
func (c docCache) checkTarget(t *testing.T, file, target string) string {
	t.Helper()
	p, anchor, _ := strings.Cut(target, "#")
	dest := file
	if p != "" {
		dest = path.Join(path.Dir(file), p)
		if _, err := os.Stat(dest); err != nil {
			return fmt.Sprintf("no file %s", dest)
		}
	}
	if anchor == "" || !strings.HasSuffix(dest, ".md") {
		return ""
	}
	if !c.get(t, dest).anchors[anchor] {
		return fmt.Sprintf("no heading of %s has the id %q", dest, anchor)
	}
	return ""
}

var scheme = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)

// hashComment is the start of a comment line in YAML, shell and the like:
// removed, so that a citation wrapped over comment lines reads as one.
var hashComment = regexp.MustCompile(`(?m)^[ \t]*#+[ \t]?`)

// fileURL is an absolute file URL (file:///usr/share/doc/...): where an
// installed system keeps a copy, not a file of the repository.
var fileURL = regexp.MustCompile(`file://\S+`)

// TestDocLinks: every relative link of README.md, docs/*.md, deploy/*.md and
// bench/NOTES.md reaches a file of the repository, and its #anchor, if any,
// a heading of that file.
func TestDocLinks(t *testing.T) {
	t.Parallel()
	cache := docCache{}
	links := 0
	for _, file := range linkedDocs(t) {
		src, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range mdLines(src) {
			text := codeSpan.ReplaceAllString(l.text, "")
			var targets []string
			for _, m := range mdLink.FindAllStringSubmatch(text, -1) {
				targets = append(targets, m[1])
			}
			if m := mdRefDef.FindStringSubmatch(text); m != nil {
				targets = append(targets, m[1])
			}
			for _, target := range targets {
				if scheme.MatchString(target) || strings.HasPrefix(target, "//") {
					continue // another site
				}
				links++
				if msg := cache.checkTarget(t, file, target); msg != "" {
					t.Errorf("%s:%d: link %s: %s", file, l.n, target, msg)
				}
			}
		}
	}
	if links < 100 {
		t.Errorf("only %d relative links found in the documentation: is the parser broken?", links)
	}
}

// citation is a page (and perhaps a section) a file's text refers to:
// docs/sql.md, "Deep pages and max_offset".
var citation = regexp.MustCompile(`(?:^|[^\w./-])((?:\.\./)*[\w./-]*[\w-]\.md)(#[\w-]+)?(?:,?[ \t]+"([^"]+)")?`)

// checkCitations reports the citations of text (from the file where) that
// name no file of the repository, no heading of it, or no section of it.
// Paths are taken from the repository's root, from where's directory, or,
// for a bare name, from docs/.
func checkCitations(t *testing.T, cache docCache, where, text string) (n int) {
	t.Helper()
	text = strings.Join(strings.Fields(text), " ")
	for _, m := range citation.FindAllStringSubmatch(text, -1) {
		name, anchor, section := m[1], strings.TrimPrefix(m[2], "#"), m[3]
		n++
		var file string
		for _, p := range []string{path.Clean(name), path.Join(path.Dir(where), name), path.Join("docs", name)} {
			if _, err := os.Stat(p); err == nil && !strings.HasPrefix(p, "..") {
				file = p
				break
			}
		}
		if file == "" {
			t.Errorf("%s cites %s, which is no file of the repository", where, name)
			continue
		}
		doc := cache.get(t, file)
		if anchor != "" && !doc.anchors[anchor] {
			t.Errorf("%s cites %s#%s: no heading of %s has that id", where, name, anchor, file)
		}
		if section != "" {
			want := strings.ToLower(strings.ReplaceAll(section, "`", ""))
			if !slices.ContainsFunc(doc.sections, func(h string) bool { return strings.Contains(strings.ToLower(h), want) }) {
				t.Errorf("%s cites %s, %q: no heading or paragraph lead-in of %s says so", where, name, section, file)
			}
		}
	}
	return n
}

// TestDocCitations: the pages and sections that configuration files,
// deployment files, bench scripts and Go comments point readers to exist
// (a comment citing a file outside the repository fails too).
func TestDocCitations(t *testing.T) {
	t.Parallel()
	cache := docCache{}
	cited := 0
	var plain []string
	for _, pattern := range []string{"config.yaml", "testdata/*.yaml", "deploy/*/*.yaml", "deploy/*/*.yml", "deploy/*/*/*.yaml",
		"deploy/*/*/*/*.yaml", "deploy/*/*.service", "deploy/*/*.conf", "deploy/*/*.example", "bench/*.sh", "Dockerfile"} {
		files, err := filepath.Glob(pattern)
		if err != nil {
			t.Fatal(err)
		}
		plain = append(plain, files...)
	}
	for _, file := range plain {
		src, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		text := hashComment.ReplaceAllString(string(src), "")
		text = fileURL.ReplaceAllString(text, "")
		cited += checkCitations(t, cache, filepath.ToSlash(file), text)
	}

	fset := token.NewFileSet()
	err := filepath.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); p != "." && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		for _, cg := range f.Comments {
			// A comment group's lines are read together: a citation may wrap.
			cited += checkCitations(t, cache, filepath.ToSlash(p)+":"+fmt.Sprint(fset.Position(cg.Pos()).Line), cg.Text())
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if cited < 50 {
		t.Errorf("only %d citations of Markdown pages found: is the pattern broken?", cited)
	}
}

// TestDocumentedConfigKeys: every key the tables of docs/configuration.md
// list is a key of the configuration (config.Config's YAML keys), so a key
// renamed or removed in the code cannot stay documented.
func TestDocumentedConfigKeys(t *testing.T) {
	t.Parallel()
	src, err := os.ReadFile("docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	inKeyTable := false
	keys := 0
	for _, l := range mdLines(src) {
		if !strings.HasPrefix(l.text, "|") {
			inKeyTable = false
			continue
		}
		cells := strings.Split(l.text, "|")
		first := strings.TrimSpace(cells[1])
		if first == "key" {
			inKeyTable = true
			continue
		}
		if !inKeyTable || strings.HasPrefix(first, "---") {
			continue
		}
		spans := codeSpan.FindAllString(first, -1)
		if len(spans) == 0 {
			t.Errorf("docs/configuration.md:%d: a key row without a key in code: %q", l.n, first)
			continue
		}
		var parent string
		for i, span := range spans {
			key := strings.Trim(span, "`")
			if i == 0 {
				if j := strings.LastIndex(key, "."); j >= 0 {
					parent = key[:j+1]
				}
			} else if !strings.ContainsAny(key, ".[") {
				key = parent + key // `tenants.NAME.upstream_username`, `upstream_password`
			}
			keys++
			if msg := configKey(key); msg != "" {
				t.Errorf("docs/configuration.md:%d: key %s: %s", l.n, key, msg)
			}
		}
	}
	if keys < 100 {
		t.Errorf("only %d keys found in docs/configuration.md's tables: is the parser broken?", keys)
	}
}

var placeholder = regexp.MustCompile(`^[A-Z][A-Z_]*$`)

// configKey says what is wrong with a documented key path ("" when it is a
// key of config.Config). NAME, TABLE and the like stand for a map's keys,
// `users[]` for a list's items, and a final `*` for any key of a section.
func configKey(key string) string {
	t := reflect.TypeFor[config.Config]()
	segs := strings.Split(key, ".")
	for i, seg := range segs {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		switch {
		case seg == "*":
			if i != len(segs)-1 || (t.Kind() != reflect.Struct && t.Kind() != reflect.Map) {
				return fmt.Sprintf("%s: * of a %s", strings.Join(segs[:i], "."), t)
			}
			return ""
		case placeholder.MatchString(seg):
			if t.Kind() != reflect.Map {
				return fmt.Sprintf("%s stands for a map's key, but %s is a %s", seg, strings.Join(segs[:i], "."), t)
			}
			t = t.Elem()
			continue
		}
		name, list := strings.CutSuffix(seg, "[]")
		ft, ok := yamlField(t, name)
		if !ok {
			return fmt.Sprintf("no key %q in %s (keys: %s)", name, t, strings.Join(yamlKeysOf(t), ", "))
		}
		t = ft
		if list {
			if t.Kind() != reflect.Slice {
				return fmt.Sprintf("%s[] of a %s, not a list", name, t)
			}
			t = t.Elem()
		}
	}
	return ""
}

// backendKinds are the structs a backend's keys decode into: a backend is
// decoded by its kind (config.Backend's UnmarshalYAML), so its keys are
// kind and the keys of every kind's struct.
var backendKinds = []reflect.Type{
	reflect.TypeFor[struct {
		Kind string `yaml:"kind"`
	}](),
	reflect.TypeFor[config.SQLBackend](),
	reflect.TypeFor[config.CRMBackend](),
}

// yamlField is the type of the field of struct t with YAML key name.
func yamlField(t reflect.Type, name string) (reflect.Type, bool) {
	if t == reflect.TypeFor[config.Backend]() {
		for _, k := range backendKinds {
			if ft, ok := yamlField(k, name); ok {
				return ft, true
			}
		}
		return nil, false
	}
	if t.Kind() != reflect.Struct {
		return nil, false
	}
	for f := range t.Fields() {
		if tag, _, _ := strings.Cut(f.Tag.Get("yaml"), ","); tag == name {
			return f.Type, true
		}
	}
	return nil, false
}

func yamlKeysOf(t reflect.Type) []string {
	if t == reflect.TypeFor[config.Backend]() {
		var all []string
		for _, k := range backendKinds {
			all = append(all, yamlKeysOf(k)...)
		}
		return all
	}
	var keys []string
	if t.Kind() == reflect.Struct {
		for f := range t.Fields() {
			if tag, _, _ := strings.Cut(f.Tag.Get("yaml"), ","); tag != "" && tag != "-" {
				keys = append(keys, tag)
			}
		}
	}
	return keys
}
