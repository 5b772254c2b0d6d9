package wire

import (
	"strconv"

	"listingproxy/upstream"
)

// The writers, readers and pass-through filters are driven by the listing
// schema (upstream.PropertyFields, upstream.AgentFields): the scalar fields
// come from its rows, in its order, and only its KindHand rows (address,
// media, agents, open homes, an agent's properties) have code here, named
// by the tables below. The schema is compiled once: each level's fields
// in order, with the tags and keys the writers append. A field costs the
// writers a step of a loop and a call of its accessor more than a written
// out call did (bench/NOTES.md: 3-7% of a full list's instructions, 7-17%
// of short lists and agents, no difference measured on a whole miss).

// sch is the compiled listing schema.
var sch = compileSchema(upstream.PropertyFields, upstream.AgentFields)

// schema is the listing schema as the writers and readers use it.
type schema struct {
	property record[upstream.Property]
	agent    record[upstream.Agent]

	// knownTags are the elements the readers keep, at any level; any
	// other element is skipped while decoding (counted against the
	// limits, never kept), so an answer padded with unknown elements
	// costs no memory.
	knownTags map[string]bool
	// knownAttrs are the attributes the wire format gives, in any record.
	knownAttrs map[string]bool
	// prices are the elements only a caller with prices sees.
	prices map[string]bool
	// nulls are the elements whose empty value is JSON null.
	nulls map[string]bool
}

// record is the compiled schema of one kind of record.
type record[R any] struct {
	name string // "property", "agent"
	// The fields each level shows (levels), in order: XML attributes,
	// XML elements, JSON keys.
	attrs, elems, json [levels][]field[R]
	read               []*upstream.Field[R] // the scalars on the wire but the id
	id                 *upstream.Field[R]
	// known are the element names the wire format gives inside the
	// record (its elements and what is inside its hand-written ones).
	known map[string]bool
}

// field is one field compiled for the writers.
type field[R any] struct {
	kind upstream.Kind
	null bool // JSON null when empty
	// key is the JSON key with its separators (`,"agency_id":`, the
	// record's first without the comma); open, close and empty the XML
	// tags ("<agency_id>", "</agency_id>\n", "<agency_id/>\n"), or for an
	// attribute open is ` id="`.
	key, open, close, empty string
	f                       *upstream.Field[R]
	part                    part // KindHand
}

// part names a hand-written part of a record (a KindHand row): its code
// is a case of the record's writers (xmlProperty, jsonProperty, xmlAgent,
// jsonAgent), called directly.
type part uint8

// The hand-written parts.
const (
	partNone part = iota
	partAddress
	partPhotos
	partVirtualTours
	partFloorplans
	partPropertyAgents
	partOpenHomes
	partAgentProperties
)

// propertyParts and agentParts are the hand-written parts of records, by
// the name of their row.
var (
	propertyParts = map[string]part{"address": partAddress, "photos": partPhotos, "virtualtours": partVirtualTours,
		"floorplans": partFloorplans, "agents": partPropertyAgents, "openhomes": partOpenHomes}
	agentParts = map[string]part{"properties": partAgentProperties}
)

// compileSchema compiles the tables of properties and agents. A table the
// code cannot follow (a hand-written row without its code, a record whose
// first field may be left out) is a programming error: it panics, at
// start, and TestSchemaTables fails.
func compileSchema(props []upstream.Field[upstream.Property], agents []upstream.Field[upstream.Agent]) *schema {
	s := &schema{
		knownTags:  setOf("properties", "property", "agents", "agent", "errors", "error"),
		knownAttrs: map[string]bool{},
		prices:     map[string]bool{},
		nulls:      map[string]bool{},
	}
	s.property = compileRecord(s, "property", props, propertyParts)
	s.agent = compileRecord(s, "agent", agents, agentParts)
	return s
}

func compileRecord[R any](s *schema, name string, fields []upstream.Field[R], parts map[string]part) record[R] {
	rec := record[R]{name: name, known: map[string]bool{}}
	onWire := 0
	for i := range fields {
		f := &fields[i]
		if f.XML == upstream.NotOnWire {
			continue
		}
		c := field[R]{kind: f.Kind, null: f.JSONNull, f: f, key: `,"` + f.Name + `":`}
		if f.Level >= levels {
			panic("wire: an unknown level of " + name + "/" + f.Name)
		}
		if onWire++; onWire == 1 {
			if f.Kind == upstream.KindHand || f.Level != upstream.LevelShort {
				panic("wire: the first field of a " + name + " must be a scalar of every level: " + f.Name)
			}
			c.key = c.key[1:]
		}
		switch f.Kind {
		case upstream.KindHand:
			if c.part = parts[f.Name]; c.part == partNone {
				panic("wire: no code for the hand-written field " + name + "/" + f.Name)
			}
		case upstream.KindID:
			if rec.id != nil || f.XML != upstream.Attribute {
				panic("wire: a " + name + " has one id, an attribute")
			}
			rec.id = f
		default:
			rec.read = append(rec.read, f)
		}
		var xmlAt *[levels][]field[R]
		switch f.XML {
		case upstream.Attribute:
			c.open = " " + f.Name + `="`
			xmlAt = &rec.attrs
			s.knownAttrs[f.Name] = true
		case upstream.Element:
			c.open, c.close, c.empty = "<"+f.Name+">", "</"+f.Name+">\n", "<"+f.Name+"/>\n"
			xmlAt = &rec.elems
			rec.known[f.Name] = true
			s.knownTags[f.Name] = true
		default:
			panic("wire: an unknown XML form of " + name + "/" + f.Name)
		}
		for l := f.Level; l < levels; l++ { // its level and those above show it
			xmlAt[l] = append(xmlAt[l], c)
			rec.json[l] = append(rec.json[l], c)
		}
		for _, n := range f.Inner {
			rec.known[n] = true
			s.knownTags[n] = true
		}
		for _, n := range f.Attrs {
			s.knownAttrs[n] = true
		}
		if f.Level == upstream.LevelPrices && f.XML == upstream.Element {
			s.prices[f.Name] = true
		}
		if f.JSONNull {
			s.nulls[f.Name] = true
		}
	}
	if rec.id == nil {
		panic("wire: a " + name + " has no id")
	}
	return rec
}

// levels is the number of upstream.Level values.
const levels = upstream.LevelPrices + 1

// rank is the upstream.Level of what lv shows.
func (lv level) rank() upstream.Level {
	switch {
	case lv.prices:
		return upstream.LevelPrices
	case lv.full:
		return upstream.LevelFull
	}
	return upstream.LevelShort
}

// xmlAttrs appends the attributes of r that lv shows.
func xmlAttrs[R any](dst []byte, rec *record[R], r *R, lv *level) []byte {
	attrs := rec.attrs[lv.rank()]
	for i := range attrs {
		dst = attrs[i].appendXMLAttr(dst, r, lv)
	}
	return dst
}

// appendXMLElement appends c's element holding r's value, self-closing
// when the value is empty.
func (c *field[R]) appendXMLElement(dst []byte, r *R, lv *level) []byte {
	switch c.kind {
	case upstream.KindID:
		dst = strconv.AppendInt(append(dst, c.open...), *c.f.ID(r), 10)
	case upstream.KindText:
		s := *c.f.Text(r)
		if s == "" {
			return append(dst, c.empty...)
		}
		dst = appendXMLText(append(dst, c.open...), s)
	case upstream.KindInt:
		v := *c.f.Int(r)
		if v == nil {
			return append(dst, c.empty...)
		}
		dst = strconv.AppendInt(append(dst, c.open...), int64(*v), 10)
	case upstream.KindFloat:
		v := *c.f.Float(r)
		if v == nil {
			return append(dst, c.empty...)
		}
		dst = appendFloat(append(dst, c.open...), *v)
	case upstream.KindDate, upstream.KindInstant:
		t := c.f.Time(r)
		if t.IsZero() {
			return append(dst, c.empty...)
		}
		if c.kind == upstream.KindDate {
			dst = appendDate(append(dst, c.open...), *t)
		} else {
			dst = appendTime(append(dst, c.open...), *t, lv.loc, lastUpdatedLayout)
		}
	case upstream.KindFlag:
		dst = appendBool(append(dst, c.open...), *c.f.Flag(r))
	}
	return append(dst, c.close...)
}

// appendXMLAttr appends c's attribute holding r's value (escaped), empty
// when the value is.
func (c *field[R]) appendXMLAttr(dst []byte, r *R, lv *level) []byte {
	dst = append(dst, c.open...)
	switch c.kind {
	case upstream.KindID:
		dst = strconv.AppendInt(dst, *c.f.ID(r), 10)
	case upstream.KindText:
		dst = appendXMLAttr(dst, *c.f.Text(r))
	case upstream.KindInt:
		if v := *c.f.Int(r); v != nil {
			dst = strconv.AppendInt(dst, int64(*v), 10)
		}
	case upstream.KindFloat:
		if v := *c.f.Float(r); v != nil {
			dst = appendFloat(dst, *v)
		}
	case upstream.KindDate:
		dst = appendDate(dst, *c.f.Time(r))
	case upstream.KindInstant:
		dst = appendTime(dst, *c.f.Time(r), lv.loc, lastUpdatedLayout)
	case upstream.KindFlag:
		dst = appendBool(dst, *c.f.Flag(r))
	}
	return append(dst, '"')
}

// appendJSON appends c's key and r's value of it: a string (an id a
// number with the numeric-ids switch), or null when empty and c says so.
func (c *field[R]) appendJSON(dst []byte, r *R, lv *level) []byte {
	switch c.kind {
	case upstream.KindID:
		return jsonID(dst, c.key, *c.f.ID(r), *lv)
	case upstream.KindText:
		if s := *c.f.Text(r); s != "" || !c.null {
			return jsonField(dst, c.key, s)
		}
	case upstream.KindInt:
		if v := *c.f.Int(r); v != nil {
			return jsonInt(dst, c.key, int64(*v))
		}
	case upstream.KindFloat:
		if v := *c.f.Float(r); v != nil {
			return jsonFloat(dst, c.key, *v)
		}
	case upstream.KindDate, upstream.KindInstant:
		if t := *c.f.Time(r); !t.IsZero() || !c.null {
			dst = append(append(dst, c.key...), '"')
			if c.kind == upstream.KindDate {
				dst = appendDate(dst, t)
			} else {
				dst = appendTime(dst, t, lv.loc, lastUpdatedLayout)
			}
			return append(dst, '"')
		}
	case upstream.KindFlag:
		dst = append(append(dst, c.key...), '"')
		return append(appendBool(dst, *c.f.Flag(r)), '"')
	}
	if c.null {
		return append(append(dst, c.key...), "null"...)
	}
	return append(append(dst, c.key...), `""`...)
}

// readFields sets r's scalar fields of rec from e, a record read from a
// legacy (its id is the caller's), reporting the values it cannot read.
func readFields[R any](f *fields, e *node, rec *record[R], r *R) {
	for _, fd := range rec.read {
		var s string
		if fd.XML == upstream.Attribute {
			s = attr(e, fd.Name)
		} else {
			s = childText(e, fd.Name)
		}
		switch fd.Kind {
		case upstream.KindText:
			*fd.Text(r) = s
		case upstream.KindInt:
			*fd.Int(r) = f.optInt(fd.Name, s)
		case upstream.KindFloat:
			*fd.Float(r) = f.optFloat(fd.Name, s)
		case upstream.KindDate:
			*fd.Time(r) = f.date(fd.Name, s)
		case upstream.KindInstant:
			*fd.Time(r) = f.instant(fd.Name, s)
		case upstream.KindFlag:
			*fd.Flag(r) = parseFlag(s)
		}
	}
}
