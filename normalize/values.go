package normalize

import (
	"net/url"
	"strconv"
	"strings"
)

// Values returns the canonical query of the criteria in the spec's parameter
// forms: multi-valued parameters as key[]=v, single ones as key=v, geo as
// geo[lat], geo[long] and geo[rad]. Filters are written only when given;
// detail, limit, offset and order are always written, so an upstream that has
// other defaults sees exactly what the criteria mean. Enumerated values are in
// the spec's filter spelling (status and category in lower case) and dates as
// yyyymmdd.
//
// Parsing the result again with the same Options yields criteria with the
// same Key. The zero Criteria yields an empty url.Values.
func (c Criteria) Values() url.Values {
	v := url.Values{}
	switch c.resource {
	case Properties:
		c.prop.appendValues(v)
	case Agents:
		c.agent.appendValues(v)
	default:
		return v
	}
	v.Set("detail", c.detail.String())
	v.Set("limit", strconv.Itoa(c.limit))
	v.Set("offset", strconv.Itoa(c.offset))
	if c.resource == Agents {
		// Agents take one order field; "id" is implied after it.
		v.Set("order", c.order[0])
	} else {
		v["order[]"] = append([]string(nil), c.order...)
	}
	return v
}

func (p *PropertyFilter) appendValues(v url.Values) {
	setInts(v, "id[]", p.IDs)
	if len(p.AgencyIDs) > 0 {
		v["agency_id[]"] = append([]string(nil), p.AgencyIDs...)
	}
	setInts(v, "agent_id[]", p.AgentIDs)
	setString(v, "street_number", p.StreetNumber)
	setString(v, "street_name", p.StreetName)
	setFloat(v, "price_from", p.PriceFrom)
	setFloat(v, "price_to", p.PriceTo)
	setLower(v, "category[]", p.Categories)
	setLower(v, "status[]", p.Statuses)
	if len(p.PropertyTypes) > 0 {
		v["property_type[]"] = append([]string(nil), p.PropertyTypes...)
	}
	if len(p.PriceTypes) > 0 {
		v["price_type[]"] = append([]string(nil), p.PriceTypes...)
	}
	if p.Bedrooms != nil {
		v.Set("bedrooms", strconv.Itoa(*p.Bedrooms))
	}
	if p.Bathrooms != nil {
		v.Set("bathrooms", strconv.Itoa(*p.Bathrooms))
	}
	if g := p.Geo; g != nil {
		v.Set("geo[lat]", formatFloat(g.Lat))
		v.Set("geo[long]", formatFloat(g.Long))
		v.Set("geo[rad]", formatFloat(g.RadiusKm))
	}
	if p.Featured {
		v.Set("featured", "true")
	}
	setDate(v, "approved_from", p.ApprovedFrom)
	setDate(v, "approved_to", p.ApprovedTo)
}

func (a *AgentFilter) appendValues(v url.Values) {
	setInts(v, "id[]", a.IDs)
	setString(v, "name", a.Name)
	setString(v, "username", a.Username)
}

func setInts(v url.Values, key string, ids []int64) {
	if len(ids) == 0 {
		return
	}
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = strconv.FormatInt(id, 10)
	}
	v[key] = s
}

func setString(v url.Values, key, s string) {
	if s != "" {
		v.Set(key, s)
	}
}

func setLower(v url.Values, key string, vals []string) {
	if len(vals) == 0 {
		return
	}
	s := make([]string, len(vals))
	for i, x := range vals {
		s[i] = strings.ToLower(x)
	}
	v[key] = s
}

func setFloat(v url.Values, key string, f *float64) {
	if f != nil {
		v.Set(key, formatFloat(*f))
	}
}

// setDate writes a canonical "YYYY-MM-DD" date in the query form yyyymmdd.
func setDate(v url.Values, key, d string) {
	if d != "" {
		v.Set(key, strings.ReplaceAll(d, "-", ""))
	}
}

// formatFloat is the one canonical spelling of a number, used by both Key and
// Values: the shortest plain decimal that round-trips, never an exponent.
func formatFloat(f float64) string {
	return strconv.FormatFloat(f, 'f', -1, 64)
}
