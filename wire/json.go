package wire

import (
	"strconv"
	"strings"

	"listingproxy/normalize"
	"listingproxy/upstream"
)

// JSON documents are compact and end with a newline. Every value is a string
// except price_to, which is null when absent. Keys are written as literals
// together with their separators (`,"agency_id":`); they need no escaping.

// jsonString appends s as a JSON string literal.
func jsonString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	dst = appendJSONEscaped(dst, s)
	return append(dst, '"')
}

// jsonField appends key (a literal such as `,"name":`) and s as a string.
func jsonField(dst []byte, key, s string) []byte {
	return jsonString(append(dst, key...), s)
}

func jsonInt(dst []byte, key string, v int64) []byte {
	dst = append(dst, key...)
	dst = append(dst, '"')
	dst = strconv.AppendInt(dst, v, 10)
	return append(dst, '"')
}

func jsonFloat(dst []byte, key string, v float64) []byte {
	dst = append(dst, key...)
	dst = append(dst, '"')
	dst = appendFloat(dst, v)
	return append(dst, '"')
}

func jsonPropertyList(dst []byte, ps []upstream.Property, lv level) []byte {
	dst = jsonInt(append(dst, `{"properties":{`...), `"count":`, int64(len(ps)))
	dst = jsonOpenItems(dst, `,"property":`, "property", len(ps), lv)
	for i := range ps {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = jsonProperty(dst, &ps[i], lv)
	}
	dst = jsonCloseItems(dst, "property", len(ps), lv)
	return append(dst, "}}\n"...)
}

// jsonProperty appends a property object as the listing schema lays it
// out (upstream.PropertyFields): its scalar fields from the table, its
// hand-written parts (KindHand rows) here, in the table's order.
func jsonProperty(dst []byte, p *upstream.Property, lv level) []byte {
	dst = append(dst, '{')
	fields := sch.property.json[lv.rank()]
	for i := range fields {
		c := &fields[i]
		if c.kind != upstream.KindHand {
			dst = c.appendJSON(dst, p, &lv)
			continue
		}
		switch c.part {
		case partAddress:
			dst = jsonAddress(dst, p)
		case partPhotos:
			dst = jsonMedia(dst, `,"photos":`, `,"photo":`, "photo", p.PhotoCount, p.Photos, true, &lv)
		case partVirtualTours:
			dst = jsonMedia(dst, `,"virtualtours":`, `,"virtualtour":`, "virtualtour", p.VirtualTourCount, p.VirtualTours, false, &lv)
		case partFloorplans:
			dst = jsonMedia(dst, `,"floorplans":`, `,"floorplan":`, "floorplan", p.FloorplanCount, p.Floorplans, false, &lv)
		case partPropertyAgents:
			dst = jsonPropertyAgents(dst, p, &lv)
		case partOpenHomes:
			dst = jsonOpenHomes(dst, p, &lv)
		}
	}
	return append(dst, '}')
}

// jsonAddress appends a property's address: its display flag, and its
// street number and name.
func jsonAddress(dst []byte, p *upstream.Property) []byte {
	dst = append(dst, `,"address":{"display":"`...)
	dst = appendBool(dst, p.AddressDisplay)
	dst = append(dst, `","address":"`...)
	dst = appendJSONEscaped(dst, p.StreetNumber)
	if p.StreetNumber != "" && p.StreetName != "" {
		dst = append(dst, ' ')
	}
	dst = appendJSONEscaped(dst, p.StreetName)
	return append(dst, `"}`...)
}

// jsonPropertyAgents appends a property's agents: their count, and each
// agent's id and name.
func jsonPropertyAgents(dst []byte, p *upstream.Property, lv *level) []byte {
	dst = jsonInt(append(dst, `,"agents":{`...), `"count":`, int64(len(p.Agents)))
	dst = jsonOpenItems(dst, `,"agent":`, "agent", len(p.Agents), *lv)
	for i, a := range p.Agents {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = jsonID(append(dst, '{'), `"id":`, a.ID, *lv)
		dst = jsonField(dst, `,"name":`, a.Name)
		dst = append(dst, '}')
	}
	dst = jsonCloseItems(dst, "agent", len(p.Agents), *lv)
	return append(dst, '}')
}

// jsonOpenHomes appends a property's open homes: their count, and each
// one's start and end.
func jsonOpenHomes(dst []byte, p *upstream.Property, lv *level) []byte {
	dst = jsonInt(append(dst, `,"openhomes":{`...), `"count":`, int64(len(p.OpenHomes)))
	dst = append(dst, `,"openhome":`...)
	// One open home is an object, any other number an array
	// (docs/wire-format.md).
	single := len(p.OpenHomes) == 1
	if !single {
		dst = append(dst, '[')
	}
	for i, oh := range p.OpenHomes {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"start":"`...)
		dst = appendTime(dst, oh.Start, lv.loc, openHomeLayout)
		dst = append(dst, `","end":"`...)
		dst = appendTime(dst, oh.End, lv.loc, openHomeLayout)
		dst = append(dst, `"}`...)
	}
	if !single {
		dst = append(dst, ']')
	}
	return append(dst, '}')
}

// jsonMedia appends a media container: its count always, its items (an
// array, see jsonOpenItems) with full detail. Photos carry a type; tours
// and floorplans do not.
func jsonMedia(dst []byte, containerKey, itemsKey, item string, count int, ms []upstream.Media, typed bool, lv *level) []byte {
	dst = jsonInt(append(append(dst, containerKey...), '{'), `"count":`, int64(count))
	if !lv.full {
		return append(dst, '}')
	}
	dst = jsonOpenItems(dst, itemsKey, item, len(ms), *lv)
	for i := range ms {
		m := &ms[i]
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = jsonField(append(dst, '{'), `"thumbnail":`, m.Thumbnail)
		if typed {
			dst = jsonField(dst, `,"type":`, m.Type)
		}
		dst = jsonField(dst, `,"caption":`, m.Caption)
		dst = jsonInt(dst, `,"position":`, int64(m.Position))
		dst = jsonField(dst, `,"url":`, m.URL)
		dst = append(dst, '}')
	}
	dst = jsonCloseItems(dst, item, len(ms), *lv)
	return append(dst, '}')
}

// jsonOpenItems appends the key of a collection's items (named item) and
// opens their array; with the single-object compatibility switches
// (Options.SingleObject, SingleObjectItems) exactly one item is written as
// that object, without an array.
func jsonOpenItems(dst []byte, key, item string, n int, lv level) []byte {
	dst = append(dst, key...)
	if lv.oneObject(item, n) {
		return dst
	}
	return append(dst, '[')
}

// jsonCloseItems closes what jsonOpenItems opened.
func jsonCloseItems(dst []byte, item string, n int, lv level) []byte {
	if lv.oneObject(item, n) {
		return dst
	}
	return append(dst, ']')
}

// jsonID appends an id: a string, or with Options.NumericIDs a number.
func jsonID(dst []byte, key string, id int64, lv level) []byte {
	if !lv.numIDs {
		return jsonInt(dst, key, id)
	}
	return strconv.AppendInt(append(dst, key...), id, 10)
}

// isWholeNumber reports whether s is a whole decimal number that JSON can
// carry as written: digits, an optional leading minus, no leading zero.
func isWholeNumber(s string) bool {
	s = strings.TrimPrefix(s, "-")
	if s == "" || len(s) > 1 && s[0] == '0' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func jsonAgentList(dst []byte, as []upstream.Agent, lv level) []byte {
	dst = jsonInt(append(dst, `{"agents":{`...), `"count":`, int64(len(as)))
	dst = jsonOpenItems(dst, `,"agent":`, "agent", len(as), lv)
	for i := range as {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = jsonAgent(dst, &as[i], lv)
	}
	dst = jsonCloseItems(dst, "agent", len(as), lv)
	return append(dst, "}}\n"...)
}

// jsonAgent appends an agent object as the listing schema lays it out
// (upstream.AgentFields).
func jsonAgent(dst []byte, a *upstream.Agent, lv level) []byte {
	dst = append(dst, '{')
	fields := sch.agent.json[lv.rank()]
	for i := range fields {
		switch c := &fields[i]; {
		case c.kind != upstream.KindHand:
			dst = c.appendJSON(dst, a, &lv)
		case c.part == partAgentProperties:
			dst = jsonAgentProperties(dst, a, &lv)
		}
	}
	return append(dst, '}')
}

// jsonAgentProperties appends an agent's current properties: their count,
// and with full detail each one's id, last update, address and agency id.
func jsonAgentProperties(dst []byte, a *upstream.Agent, lv *level) []byte {
	dst = jsonInt(append(dst, `,"properties":{`...), `"count":`, int64(a.PropertyCount))
	if lv.full {
		dst = jsonOpenItems(dst, `,"property":`, "property", len(a.Properties), *lv)
		for i := range a.Properties {
			pr := &a.Properties[i]
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = jsonID(append(dst, '{'), `"id":`, pr.ID, *lv)
			dst = append(dst, `,"last_updated":"`...)
			dst = appendTime(dst, pr.LastUpdated, lv.loc, lastUpdatedLayout)
			dst = append(dst, '"')
			dst = jsonField(dst, `,"address":`, pr.Address)
			dst = jsonField(dst, `,"agency_id":`, pr.AgencyID)
			dst = append(dst, '}')
		}
		dst = jsonCloseItems(dst, "property", len(a.Properties), *lv)
	}
	return append(dst, '}')
}

func jsonErrors(dst []byte, errs normalize.Errors) []byte {
	dst = jsonInt(append(dst, `{"errors":{`...), `"count":`, int64(len(errs)))
	dst = append(dst, `,"error":`...)
	// One error is an object, any other number an array (spec §7).
	single := len(errs) == 1
	if !single {
		dst = append(dst, '[')
	}
	for i, e := range errs {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = jsonField(append(dst, '{'), `"field":`, e.Field)
		dst = jsonField(dst, `,"message":`, e.Message)
		dst = append(dst, '}')
	}
	if !single {
		dst = append(dst, ']')
	}
	return append(dst, "}}\n"...)
}
