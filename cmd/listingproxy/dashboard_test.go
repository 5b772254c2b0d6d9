package main

import (
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// leftOffDashboard are the exported families the Grafana dashboard
// deliberately does not chart, each with the reason. A family that is
// neither charted nor listed here fails TestDashboardCoversEveryFamily.
var leftOffDashboard = map[string]string{}

// familySource finds the families the code registers: a Name or NewDesc
// of a "listingproxy_" name outside tests.
var familySource = regexp.MustCompile(`(?:Name:\s*|NewDesc\()"(listingproxy_[a-z0-9_]+)"`)

// TestDashboardCoversEveryFamily: every family listingproxy exports (from
// the wired service and the registries of the configurations it does not
// have, deployFamilies) is read by a panel of the shipped Grafana dashboard
// or listed in leftOffDashboard with a reason; go_* and process_* are the
// client library's runtime collectors, of which the Process row charts
// memory, CPU, goroutines and GC. And every family the code registers is
// among those gathered, so that a new one cannot escape the check.
func TestDashboardCoversEveryFamily(t *testing.T) {
	_, types, _ := deployFamilies(t)
	dashboards, _ := filepath.Glob("../../deploy/grafana/*.json")
	charted := map[string]bool{}
	for _, p := range dashboards {
		for _, q := range dashboardQueries(t, p) {
			for _, n := range promMetrics(q) {
				charted[n] = true
				for _, suffix := range []string{"_bucket", "_sum", "_count"} {
					if base, ok := strings.CutSuffix(n, suffix); ok {
						charted[base] = true
					}
				}
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(types)) {
		if strings.HasPrefix(name, "go_") || strings.HasPrefix(name, "process_") || strings.HasPrefix(name, "promhttp_") {
			continue
		}
		reason, left := leftOffDashboard[name]
		switch {
		case charted[name] && left:
			t.Errorf("%s is on the dashboard and in leftOffDashboard (%q): take it out of the list", name, reason)
		case !charted[name] && !left:
			t.Errorf("%s is exported but on no dashboard panel: chart it (deploy/grafana) or add it to leftOffDashboard with the reason", name)
		case left && reason == "":
			t.Errorf("%s: leftOffDashboard gives no reason", name)
		}
	}
	for name := range leftOffDashboard {
		if types[name] == "" {
			t.Errorf("leftOffDashboard lists %s, which listingproxy does not export", name)
		}
	}

	// Every family the code registers was gathered.
	var sources []string
	for _, dir := range []string{"../../telemetry", "../../cache", "../../upstream", "../../proxy", "../../internal", "."} {
		_ = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() && strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "_test.go") {
				sources = append(sources, path)
			}
			return nil
		})
	}
	registered := 0
	for _, path := range sources {
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range familySource.FindAllStringSubmatch(string(src), -1) {
			registered++
			if types[m[1]] == "" {
				t.Errorf("%s registers %s, which deployFamilies did not gather: register it there as the wiring does", path, m[1])
			}
		}
	}
	if registered < 40 {
		t.Errorf("found only %d registered families in the sources: is familySource still right?", registered)
	}
}
