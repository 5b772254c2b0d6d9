package proxy_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"listingproxy/cache"
	"listingproxy/proxy"
	"listingproxy/upstream"
)

// TestChangePurges is the purge policy of every change feed, case by case.
func TestChangePurges(t *testing.T) {
	tenant := func() proxy.ChangePurge {
		return proxy.ChangePurge{Purge: cache.Purge{Tenant: "harbour", Mode: cache.Soft}, Kind: "tenant"}
	}
	entity := func(target string, tags ...cache.Tag) proxy.ChangePurge {
		return proxy.ChangePurge{Purge: cache.Purge{Tenant: "harbour", Tags: tags, Mode: cache.Soft}, Kind: "entity", Target: target}
	}
	list := func(r string) proxy.ChangePurge {
		return proxy.ChangePurge{Purge: cache.Purge{Tenant: "harbour", Resource: r, Mode: cache.Soft}, Kind: "resource", Target: r}
	}
	for _, c := range []struct {
		name   string
		change upstream.Change
		want   []proxy.ChangePurge
	}{
		{"update of a property", upstream.Change{Tenant: "hb", Resource: "properties", Table: "properties", Op: "UPDATE", Properties: []int64{7}},
			[]proxy.ChangePurge{entity("1 properties, 0 agents", proxy.PropertyTag(7))}},
		{"agent link: both documents", upstream.Change{Tenant: "hb", Resource: "properties", Table: "property_agents", Op: "INSERT", Properties: []int64{7}, Agents: []int64{3}},
			[]proxy.ChangePurge{entity("1 properties, 1 agents", proxy.PropertyTag(7), proxy.AgentTag(3))}},
		{"insert of a property: its lists too", upstream.Change{Tenant: "hb", Resource: "properties", Table: "properties", Op: "INSERT", Properties: []int64{8}},
			[]proxy.ChangePurge{entity("1 properties, 0 agents", proxy.PropertyTag(8)), list("properties")}},
		{"insert from a feed without tables", upstream.Change{Tenant: "hb", Resource: "agents", Op: "INSERT", Agents: []int64{9}},
			[]proxy.ChangePurge{entity("0 properties, 1 agents", proxy.AgentTag(9)), list("agents")}},
		{"delete of a property", upstream.Change{Tenant: "hb", Resource: "properties", Op: "DELETE", Properties: []int64{7}},
			[]proxy.ChangePurge{entity("1 properties, 0 agents", proxy.PropertyTag(7))}},
		{"a bulk statement naming none", upstream.Change{Tenant: "hb", Resource: "properties", Op: "UPDATE"}, []proxy.ChangePurge{tenant()}},
		{"a gap", upstream.Change{Tenant: "hb", Gap: true, Properties: []int64{1}}, []proxy.ChangePurge{tenant()}},
		{"every tenant", upstream.Change{Tenant: upstream.AllTenants}, []proxy.ChangePurge{tenant()}},
		{"entities of a tenant not known", upstream.Change{Tenant: upstream.AllTenants, Resource: "properties", Op: "DELETE", Properties: []int64{4}},
			[]proxy.ChangePurge{entity("1 properties, 0 agents", proxy.PropertyTag(4))}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if diff := cmp.Diff(c.want, proxy.ChangePurges("harbour", c.change)); diff != "" {
				t.Errorf("purges (-want +got):\n%s", diff)
			}
		})
	}
}
