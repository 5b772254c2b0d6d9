package wire

import (
	"strconv"
	"time"

	"listingproxy/normalize"
	"listingproxy/upstream"
)

// XML documents: a declaration line, then one element per line indented by
// two spaces per level. An element with no content is self-closing.

const xmlHeader = `<?xml version="1.0" encoding="UTF-8"?>` + "\n"

func xmlIndent(dst []byte, depth int) []byte {
	for range depth {
		dst = append(dst, "  "...)
	}
	return dst
}

// xmlStart appends the indented "<name" of a start tag, leaving it open for
// attributes.
func xmlStart(dst []byte, depth int, name string) []byte {
	dst = xmlIndent(dst, depth)
	dst = append(dst, '<')
	return append(dst, name...)
}

// xmlEnd appends "</name>" and the end of the line.
func xmlEnd(dst []byte, name string) []byte {
	dst = append(dst, "</"...)
	dst = append(dst, name...)
	return append(dst, ">\n"...)
}

// xmlEndBlock appends the indented end tag of an element whose children were
// on their own lines.
func xmlEndBlock(dst []byte, depth int, name string) []byte {
	return xmlEnd(xmlIndent(dst, depth), name)
}

// xmlCloseText ends an element whose start tag and attributes are written:
// text and the end tag, or "/>" when text is empty.
func xmlCloseText(dst []byte, name, text string) []byte {
	if text == "" {
		return append(dst, "/>\n"...)
	}
	dst = append(dst, '>')
	dst = appendXMLText(dst, text)
	return xmlEnd(dst, name)
}

// xmlEmpty appends the indented self-closing element <name/>.
func xmlEmpty(dst []byte, depth int, name string) []byte {
	dst = xmlStart(dst, depth, name)
	return append(dst, "/>\n"...)
}

func xmlString(dst []byte, depth int, name, s string) []byte {
	if s == "" {
		return xmlEmpty(dst, depth, name)
	}
	dst = xmlStart(dst, depth, name)
	dst = append(dst, '>')
	dst = appendXMLText(dst, s)
	return xmlEnd(dst, name)
}

// xmlTime appends an element holding t in loc with layout, empty for the
// zero time. The layouts yield ASCII letters, digits, spaces and "-:+" only,
// so there is nothing to escape.
func xmlTime(dst []byte, depth int, name string, t time.Time, loc *time.Location, layout string) []byte {
	if t.IsZero() {
		return xmlEmpty(dst, depth, name)
	}
	dst = xmlStart(dst, depth, name)
	dst = append(dst, '>')
	dst = appendTime(dst, t, loc, layout)
	return xmlEnd(dst, name)
}

// xmlAttrInt appends ` name="v"`.
func xmlAttrInt(dst []byte, name string, v int64) []byte {
	dst = append(dst, ' ')
	dst = append(dst, name...)
	dst = append(dst, `="`...)
	dst = strconv.AppendInt(dst, v, 10)
	return append(dst, '"')
}

// xmlAttr appends ` name="escaped s"`.
func xmlAttr(dst []byte, name, s string) []byte {
	dst = append(dst, ' ')
	dst = append(dst, name...)
	dst = append(dst, `="`...)
	dst = appendXMLAttr(dst, s)
	return append(dst, '"')
}

// xmlCountOpen appends `<name count="n"` and, when the collection has items,
// closes the start tag; otherwise it self-closes the element. It reports
// whether items follow.
func xmlCountOpen(dst []byte, depth int, name string, count int, items bool) ([]byte, bool) {
	dst = xmlStart(dst, depth, name)
	dst = xmlAttrInt(dst, "count", int64(count))
	if !items {
		return append(dst, "/>\n"...), false
	}
	return append(dst, ">\n"...), true
}

func xmlPropertyList(dst []byte, ps []upstream.Property, lv level) []byte {
	dst = append(dst, xmlHeader...)
	dst, open := xmlCountOpen(dst, 0, "properties", len(ps), len(ps) > 0)
	if !open {
		return dst
	}
	for i := range ps {
		dst = xmlProperty(dst, 1, &ps[i], lv)
	}
	return xmlEndBlock(dst, 0, "properties")
}

// xmlProperty appends a property element as the listing schema lays it
// out (upstream.PropertyFields): its scalar fields from the table, its
// hand-written parts (KindHand rows) here, in the table's order.
func xmlProperty(dst []byte, depth int, p *upstream.Property, lv level) []byte {
	rec := &sch.property
	dst = xmlAttrs(xmlStart(dst, depth, rec.name), rec, p, &lv)
	dst = append(dst, ">\n"...)
	d := depth + 1
	elems := rec.elems[lv.rank()]
	for i := range elems {
		c := &elems[i]
		if c.kind != upstream.KindHand {
			dst = c.appendXMLElement(xmlIndent(dst, d), p, &lv)
			continue
		}
		switch c.part {
		case partAddress:
			dst = xmlAddress(dst, d, p)
		case partPhotos:
			dst = xmlMedia(dst, d, "photos", "photo", p.PhotoCount, p.Photos, true, lv.full)
		case partVirtualTours:
			dst = xmlMedia(dst, d, "virtualtours", "virtualtour", p.VirtualTourCount, p.VirtualTours, false, lv.full)
		case partFloorplans:
			dst = xmlMedia(dst, d, "floorplans", "floorplan", p.FloorplanCount, p.Floorplans, false, lv.full)
		case partPropertyAgents:
			dst = xmlPropertyAgents(dst, d, p)
		case partOpenHomes:
			dst = xmlOpenHomes(dst, d, p, &lv)
		}
	}
	return xmlEndBlock(dst, depth, rec.name)
}

// xmlAddress appends a property's address: its display flag, and its
// street number and name as text.
func xmlAddress(dst []byte, d int, p *upstream.Property) []byte {
	dst = xmlStart(dst, d, "address")
	dst = append(dst, ` display="`...)
	dst = appendBool(dst, p.AddressDisplay)
	dst = append(dst, '"')
	if p.StreetNumber == "" && p.StreetName == "" {
		return append(dst, "/>\n"...)
	}
	dst = append(dst, '>')
	dst = appendXMLText(dst, p.StreetNumber)
	if p.StreetNumber != "" && p.StreetName != "" {
		dst = append(dst, ' ')
	}
	dst = appendXMLText(dst, p.StreetName)
	return xmlEnd(dst, "address")
}

// xmlPropertyAgents appends a property's agents: their count, and each
// agent's id and name.
func xmlPropertyAgents(dst []byte, d int, p *upstream.Property) []byte {
	dst, open := xmlCountOpen(dst, d, "agents", len(p.Agents), len(p.Agents) > 0)
	if !open {
		return dst
	}
	for _, a := range p.Agents {
		dst = xmlStart(dst, d+1, "agent")
		dst = xmlAttrInt(dst, "id", a.ID)
		dst = xmlCloseText(dst, "agent", a.Name)
	}
	return xmlEndBlock(dst, d, "agents")
}

// xmlOpenHomes appends a property's open homes: their count, and each
// one's start and end.
func xmlOpenHomes(dst []byte, d int, p *upstream.Property, lv *level) []byte {
	dst, open := xmlCountOpen(dst, d, "openhomes", len(p.OpenHomes), len(p.OpenHomes) > 0)
	if !open {
		return dst
	}
	for _, oh := range p.OpenHomes {
		dst = xmlStart(dst, d+1, "openhome")
		dst = append(dst, ">\n"...)
		dst = xmlTime(dst, d+2, "start", oh.Start, lv.loc, openHomeLayout)
		dst = xmlTime(dst, d+2, "end", oh.End, lv.loc, openHomeLayout)
		dst = xmlEndBlock(dst, d+1, "openhome")
	}
	return xmlEndBlock(dst, d, "openhomes")
}

// xmlMedia appends a media container: its count always, its items with full
// detail. Photos carry a type attribute; tours and floorplans do not.
func xmlMedia(dst []byte, depth int, container, item string, count int, ms []upstream.Media, typed, full bool) []byte {
	dst, open := xmlCountOpen(dst, depth, container, count, full && len(ms) > 0)
	if !open {
		return dst
	}
	for i := range ms {
		m := &ms[i]
		dst = xmlStart(dst, depth+1, item)
		if typed {
			dst = xmlAttr(dst, "type", m.Type)
		}
		dst = xmlAttr(dst, "caption", m.Caption)
		dst = xmlAttrInt(dst, "position", int64(m.Position))
		dst = xmlAttr(dst, "thumbnail", m.Thumbnail)
		dst = xmlCloseText(dst, item, m.URL)
	}
	return xmlEndBlock(dst, depth, container)
}

func xmlAgentList(dst []byte, as []upstream.Agent, lv level) []byte {
	dst = append(dst, xmlHeader...)
	dst, open := xmlCountOpen(dst, 0, "agents", len(as), len(as) > 0)
	if !open {
		return dst
	}
	for i := range as {
		dst = xmlAgent(dst, 1, &as[i], lv)
	}
	return xmlEndBlock(dst, 0, "agents")
}

// xmlAgent appends an agent element as the listing schema lays it out
// (upstream.AgentFields).
func xmlAgent(dst []byte, depth int, a *upstream.Agent, lv level) []byte {
	rec := &sch.agent
	dst = xmlAttrs(xmlStart(dst, depth, rec.name), rec, a, &lv)
	dst = append(dst, ">\n"...)
	d := depth + 1
	elems := rec.elems[lv.rank()]
	for i := range elems {
		switch c := &elems[i]; {
		case c.kind != upstream.KindHand:
			dst = c.appendXMLElement(xmlIndent(dst, d), a, &lv)
		case c.part == partAgentProperties:
			dst = xmlAgentProperties(dst, d, a, &lv)
		}
	}
	return xmlEndBlock(dst, depth, rec.name)
}

// xmlAgentProperties appends an agent's current properties: their count,
// and with full detail each one's id, last update, address and agency id.
func xmlAgentProperties(dst []byte, d int, a *upstream.Agent, lv *level) []byte {
	dst, open := xmlCountOpen(dst, d, "properties", a.PropertyCount, lv.full && len(a.Properties) > 0)
	if !open {
		return dst
	}
	for i := range a.Properties {
		pr := &a.Properties[i]
		dst = xmlStart(dst, d+1, "property")
		dst = xmlAttrInt(dst, "id", pr.ID)
		dst = append(dst, ` last_updated="`...)
		dst = appendTime(dst, pr.LastUpdated, lv.loc, lastUpdatedLayout)
		dst = append(dst, "\">\n"...)
		dst = xmlString(dst, d+2, "address", pr.Address)
		dst = xmlString(dst, d+2, "agency_id", pr.AgencyID)
		dst = xmlEndBlock(dst, d+1, "property")
	}
	return xmlEndBlock(dst, d, "properties")
}

func xmlErrors(dst []byte, errs normalize.Errors) []byte {
	dst = append(dst, xmlHeader...)
	dst, open := xmlCountOpen(dst, 0, "errors", len(errs), len(errs) > 0)
	if !open {
		return dst
	}
	for _, e := range errs {
		dst = xmlStart(dst, 1, "error")
		dst = xmlAttr(dst, "field", e.Field)
		dst = xmlCloseText(dst, "error", e.Message)
	}
	return xmlEndBlock(dst, 0, "errors")
}
