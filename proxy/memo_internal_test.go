package proxy

import (
	"fmt"
	"net/url"
	"runtime"
	"testing"

	"listingproxy/normalize"
)

// TestClockMemoBudget: a memo bounded in cost evicts until a new entry
// fits, never holds more than its budget, keeps the entries used since the
// hand last passed, and refuses an entry costing more than the budget.
func TestClockMemoBudget(t *testing.T) {
	m := newClockMemoCost(100, 10, func(k string, v int) int { return v })
	for i := range 5 {
		m.put(fmt.Sprint("a", i), 2) // 10 of 10
	}
	if _, ok := m.get("a0"); !ok { // used: survives the next eviction
		t.Fatal("a0 missing before any eviction")
	}
	m.put("big", 4) // evicts a1 and a2 (a0 was used)
	for k, want := range map[string]bool{"a0": true, "a1": false, "a2": false, "a3": true, "a4": true, "big": true} {
		if _, ok := m.get(k); ok != want {
			t.Errorf("%s present = %v, want %v", k, ok, want)
		}
	}
	if m.used > m.budget {
		t.Errorf("used %d > budget %d", m.used, m.budget)
	}
	m.put("huge", 11)
	if _, ok := m.get("huge"); ok {
		t.Error("an entry costing more than the budget was kept")
	}
	for i := range 1000 { // churn: the budget and the slot count hold throughout
		m.put(fmt.Sprint("c", i), 1+i%3)
		if m.used > m.budget || len(m.m) > m.max || len(m.ring) > m.max {
			t.Fatalf("after %d puts: used %d, %d entries, %d slots", i, m.used, len(m.m), len(m.ring))
		}
	}
}

// TestClockMemoSet: set replaces a key's entry (put keeps the first), the
// replaced entry stays as a reader got it, the costs and slots stay
// accounted through replacements and evictions, and clear empties the
// memo, which then fills again.
func TestClockMemoSet(t *testing.T) {
	m := newClockMemoCost(4, 10, func(k string, v int) int { return v })
	m.put("a", 2)
	m.put("a", 3)
	if v, _ := m.get("a"); v != 2 {
		t.Errorf("put over a: %d, want the first value 2", v)
	}
	held := m.ref("a")
	m.set("a", 3)
	if v, _ := m.get("a"); v != 3 || *held != 2 {
		t.Errorf("set over a: %d (held %d), want 3 (held 2)", v, *held)
	}
	if m.used != 3 || len(m.m) != 1 {
		t.Errorf("after set: used %d, %d entries; want 3, 1", m.used, len(m.m))
	}
	for i := range 1000 { // churn of sets and puts: budget and slots hold
		k := fmt.Sprint("k", i%7)
		if i%2 == 0 {
			m.set(k, 1+i%4)
		} else {
			m.put(k, 1+i%3)
		}
		sum := 0
		for _, e := range m.m {
			sum += e.cost
			if m.ring[e.slot] != e {
				t.Fatalf("after %d stores: %s not in its slot", i, e.k)
			}
		}
		if sum != m.used || m.used > m.budget || len(m.m) > m.max || len(m.ring) > m.max {
			t.Fatalf("after %d stores: used %d (entries sum %d, budget %d), %d entries, %d slots", i, m.used, sum, m.budget, len(m.m), len(m.ring))
		}
	}
	m.clear()
	if m.len() != 0 || m.used != 0 {
		t.Errorf("after clear: %d entries, used %d", m.len(), m.used)
	}
	if _, ok := m.get("k1"); ok {
		t.Error("an entry survived clear")
	}
	for i := range 10 {
		m.put(fmt.Sprint("n", i), 2)
	}
	if m.len() != 4 || m.used != 8 {
		t.Errorf("refilled after clear: %d entries, used %d; want 4, 8", m.len(), m.used)
	}
}

// TestCriteriaMemoCost: memoCost does not underestimate what an entry
// holds on the heap, so memoBytes bounds the memo's share of the memory
// limit. Heap sizes are read after a collection; nothing here is timed.
func TestCriteriaMemoCost(t *testing.T) {
	const n = 5000
	for _, tc := range []struct{ name, query string }{
		{"short", "limit=1&offset=%d"},
		{"filters", "detail=full&limit=22&offset=%d&order=price&status=current&category=residential&bedrooms=3&suburb=bondi"},
		{"ids", "ids=%d,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkHeldCost(t, n, newCriteriaMemo, func(m *criteriaMemo, i int) int {
				raw := fmt.Sprintf(tc.query, i)
				q, err := url.ParseQuery(raw)
				if err != nil {
					t.Fatal(err)
				}
				c, errs := normalize.ParseProperties(q, normalize.Options{MaxResults: 1000})
				if errs != nil {
					t.Fatalf("%s: %v", raw, errs)
				}
				k := memoKey{normalize.Properties, 1000, 0, raw}
				v := newParsedQuery(c, normalize.Unknown(normalize.Properties, q))
				m.put(k, v)
				return memoCost(k, v)
			})
		})
	}
}

// checkHeldCost makes a memo with newMemo and adds n entries with add
// (which returns each entry's estimated cost) between two collections: the
// memo must hold them all, and no more heap than their estimated costs add
// up to, so the memo's byte budget bounds its share of the memory limit.
func checkHeldCost[K comparable, V any](t *testing.T, n int, newMemo func() *clockMemo[K, V], add func(m *clockMemo[K, V], i int) int) {
	t.Helper()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	m := newMemo()
	cost := 0
	for i := range n {
		cost += add(m, i)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	held := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	t.Logf("%d entries hold %d B (%d B each), estimated %d B (%d B each)", m.len(), held, held/int64(n), cost, cost/n)
	if m.len() != n {
		t.Fatalf("memo holds %d, want %d", m.len(), n)
	}
	if held > int64(cost) {
		t.Errorf("%d entries hold %d B, more than the %d B estimated", n, held, cost)
	}
	runtime.KeepAlive(m)
}
