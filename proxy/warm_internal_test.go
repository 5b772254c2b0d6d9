package proxy

import (
	"fmt"
	"testing"

	"listingproxy/cache"
)

// TestHotKeysDecay: the record holds at most 4×n keys; a new key that
// finds it full halves every count and drops those at zero (so a key
// filled once long ago gives way), the most filled stay first, a replay
// keeps a rank without adding to it, and top filters by tenant.
func TestHotKeysDecay(t *testing.T) {
	h := newHotKeys(1) // room for 4 keys
	key := func(i int) cache.Key {
		tenant := "harbour"
		if i == 3 {
			tenant = "summit"
		}
		return cache.Key{Tenant: tenant, Resource: "properties", Scope: "full|au|xml", Variant: fmt.Sprint(i)}
	}
	target := func(i int) WarmTarget {
		return WarmTarget{User: "u", Target: fmt.Sprintf("/au/properties.xml?limit=%d", i), Hits: 1}
	}
	for i := 1; i <= 4; i++ {
		for range i * 2 { // key i filled 2i times
			h.record(key(i), target(i), false)
		}
	}
	h.record(key(1), WarmTarget{User: "u", Target: target(1).Target, Hits: 1}, true) // a replay: no more than it had
	if got := h.top(10, ""); len(got) != 4 || got[0].Hits != 8 || got[3].Hits != 2 {
		t.Fatalf("before the decay: %+v", got)
	}
	h.record(key(5), target(5), false) // full: 2,4,6,8 halve to 1,2,3,4; none at zero, no room
	if got := h.top(10, ""); len(got) != 4 || got[0].Hits != 4 || got[3].Hits != 1 {
		t.Fatalf("after a first decay: %+v; want 4 keys, 4..1 hits, key 5 not recorded", got)
	}
	h.record(key(5), target(5), false) // 1,2,3,4 halve to 0,1,1,2: key 1 goes, key 5 comes in
	got := h.top(10, "")
	want := []string{"/au/properties.xml?limit=4", "/au/properties.xml?limit=2", "/au/properties.xml?limit=3", "/au/properties.xml?limit=5"}
	if len(got) != len(want) {
		t.Fatalf("after a second decay: %+v; want %v", got, want)
	}
	for i := range want {
		if got[i].Target != want[i] {
			t.Errorf("top[%d] = %s (%d hits), want %s", i, got[i].Target, got[i].Hits, want[i])
		}
	}
	if s := h.top(10, "summit"); len(s) != 1 || s[0].Target != target(3).Target {
		t.Errorf("summit's: %+v, want key 3 alone", s)
	}
	if s := h.top(1, ""); len(s) != 1 || s[0].Target != want[0] {
		t.Errorf("top(1) = %+v", s)
	}
}
