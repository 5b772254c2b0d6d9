package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"listingproxy/internal/testkit"
	"listingproxy/proxy"
	"listingproxy/upstream/breaker"
)

// TestBusyBackendAnswersStaleOrFast503: when a tenant's calls to a slow
// CRM hold every slot it may, a further request does not wait for
// its fill's deadline: after breaker.queue_timeout it gets its stale copy
// when one exists, else a 503 with
// Retry-After: 1 and the spec's body; no breaker counts those refusals, and
// once the CRM answers the tenant is served again. The CRM here blocks
// until released, so the outcome is the same on any machine.
func TestBusyBackendAnswersStaleOrFast503(t *testing.T) {
	doc, err := os.ReadFile("../legacy-crm/testdata/fixtures/au/properties/3301.xml")
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	entered := make(chan string, 64)
	var warmCalls atomic.Int32
	crm := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/au/properties/3301.xml" {
			entered <- r.URL.Path
			select {
			case <-release:
			case <-r.Context().Done():
			}
			w.Header().Set("Content-Type", "application/xml")
			_, _ = w.Write([]byte(`<?xml version="1.0" encoding="UTF-8"?>` + "\n<error>Listing is no longer available</error>\n"))
			return
		}
		warmCalls.Add(1)
		w.Header().Set("Content-Type", "application/xml")
		_, _ = w.Write(doc)
	}))
	defer crm.Close()
	defer func() {
		select {
		case <-release:
		default:
			close(release)
		}
	}()
	clk := testkit.NewClock(time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC))
	a := crmDemoAppAt(t, crm.URL, clk.Now)

	const warm = "/au/properties/3301.xml"
	if w := demoGet(t, a.handler, "summit", warm); w.Code != http.StatusOK {
		t.Fatalf("warm-up: %d %s", w.Code, w.Body)
	}
	// The adaptive limit starts at 16; summit, alone on the CRM, may
	// borrow all of it but the reserve (2 slots). Fourteen cold requests
	// take them and block at the CRM.
	const held = breaker.InitialConcurrency - breaker.InitialConcurrency/8
	done := make(chan int, held)
	for i := range held {
		go func() { done <- demoGet(t, a.handler, "summit", fmt.Sprintf("/au/properties/%d.xml", 10+i)).Code }()
	}
	for range held {
		<-entered
	}
	legacy := func() breaker.LimitStatus {
		for _, l := range a.breakers.Limits() {
			if l.Backend == "legacy" {
				return l
			}
		}
		t.Fatal("no limiter for the CRM backend")
		return breaker.LimitStatus{}
	}
	if l := legacy(); !l.Adaptive || l.InFlight != held || l.Limit != breaker.InitialConcurrency {
		t.Fatalf("CRM limit %+v, want adaptive with %d in flight of %d", l, held, breaker.InitialConcurrency)
	}

	for i := range 3 { // cold: a 503 after the queue timeout, with Retry-After
		w := demoGet(t, a.handler, "summit", "/au/properties/99"+string(rune('0'+i))+".json")
		if w.Code != http.StatusServiceUnavailable || w.Header().Get("Retry-After") != "1" || !strings.Contains(w.Body.String(), "temporarily unavailable") {
			t.Errorf("cold request while busy: %d Retry-After %q %s, want 503, Retry-After 1 and the spec's body", w.Code, w.Header().Get("Retry-After"), w.Body)
		}
	}
	clk.Advance(proxy.DefaultPolicy.TTL + proxy.DefaultPolicy.StaleWhileRevalidate + time.Second) // past ttl and stale_while_revalidate
	// The CRM's answer is kept once for every variant (docs/crm.md, "One
	// fetch serves every variant"): the variant is rendered from its stale
	// copy, without a CRM call.
	w := demoGet(t, a.handler, "summit", warm)
	if w.Code != http.StatusOK || !strings.Contains(w.Body.String(), "3301") || warmCalls.Load() != 1 {
		t.Errorf("warm request while busy: %d after %d CRM calls for it %s, want 200 from the stale copy (1 call, the warm-up's)", w.Code, warmCalls.Load(), w.Body)
	}
	for _, st := range a.breakers.States() {
		if st.State != breaker.StateClosed {
			t.Errorf("breaker %s/%s %s after the refusals, want closed: waiting for a slot is no backend failure", st.Backend, st.Tenant, st.State)
		}
	}
	if l := legacy(); l.Refusals[breaker.RefusedQueueTimeout] != 4 {
		t.Errorf("refusals %v, want 4 by queue timeout", l.Refusals)
	}

	close(release)
	for range held {
		<-done
	}
	clk.Advance(time.Minute + 5*time.Minute + time.Second)
	if w := demoGet(t, a.handler, "summit", warm); w.Code != http.StatusOK || warmCalls.Load() != 2 {
		t.Errorf("after the CRM answered: %d after %d CRM calls for it, want a fresh 200 (2 calls)", w.Code, warmCalls.Load())
	}
}
