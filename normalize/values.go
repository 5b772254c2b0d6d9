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
	if c.resource != Properties && c.resource != Agents {
		return v
	}
	for _, r := range params {
		if r.lists.has(c.resource) {
			r.values(v, &c)
		}
	}
	return v
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
	v[key] = lowerAll(vals)
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
