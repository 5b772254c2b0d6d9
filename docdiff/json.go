package docdiff

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// jsonValue is a decoded JSON value that keeps the order of object keys.
type jsonValue struct {
	kind   string // "object", "array", "string", "number", "bool", "null"
	keys   []string
	fields []*jsonValue // parallel to keys
	items  []*jsonValue
	scalar string // string value, number spelling, "true"/"false", "null"
}

func parseJSON(b []byte) (*jsonValue, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	v, err := decodeValue(dec, 0)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("data after the top-level value")
	}
	return v, nil
}

const maxJSONDepth = 256

func decodeValue(dec *json.Decoder, depth int) (*jsonValue, error) {
	if depth > maxJSONDepth {
		return nil, fmt.Errorf("nested deeper than %d", maxJSONDepth)
	}
	tok, err := dec.Token()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil, io.ErrUnexpectedEOF
		}
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			v := &jsonValue{kind: "object"}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				f, err := decodeValue(dec, depth+1)
				if err != nil {
					return nil, err
				}
				v.keys = append(v.keys, kt.(string))
				v.fields = append(v.fields, f)
			}
			_, err := dec.Token() // '}'
			return v, err
		case '[':
			v := &jsonValue{kind: "array"}
			for dec.More() {
				item, err := decodeValue(dec, depth+1)
				if err != nil {
					return nil, err
				}
				v.items = append(v.items, item)
			}
			_, err := dec.Token() // ']'
			return v, err
		}
		return nil, fmt.Errorf("unexpected %v", t)
	case string:
		return &jsonValue{kind: "string", scalar: t}, nil
	case json.Number:
		return &jsonValue{kind: "number", scalar: t.String()}, nil
	case bool:
		return &jsonValue{kind: "bool", scalar: fmt.Sprint(t)}, nil
	case nil:
		return &jsonValue{kind: "null", scalar: "null"}, nil
	}
	return nil, fmt.Errorf("unexpected token %v", tok)
}

// describe is a short form of v for messages.
func (v *jsonValue) describe() string {
	switch v.kind {
	case "string":
		return quote(v.scalar)
	case "object":
		return fmt.Sprintf("object of %d keys", len(v.keys))
	case "array":
		return fmt.Sprintf("array of %d", len(v.items))
	}
	return v.scalar
}

func compareJSON(old, new []byte) []Difference {
	a, errA := parseJSON(old)
	b, errB := parseJSON(new)
	if errA != nil || errB != nil {
		return parseDiffs(errA, errB, old, new)
	}
	var c jsonComparer
	c.value("", a, b)
	return c.diffs
}

type jsonComparer struct{ diffs []Difference }

func (c *jsonComparer) add(path string, k Kind, old, new string) {
	if path == "" {
		path = "/"
	}
	c.diffs = append(c.diffs, Difference{Path: path, Kind: k, Old: old, New: new})
}

func (c *jsonComparer) value(path string, a, b *jsonValue) {
	if a.kind != b.kind {
		c.add(path, Type, a.kind+" "+a.describe(), b.kind+" "+b.describe())
		return
	}
	switch a.kind {
	case "object":
		c.object(path, a, b)
	case "array":
		for i := range max(len(a.items), len(b.items)) {
			p := fmt.Sprintf("%s[%d]", path, i+1)
			switch {
			case i >= len(b.items):
				c.add(p, Missing, a.items[i].describe(), "")
			case i >= len(a.items):
				c.add(p, Extra, "", b.items[i].describe())
			default:
				c.value(p, a.items[i], b.items[i])
			}
		}
	default:
		if a.scalar != b.scalar {
			c.add(path, Text, a.describe(), b.describe())
		}
	}
}

// object compares keys as a set, the values of common keys, and the order
// of the common keys.
func (c *jsonComparer) object(path string, a, b *jsonValue) {
	index := func(v *jsonValue) map[string]int {
		m := make(map[string]int, len(v.keys))
		for i, k := range v.keys {
			if _, dup := m[k]; !dup {
				m[k] = i
			}
		}
		return m
	}
	ia, ib := index(a), index(b)
	var orderA, orderB []string
	for i, k := range a.keys {
		if ia[k] != i {
			continue // a duplicate key: the first one counts
		}
		j, ok := ib[k]
		if !ok {
			c.add(path+"/"+k, Missing, a.fields[i].describe(), "")
			continue
		}
		orderA = append(orderA, k)
		c.value(path+"/"+k, a.fields[i], b.fields[j])
	}
	for j, k := range b.keys {
		if ib[k] != j {
			continue
		}
		if _, ok := ia[k]; !ok {
			c.add(path+"/"+k, Extra, "", b.fields[j].describe())
			continue
		}
		orderB = append(orderB, k)
	}
	if strings.Join(orderA, "\x00") != strings.Join(orderB, "\x00") {
		i := 0
		for orderA[i] == orderB[i] {
			i++
		}
		c.add(path, Order, keyRun(orderA, i), keyRun(orderB, i))
	}
}

// keyRun describes the key order from position i (0-based), the first that
// differs: "keys from 1: id,agency_id,last_updated,approved,...".
func keyRun(keys []string, i int) string {
	const show = 4
	run := keys[i:]
	more := ""
	if len(run) > show {
		run, more = run[:show], ",..."
	}
	return fmt.Sprintf("keys from %d: %s%s", i+1, strings.Join(run, ","), more)
}
