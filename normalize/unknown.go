package normalize

import (
	"fmt"
	"net/url"
	"slices"
	"strings"

	"listingproxy/internal/suggest"
)

// Parameters a list does not take are ignored by ParseProperties and
// ParseAgents (they are never part of the Key). These functions name them,
// for a caller that counts them or refuses them, and give the bounded
// label set a metric may use for a parameter.

// MaxUnknown bounds the unknown parameters Unknown returns: a query may
// carry thousands of them.
const MaxUnknown = 16

// Unknown returns the keys of q that the lists of r do not take, sorted,
// at most MaxUnknown of them; nil when there are none.
func Unknown(r Resource, q url.Values) []string {
	var out []string
	for k := range q {
		if _, ok := lookupParam(r, k); !ok {
			out = append(out, k)
		}
	}
	if out == nil {
		return nil
	}
	slices.Sort(out)
	return slices.Clip(out[:min(len(out), MaxUnknown)])
}

// OtherLabel is ParamLabel's label for anything that is not a parameter of
// the spec.
const OtherLabel = "other"

// paramLabels maps each parameter name of the spec's tables, without its
// "[]" or "[sub-key]" ("geo" for geo[lat]), to itself.
var paramLabels = func() map[string]string {
	m := map[string]string{}
	for _, n := range slotNames {
		base, _, _ := strings.Cut(n, "[")
		m[base] = base
	}
	return m
}()

// ParamLabel returns the label of a query key or an error's field for a
// metric: the spec's parameter it names, without "[]" or a sub-key
// ("status" for status[], "geo" for geo[lat]), whichever list takes it,
// else OtherLabel. The labels are a fixed set (ParamLabels).
func ParamLabel(key string) string {
	base, _, _ := strings.Cut(key, "[")
	if l, ok := paramLabels[base]; ok {
		return l
	}
	return OtherLabel
}

// ParamLabels returns every label ParamLabel returns, sorted, OtherLabel
// included.
func ParamLabels() []string {
	out := []string{OtherLabel}
	for l := range paramLabels {
		out = append(out, l)
	}
	slices.Sort(out)
	return out
}

// UnknownErrors returns the error list that refuses the unknown parameters
// names of a list of r (a tenant that refuses them): one error per name,
// the field the name itself (as given, at most 64 bytes), suggesting the
// parameter meant when the name is a likely typo of one.
func UnknownErrors(r Resource, names []string) Errors {
	errs := make(Errors, 0, len(names))
	for _, n := range names {
		msg := fmt.Sprintf("Unknown parameter %q: the %s list does not take it", echo(n), r)
		if near := nearest(r, n); near != "" {
			msg = fmt.Sprintf("Unknown parameter %q (did you mean %q?)", echo(n), near)
		}
		errs = append(errs, FieldError{Field: echo(n), Message: msg})
	}
	return errs
}

// nearest returns the key of the lists of r closest to name when it is
// within a third of name's length in edits (at most 2), else "".
func nearest(r Resource, name string) string {
	base := strings.TrimSuffix(name, "[]")
	var keys []string
	for p, n := range slotNames {
		if params[slotRow[p]].lists.has(r) {
			keys = append(keys, n)
		}
	}
	return suggest.Closest(base, keys, min(2, len(base)/3))
}
