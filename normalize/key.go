package normalize

import (
	"net/url"
	"strconv"
	"strings"
)

// buildKey returns the canonical text of c. It is shaped like a query string
// behind the resource name:
//
//	properties?status=CURRENT,SOLD&geo=-33.86,151.2,5&detail=short&limit=1000&offset=0&order=price,id
//
// Filters come first, in the order of the spec's table and only when given
// (geo as lat,long,rad); detail, the effective limit, offset and order are
// always present. Multiple values are joined with commas. Every text value is
// query-escaped, so it can hold none of the separators "&", "=", "," and the
// key is injective: different criteria never share a key.
func (c *Criteria) buildKey() string {
	var w keyWriter
	w.b.Grow(160)
	w.b.WriteString(c.resource.String())
	w.b.WriteByte('?')
	for _, r := range params {
		if r.lists.has(c.resource) {
			r.key(&w, c)
		}
	}
	return w.b.String()
}

type keyWriter struct {
	b     strings.Builder
	buf   [40]byte
	first bool // a field has been written
}

func (w *keyWriter) name(n string) {
	if w.first {
		w.b.WriteByte('&')
	}
	w.first = true
	w.b.WriteString(n)
	w.b.WriteByte('=')
}

func (w *keyWriter) text(n, s string) {
	if s == "" {
		return
	}
	w.name(n)
	w.escaped(s)
}

func (w *keyWriter) texts(n string, ss []string) {
	if len(ss) == 0 {
		return
	}
	w.name(n)
	for i, s := range ss {
		if i > 0 {
			w.b.WriteByte(',')
		}
		w.escaped(s)
	}
}

func (w *keyWriter) ints(n string, ids []int64) {
	if len(ids) == 0 {
		return
	}
	w.name(n)
	for i, id := range ids {
		if i > 0 {
			w.b.WriteByte(',')
		}
		w.b.Write(strconv.AppendInt(w.buf[:0], id, 10))
	}
}

// number writes a whole number that is always present.
func (w *keyWriter) number(n string, v int) {
	w.name(n)
	w.b.Write(strconv.AppendInt(w.buf[:0], int64(v), 10))
}

func (w *keyWriter) int(n string, v *int) {
	if v != nil {
		w.name(n)
		w.b.Write(strconv.AppendInt(w.buf[:0], int64(*v), 10))
	}
}

func (w *keyWriter) float(n string, v *float64) {
	if v != nil {
		w.name(n)
		w.num(*v)
	}
}

// num writes the canonical spelling of a number (see formatFloat).
func (w *keyWriter) num(f float64) {
	w.b.Write(strconv.AppendFloat(w.buf[:0], f, 'f', -1, 64))
}

// escaped writes url.QueryEscape(s) without allocating when s needs no
// escaping, which is the common case.
func (w *keyWriter) escaped(s string) {
	for i := 0; i < len(s); i++ {
		if !unreserved(s[i]) {
			w.b.WriteString(url.QueryEscape(s))
			return
		}
	}
	w.b.WriteString(s)
}

// unreserved reports whether url.QueryEscape leaves c as it is.
func unreserved(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		c == '-' || c == '_' || c == '.' || c == '~'
}
