package main

import (
	"net/http"

	"listingproxy/statuspage"
	"listingproxy/telemetry"
)

// withStatusPage serves the operator's page (statuspage) at GET /status and
// GET /status.json behind the admin credentials, and everything else with
// admin.
func (a *app) withStatusPage(admin http.Handler) http.Handler {
	o := statuspage.Options{Traffic: a.metrics, Failures: a.errors, Events: a.metrics,
		Breakers: a.breakers, Build: telemetry.ReadBuild()}
	if a.cache != nil { // a nil *cache.Store in the interface would not be nil
		o.Cache = a.cache
	}
	page := adminAuth(a.cfg.Admin, statuspage.New(o))
	mux := http.NewServeMux()
	mux.Handle("GET /status", page)
	mux.Handle("GET /status.json", page)
	mux.Handle("/", admin)
	return mux
}
