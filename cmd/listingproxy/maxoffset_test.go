package main

import (
	"os"
	"strings"
	"testing"
)

// TestMaxOffsetDemo: the top-level max_offset bounds the SQL tenants'
// lists through the wired service: past it, the spec's error list on
// offset (as every criteria error), without a query; at it, the list.
func TestMaxOffsetDemo(t *testing.T) {
	path := demoConfig(t)
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := strings.Replace(string(src), "\nmax_offset: 0 ", "\nmax_offset: 50 ", 1)
	if s == string(src) {
		t.Fatal("config.yaml has no max_offset: 0 line")
	}
	if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
	a := newAppFrom(t, path)
	for _, target := range []string{"/au/properties.json?offset=51", "/nz/agents.json?offset=51&limit=1"} {
		w := demoGet(t, a.handler, "harbour", target)
		want := `{"errors":{"count":"1","error":{"field":"offset","message":"Invalid offset \"51\": must be a whole number from 0 to 50"}}}` + "\n"
		if w.Code != 200 || w.Body.String() != want {
			t.Errorf("%s: status %d, body %s; want 200 with %s", target, w.Code, w.Body, want)
		}
	}
	w := demoGet(t, a.handler, "harbour", "/au/properties.json?offset=50&limit=1")
	if w.Code != 200 || !strings.Contains(w.Body.String(), `{"properties":{"count":"1"`) {
		t.Errorf("offset=50 at max_offset 50: status %d, body %s; want one property", w.Code, w.Body)
	}
}
