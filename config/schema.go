package config

import (
	"fmt"
	"reflect"
	"regexp"
	"strings"

	"gopkg.in/yaml.v3"

	"listingproxy/internal/suggest"
)

// schema checks a parsed file against Config's types before it is decoded,
// so that every problem is found in one pass and located by path and line:
// yaml.v3's own strict decoding stops at the first custom-type error (one
// bad duration hid every other problem) and reports type errors by line
// only. On the way it expands ${VAR} in every scalar value, before the value
// is typed, so a variable may hold a duration, a number or a boolean.
type schema struct {
	getenv func(string) string
	lines  map[string]int // path -> line, for validate's messages
	probs  []located
	// unset holds the paths whose value named an unset variable: what
	// validate says of them (or of their parents) follows from that one
	// problem and is not repeated.
	unset map[string]bool
}

var (
	unmarshalerType = reflect.TypeFor[yaml.Unmarshaler]()
	envRef          = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)
	lineRef         = regexp.MustCompile(`^(?:yaml: )?line (\d+): `)
)

func (s *schema) add(n *yaml.Node, path, format string, args ...any) {
	s.probs = append(s.probs, located{path, n.Line, fmt.Sprintf(format, args...)})
}

// check visits n, which is decoded into a value of type t at path.
func (s *schema) check(n *yaml.Node, t reflect.Type, path string) {
	if n.Kind == yaml.DocumentNode {
		for _, c := range n.Content {
			s.check(c, t, path)
		}
		return
	}
	if n.Kind == yaml.AliasNode || n.ShortTag() == "!!null" {
		return // an alias is checked where its anchor is; null leaves the zero value
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == backendType {
		s.backend(n, path)
		return
	}
	if reflect.PointerTo(t).Implements(unmarshalerType) {
		s.scalar(n, t, path)
		return
	}
	switch t.Kind() {
	case reflect.Struct:
		if !s.want(n, yaml.MappingNode, path) {
			return
		}
		s.mapping(n, path, structFields(t), func(key string) string { return unknownKey(key, yamlKeys(t)) })
	case reflect.Map:
		if !s.want(n, yaml.MappingNode, path) {
			return
		}
		s.mapping(n, path, func(string) (reflect.Type, bool) { return t.Elem(), true }, func(key string) string { return unknownKey(key, nil) })
	case reflect.Slice:
		if !s.want(n, yaml.SequenceNode, path) {
			return
		}
		for i, c := range n.Content {
			p := fmt.Sprintf("%s[%d]", path, i)
			s.lines[p] = c.Line
			s.check(c, t.Elem(), p)
		}
	default:
		s.scalar(n, t, path)
	}
}

// mapping checks the keys of n (unknown and repeated ones are problems)
// and the value of each known key, typed by field. A repeated key is
// dropped, as yaml.v3 would otherwise drop the whole mapping and validation
// would report the mapping's other keys as missing.
func (s *schema) mapping(n *yaml.Node, path string, field func(string) (reflect.Type, bool), unknown func(key string) string) {
	seen := map[string]int{}
	kept := n.Content[:0]
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		p := k.Value
		if path != "" {
			p = path + "." + p
		}
		if k.ShortTag() == "!!merge" {
			kept = append(kept, k, v) // "<<: *anchor": checked where the anchor is
			continue
		}
		if line, dup := seen[k.Value]; dup {
			s.add(k, p, "key %q repeated (first at line %d)", k.Value, line)
			continue
		}
		kept = append(kept, k, v)
		seen[k.Value] = k.Line
		s.lines[p] = k.Line
		ft, ok := field(k.Value)
		switch {
		case !ok:
			s.add(k, p, "%s", unknown(k.Value))
		case ft != nil: // nil: checked by the caller
			s.check(v, ft, p)
		}
	}
	n.Content = kept
}

// unknownKey says key is not one of keys, suggesting the closest of them
// when it is a likely typo.
func unknownKey(key string, keys []string) string {
	if k := closest(key, keys); k != "" {
		return fmt.Sprintf("unknown key %q (did you mean %q?)", key, k)
	}
	return fmt.Sprintf("unknown key %q", key)
}

// closest is the one of keys nearest to key by edit distance, if near
// enough to be a typo of it (at most a third of its length, and at most
// 3 edits); "" otherwise (internal/suggest).
func closest(key string, keys []string) string {
	return suggest.Closest(key, keys, min(3, max(1, len(key)/3)))
}

// yamlKeys are the YAML keys of a struct type's fields.
func yamlKeys(t reflect.Type) []string {
	var keys []string
	for f := range t.Fields() {
		if name, _, _ := strings.Cut(f.Tag.Get("yaml"), ","); name != "" && name != "-" {
			keys = append(keys, name)
		}
	}
	return keys
}

// structFields looks up a struct's fields by their YAML key.
func structFields(t reflect.Type) func(string) (reflect.Type, bool) {
	fields := map[string]reflect.Type{}
	for f := range t.Fields() {
		if name, _, _ := strings.Cut(f.Tag.Get("yaml"), ","); name != "" && name != "-" {
			fields[name] = f.Type
		}
	}
	return func(key string) (reflect.Type, bool) {
		ft, ok := fields[key]
		return ft, ok
	}
}

var backendType = reflect.TypeFor[Backend]()

// backend checks a backend's mapping against the struct of its kind. With
// no kind or an unknown one only the kind is checked (validate says what is
// wrong with it): which keys belong is not known.
func (s *schema) backend(n *yaml.Node, path string) {
	if !s.want(n, yaml.MappingNode, path) {
		return
	}
	var b Backend
	if k, v := kindOf(n); v != nil {
		if k != nil { // the kind's own key, not one merged from an anchor
			s.lines[path+".kind"] = k.Line
			s.scalar(v, reflect.TypeFor[string](), path+".kind")
		}
		b.Kind = v.Value
	}
	settings := b.settings()
	if settings == nil {
		return
	}
	fields := structFields(reflect.TypeOf(settings).Elem())
	s.mapping(n, path, func(key string) (reflect.Type, bool) {
		if key == "kind" {
			return nil, true // checked above
		}
		return fields(key)
	}, func(key string) string {
		msg := fmt.Sprintf("not a key of a %s backend", b.Kind)
		if k := closest(key, yamlKeys(reflect.TypeOf(settings).Elem())); k != "" {
			msg += fmt.Sprintf(" (did you mean %q?)", k)
		}
		return msg
	})
}

// kindOf finds a backend mapping's kind: its own key (k set), else one
// merged in with "<<: *anchor" (k nil), as YAML's merge key says.
func kindOf(n *yaml.Node) (k, v *yaml.Node) {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == "kind" && n.Content[i].ShortTag() != "!!merge" {
			return n.Content[i], n.Content[i+1]
		}
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].ShortTag() != "!!merge" {
			continue
		}
		merged := []*yaml.Node{n.Content[i+1]}
		if merged[0].Kind == yaml.SequenceNode {
			merged = merged[0].Content
		}
		for _, m := range merged {
			for m.Kind == yaml.AliasNode {
				m = m.Alias
			}
			if m.Kind == yaml.MappingNode {
				if _, v := kindOf(m); v != nil {
					return nil, v
				}
			}
		}
	}
	return nil, nil
}

var kindNames = map[yaml.Kind]string{
	yaml.ScalarNode: "a single value", yaml.MappingNode: "a mapping", yaml.SequenceNode: "a list",
}

func (s *schema) want(n *yaml.Node, kind yaml.Kind, path string) bool {
	if n.Kind != kind {
		s.add(n, path, "want %s, got %s", kindNames[kind], kindNames[n.Kind])
		return false
	}
	return true
}

// scalar expands ${VAR} references in n and checks that its value decodes
// as a t.
func (s *schema) scalar(n *yaml.Node, t reflect.Type, path string) {
	if !s.want(n, yaml.ScalarNode, path) {
		return
	}
	if strings.Contains(n.Value, "${") {
		unset := false
		raw := n.Value
		n.Value = envRef.ReplaceAllStringFunc(raw, func(ref string) string {
			name := envRef.FindStringSubmatch(ref)[1]
			v := s.getenv(name)
			if v == "" {
				unset = true
				s.add(n, path, "environment variable %s is not set", name)
				if s.unset == nil {
					s.unset = map[string]bool{}
				}
				s.unset[path] = true
			}
			return v
		})
		if unset {
			return
		}
		if t.Kind() != reflect.String {
			// Let the expanded value be typed as if written bare:
			// "${PORT}" is a number when PORT=8080.
			n.Tag, n.Style = "", 0
		}
	}
	if t.Kind() == reflect.String {
		return // every scalar decodes as a string
	}
	if err := n.Decode(reflect.New(t).Interface()); err != nil {
		s.add(n, path, "%s", typeProblem(t, n.Value, err))
	}
}

// typeProblem says why value is not a t.
func typeProblem(t reflect.Type, value string, err error) string {
	if reflect.PointerTo(t).Implements(unmarshalerType) {
		msg := err.Error()
		if te, ok := err.(*yaml.TypeError); ok && len(te.Errors) > 0 {
			msg = te.Errors[0]
		}
		return lineRef.ReplaceAllString(msg, "")
	}
	switch t.Kind() {
	case reflect.Bool:
		return fmt.Sprintf("invalid boolean %q (want true or false)", value)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return fmt.Sprintf("invalid integer %q", value)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return fmt.Sprintf("invalid count %q (want a whole number, 0 or more)", value)
	case reflect.Float32, reflect.Float64:
		return fmt.Sprintf("invalid number %q", value)
	}
	return lineRef.ReplaceAllString(err.Error(), "")
}

// followsFromUnset reports whether a problem validate found at path is the
// consequence of an unset variable: at path itself (a required value left
// empty) or under it (server.tls missing the cert_file that named it).
func (s *schema) followsFromUnset(path string) bool {
	for u := range s.unset {
		if u == path || strings.HasPrefix(u, path+".") || strings.HasPrefix(u, path+"[") {
			return true
		}
	}
	return false
}
