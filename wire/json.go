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

// jsonFloatPtr appends v as a string, or the empty string when nil.
func jsonFloatPtr(dst []byte, key string, v *float64) []byte {
	if v == nil {
		return append(append(dst, key...), `""`...)
	}
	return jsonFloat(dst, key, *v)
}

func jsonIntPtr(dst []byte, key string, v *int) []byte {
	if v == nil {
		return append(append(dst, key...), `""`...)
	}
	return jsonInt(dst, key, int64(*v))
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

func jsonProperty(dst []byte, p *upstream.Property, lv level) []byte {
	dst = jsonID(append(dst, '{'), `"id":`, p.ID, lv)
	dst = jsonField(dst, `,"agency_id":`, p.AgencyID)
	dst = append(dst, `,"last_updated":"`...)
	dst = appendTime(dst, p.LastUpdated, lv.loc, lastUpdatedLayout)
	dst = append(dst, `","approved":"`...)
	dst = appendDate(dst, p.Approved)
	dst = append(dst, `","address":{"display":"`...)
	dst = appendBool(dst, p.AddressDisplay)
	dst = append(dst, `","address":"`...)
	dst = appendJSONEscaped(dst, p.StreetNumber)
	if p.StreetNumber != "" && p.StreetName != "" {
		dst = append(dst, ' ')
	}
	dst = appendJSONEscaped(dst, p.StreetName)
	dst = append(dst, `"}`...)
	dst = jsonField(dst, `,"status":`, p.Status)
	dst = jsonFloatPtr(dst, `,"latitude":`, p.Latitude)
	dst = jsonFloatPtr(dst, `,"longitude":`, p.Longitude)
	if lv.full {
		dst = jsonField(dst, `,"price":`, p.PriceText)
		if lv.prices {
			dst = jsonFloatPtr(dst, `,"price_from":`, p.PriceFrom)
			if p.PriceTo == nil {
				dst = append(dst, `,"price_to":null`...)
			} else {
				dst = jsonFloat(dst, `,"price_to":`, *p.PriceTo)
			}
		}
		dst = jsonField(dst, `,"category":`, p.Category)
		dst = jsonField(dst, `,"property_type":`, p.PropertyType)
		dst = jsonField(dst, `,"suburb":`, p.Suburb)
		dst = jsonField(dst, `,"area":`, p.Area)
		dst = jsonField(dst, `,"region":`, p.Region)
		dst = jsonIntPtr(dst, `,"bedrooms":`, p.Bedrooms)
		dst = jsonIntPtr(dst, `,"bathrooms":`, p.Bathrooms)
		dst = jsonFloatPtr(dst, `,"floor_size":`, p.FloorSize)
		dst = jsonFloatPtr(dst, `,"lot_size":`, p.LotSize)
		dst = jsonField(dst, `,"built_in":`, p.BuiltIn)
		dst = jsonField(dst, `,"description":`, p.Description)
	}

	dst = jsonMedia(dst, `,"photos":`, `,"photo":`, "photo", p.PhotoCount, p.Photos, true, lv)
	dst = jsonMedia(dst, `,"virtualtours":`, `,"virtualtour":`, "virtualtour", p.VirtualTourCount, p.VirtualTours, false, lv)
	dst = jsonMedia(dst, `,"floorplans":`, `,"floorplan":`, "floorplan", p.FloorplanCount, p.Floorplans, false, lv)

	dst = jsonInt(append(dst, `,"agents":{`...), `"count":`, int64(len(p.Agents)))
	dst = jsonOpenItems(dst, `,"agent":`, "agent", len(p.Agents), lv)
	for i, a := range p.Agents {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = jsonID(append(dst, '{'), `"id":`, a.ID, lv)
		dst = jsonField(dst, `,"name":`, a.Name)
		dst = append(dst, '}')
	}
	dst = jsonCloseItems(dst, "agent", len(p.Agents), lv)
	dst = append(dst, '}')

	if lv.full {
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
		dst = append(dst, '}')
	}
	return append(dst, '}')
}

// jsonMedia appends a media container: its count always, its items (an
// array, see jsonOpenItems) with full detail. Photos carry a type; tours
// and floorplans do not.
func jsonMedia(dst []byte, containerKey, itemsKey, item string, count int, ms []upstream.Media, typed bool, lv level) []byte {
	dst = jsonInt(append(append(dst, containerKey...), '{'), `"count":`, int64(count))
	if !lv.full {
		return append(dst, '}')
	}
	dst = jsonOpenItems(dst, itemsKey, item, len(ms), lv)
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
	dst = jsonCloseItems(dst, item, len(ms), lv)
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

func jsonAgent(dst []byte, a *upstream.Agent, lv level) []byte {
	dst = jsonID(append(dst, '{'), `"id":`, a.ID, lv)
	dst = jsonField(dst, `,"name":`, a.Name)
	if lv.full {
		dst = jsonField(dst, `,"username":`, a.Username)
		dst = jsonField(dst, `,"phone":`, a.Phone)
		dst = jsonField(dst, `,"after_hours_phone":`, a.AfterHoursPhone)
		dst = jsonField(dst, `,"mobile_phone":`, a.MobilePhone)
		dst = jsonField(dst, `,"email":`, a.Email)
		dst = jsonField(dst, `,"description":`, a.Description)
		dst = jsonField(dst, `,"photo":`, a.PhotoURL)
		dst = jsonField(dst, `,"website_url":`, a.WebsiteURL)
	}
	dst = jsonInt(append(dst, `,"properties":{`...), `"count":`, int64(a.PropertyCount))
	if lv.full {
		dst = jsonOpenItems(dst, `,"property":`, "property", len(a.Properties), lv)
		for i := range a.Properties {
			pr := &a.Properties[i]
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = jsonID(append(dst, '{'), `"id":`, pr.ID, lv)
			dst = append(dst, `,"last_updated":"`...)
			dst = appendTime(dst, pr.LastUpdated, lv.loc, lastUpdatedLayout)
			dst = append(dst, '"')
			dst = jsonField(dst, `,"address":`, pr.Address)
			dst = jsonField(dst, `,"agency_id":`, pr.AgencyID)
			dst = append(dst, '}')
		}
		dst = jsonCloseItems(dst, "property", len(a.Properties), lv)
	}
	return append(dst, "}}"...)
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
