package normalize_test

import (
	"fmt"
	"net/url"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"listingproxy/normalize"
)

func TestUnknown(t *testing.T) {
	for _, tc := range []struct {
		r     normalize.Resource
		query string
		want  []string
	}{
		{normalize.Properties, "status[]=current&geo[lat]=1&limit=2", nil},
		{normalize.Properties, "statuss=current&name=jane&status=sold&_=17", []string{"_", "name", "statuss"}},
		{normalize.Agents, "name=jane&bedrooms=3&status[]=x", []string{"bedrooms", "status[]"}},
		{normalize.Agents, "geo[lat]=1", []string{"geo[lat]"}},
	} {
		q, err := url.ParseQuery(tc.query)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(tc.want, normalize.Unknown(tc.r, q)); diff != "" {
			t.Errorf("Unknown(%v, %s) (-want +got):\n%s", tc.r, tc.query, diff)
		}
	}
	many := url.Values{}
	for i := range 1000 {
		many.Set(fmt.Sprintf("x%04d", i), "1")
	}
	if got := normalize.Unknown(normalize.Properties, many); len(got) != normalize.MaxUnknown || got[0] != "x0000" {
		t.Errorf("1000 unknown parameters: %d returned, first %q; want the first %d sorted", len(got), got[0], normalize.MaxUnknown)
	}
}

func TestParamLabel(t *testing.T) {
	for key, want := range map[string]string{
		"status": "status", "status[]": "status", "geo[lat]": "geo", "geo": "geo", "name": "name", "username": "username",
		"order[]": "order", "statuss": "other", "": "other", "query": "other", "_": "other", "price_from[]": "price_from",
	} {
		if got := normalize.ParamLabel(key); got != want {
			t.Errorf("ParamLabel(%q) = %q, want %q", key, got, want)
		}
	}
	labels := normalize.ParamLabels()
	if len(labels) != 24 || !slices.IsSorted(labels) || !slices.Contains(labels, "other") || !slices.Contains(labels, "geo") {
		t.Errorf("ParamLabels() = %q; want the spec's 23 parameter names and other, sorted", labels)
	}
	for _, l := range labels {
		if normalize.ParamLabel(l) != l {
			t.Errorf("ParamLabel(%q) = %q: a label is not its own label", l, normalize.ParamLabel(l))
		}
	}
}

func TestUnknownErrors(t *testing.T) {
	got := normalize.UnknownErrors(normalize.Properties, []string{"statuss", "limt[]", "foo", "x\xff"})
	want := normalize.Errors{
		{Field: "statuss", Message: `Unknown parameter "statuss" (did you mean "status"?)`},
		{Field: "limt[]", Message: `Unknown parameter "limt[]" (did you mean "limit"?)`},
		{Field: "foo", Message: `Unknown parameter "foo": the properties list does not take it`},
		{Field: "x\xff", Message: `Unknown parameter "x\xff": the properties list does not take it`},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("UnknownErrors (-want +got):\n%s", diff)
	}
	if got := normalize.UnknownErrors(normalize.Agents, []string{"nam"}); got[0].Message != `Unknown parameter "nam" (did you mean "name"?)` {
		t.Errorf("agents: %q", got[0].Message)
	}
}
