package wire

import (
	"listingproxy/upstream"
)

// The JSON shapes of the wire format's objects, for pass-through documents
// (AppendDocumentJSON): each object's keys in the spec's order, and the value
// the writers write when the record lacks it. They are derived from the
// writers themselves (jsonProperty and jsonAgent on records without values,
// and on records with one item of each collection), so they cannot
// disagree with them: a legacy record, whatever it omits or repeats and in
// whatever order it writes its elements, gets the keys a rendered record
// of its detail level has, in the same order.

// shape is one object's keys in order, with the JSON of each key's empty
// value.
type shape struct {
	keys  []string
	empty map[string][]byte
}

// shapeSet holds the shapes of one detail level by path: "property",
// "property/address", "property/photos/photo", "agent",
// "agent/properties/property"...
type shapeSet map[string]*shape

// shapes are the shape sets of the three levels the writers know.
var shapes = newShapes()

// shapeLevels are the shape sets of the three levels.
type shapeLevels struct{ short, full, prices shapeSet }

func newShapes() shapeLevels {
	return shapeLevels{
		short:  shapesAt(level{}),
		full:   shapesAt(level{full: true}),
		prices: shapesAt(level{full: true, prices: true}),
	}
}

// shapesOf returns the shapes of lv's level.
func shapesOf(lv level) shapeSet {
	switch {
	case lv.prices:
		return shapes.prices
	case lv.full:
		return shapes.full
	}
	return shapes.short
}

// shapesAt derives the shapes of lv's level: the keys and empty values of
// each object from records without values, then the items' from records
// with one item of each collection (two open homes: one is an object).
func shapesAt(lv level) shapeSet {
	set := shapeSet{}
	set.walk("property", jsonProperty(nil, &upstream.Property{}, lv))
	set.walk("property", jsonProperty(nil, &upstream.Property{
		Photos: []upstream.Media{{}}, VirtualTours: []upstream.Media{{}}, Floorplans: []upstream.Media{{}},
		Agents: []upstream.AgentRef{{}}, OpenHomes: []upstream.OpenHome{{}, {}},
	}, lv))
	set.walk("agent", jsonAgent(nil, &upstream.Agent{}, lv))
	set.walk("agent", jsonAgent(nil, &upstream.Agent{Properties: []upstream.PropertyRef{{}}}, lv))
	return set
}

// walk records the shape of obj, a JSON object the writers wrote, at path
// (unless known), and of the objects in it: values, and the first item of
// arrays.
func (set shapeSet) walk(path string, obj []byte) {
	keys, vals := jsonFields(obj)
	if set[path] == nil {
		s := &shape{keys: keys, empty: make(map[string][]byte, len(keys))}
		for i, k := range keys {
			s.empty[k] = vals[i]
			if k == "id" || k == "position" { // the writers' 0 for a number the model cannot lack
				s.empty[k] = []byte(`""`)
			}
		}
		set[path] = s
	}
	for i, v := range vals {
		switch {
		case len(v) > 0 && v[0] == '{':
			set.walk(path+"/"+keys[i], v)
		case len(v) > 1 && v[0] == '[' && v[1] == '{':
			set.walk(path+"/"+keys[i], v[1:jsonValueEnd(v, 1)])
		}
	}
}

// jsonFields splits a compact JSON object into its keys and raw values.
func jsonFields(b []byte) (keys []string, vals [][]byte) {
	for i := 1; i < len(b) && b[i] != '}'; {
		if b[i] == ',' {
			i++
		}
		end := jsonValueEnd(b, i)
		keys = append(keys, string(b[i+1:end-1]))
		i = end + 1 // the colon
		end = jsonValueEnd(b, i)
		vals = append(vals, b[i:end])
		i = end
	}
	return keys, vals
}

// jsonValueEnd returns the end of the compact JSON value starting at b[i].
func jsonValueEnd(b []byte, i int) int {
	depth, str := 0, false
	for j := i; j < len(b); j++ {
		c := b[j]
		switch {
		case str && c == '\\':
			j++
		case str && c == '"':
			str = false
			if depth == 0 {
				return j + 1
			}
		case str:
		case c == '"':
			str = true
		case c == '{' || c == '[':
			depth++
		case (c == '}' || c == ']') && depth == 0, c == ',' && depth == 0, c == ':' && depth == 0:
			return j
		case c == '}' || c == ']':
			if depth--; depth == 0 {
				return j + 1
			}
		}
	}
	return len(b)
}
