package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"listingproxy/normalize"
	"listingproxy/upstream"
)

// currentStatuses are the statuses of an agent's current properties
// (docs/api.md, "Decisions beyond the spec").
var currentStatuses = []string{"CURRENT", "CONTRACT"}

// agentRequest is what an agent list or get asks of the database.
type agentRequest = request[normalize.AgentFilter]

// ListAgents implements upstream.Backend.
func (s *Store) ListAgents(ctx context.Context, sc upstream.Scope, c normalize.Criteria) ([]upstream.Agent, error) {
	as, err := s.agents(ctx, sc, requestOf(c.Agent(), c))
	if err != nil {
		return nil, fmt.Errorf("sqlstore: list agents: %w", err)
	}
	return as, nil
}

// GetAgent implements upstream.Backend.
func (s *Store) GetAgent(ctx context.Context, sc upstream.Scope, id int64) (upstream.Agent, error) {
	return getOne(ctx, "agent", id, func() ([]upstream.Agent, error) {
		return s.agents(ctx, sc, byID(normalize.AgentFilter{IDs: []int64{id}}))
	})
}

func (s *Store) agents(ctx context.Context, sc upstream.Scope, r agentRequest) ([]upstream.Agent, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	tenant, ok, err := s.tenantID(ctx, sc.Tenant)
	if err != nil {
		return nil, err
	}
	if !ok || r.limit <= 0 {
		return []upstream.Agent{}, nil
	}

	q, err := s.agentPageQuery(tenant, sc.Country, r)
	if err != nil {
		return nil, err
	}
	page := []upstream.Agent{}
	rs := newRowScanner(agentScan)
	err = s.each(ctx, "list_agents", q, func(rows *sql.Rows) error {
		a, err := rs.scan(rows)
		if err != nil {
			return err
		}
		page = append(page, a)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if err := s.decorateAgents(ctx, tenant, sc.Country, page, r.detail); err != nil {
		return nil, err
	}
	return page, nil
}

// agentPageQuery is the statement of an agent page.
//
// On MySQL a page filtered by name or username (and not by id) is
// selected by a deferred join over the index of that column, forced: the
// filter (a substring match of lower(name), or lower(username)) is tested
// on each of the scope's index entries (tenant_id, country, name, id),
// index-only, and only the page's rows are read whole. Left to choose,
// MariaDB walks agents_tc_id or the primary key and reads every agent of
// the scope from the table to test it (5,000 at a million properties:
// 11-13 ms of execution against 2 ms; bench/NOTES.md, "Agent name search
// on MariaDB"). MariaDB has no functional indexes, so no index range serves
// lower(); PostgreSQL and SQLite are left as they are. A view, or a table
// without the index, keeps the plain statement (see detectHints).
func (s *Store) agentPageQuery(tenant int64, country string, r agentRequest) (*query, error) {
	q := newQuery(s.d)
	f := r.filter
	index := ""
	switch {
	case len(f.IDs) > 0: // the primary key
	case f.Name != "":
		index = s.agentTextIndex("name")
	case f.Username != "":
		index = s.agentTextIndex("username")
	}
	if index == "" {
		q.add("SELECT ", agentColumns, " FROM agents a")
	} else {
		q.add("SELECT ", agentColumns, " FROM (SELECT a.id FROM agents a FORCE INDEX (", index, ")")
	}
	conds := []string{"a.tenant_id = " + q.arg(tenant), "a.country = " + q.arg(country)}
	if len(f.IDs) > 0 {
		conds = append(conds, in(q, "a.id", f.IDs))
	}
	if f.Name != "" {
		conds = append(conds, "lower(a.name) LIKE "+q.arg(likePattern(strings.ToLower(f.Name)))+s.d.likeEscape())
	}
	if f.Username != "" {
		conds = append(conds, "lower(a.username) = "+q.arg(strings.ToLower(f.Username)))
	}
	q.where(conds)
	if err := q.orderBy(r.order, agentOrder, "a.id"); err != nil {
		return nil, err
	}
	q.limitOffset(r.limit, r.offset)
	if index != "" {
		q.add(") page JOIN agents a ON a.id = page.id")
		if err := q.orderBy(r.order, agentOrder, "a.id"); err != nil {
			return nil, err
		}
	}
	return q, nil
}

// decorateAgents fills the current-property counts and, in full detail, the
// current properties of a page, with one batched query per chunk of agents.
// Only properties of the same tenant and country count.
func (s *Store) decorateAgents(ctx context.Context, tenant int64, country string, page []upstream.Agent, detail normalize.Detail) error {
	if len(page) == 0 {
		return nil
	}
	idx := make(map[int64]int, len(page))
	ids := make([]int64, len(page))
	for i := range page {
		idx[page[i].ID] = i
		ids[i] = page[i].ID
	}
	full := detail == normalize.Full
	for chunk := range chunks(ids) {
		q := newQuery(s.d)
		if full {
			q.add("SELECT pa.agent_id, p.id, p.last_updated, p.street_number, p.street_name, p.agency_id")
		} else {
			q.add("SELECT pa.agent_id, count(*)")
		}
		q.add(" FROM property_agents pa JOIN properties p ON p.id = pa.property_id WHERE ",
			in(q, "pa.agent_id", chunk),
			" AND p.tenant_id = ", q.arg(tenant), " AND p.country = ", q.arg(country),
			" AND ", in(q, "p.status", currentStatuses))
		if full {
			q.add(" ORDER BY pa.agent_id, p.id")
		} else {
			q.add(" GROUP BY pa.agent_id")
		}
		name := "count_agent_properties"
		if full {
			name = "load_agent_properties"
		}
		err := s.each(ctx, name, q, func(rows *sql.Rows) error {
			var aid int64
			if !full {
				var n int
				if err := rows.Scan(&aid, &n); err != nil {
					return err
				}
				page[idx[aid]].PropertyCount = n
				return nil
			}
			var ref upstream.PropertyRef
			var lastUpdated nullTime
			var number, name string
			if err := rows.Scan(&aid, &ref.ID, &lastUpdated, textOrEmpty{&number}, textOrEmpty{&name}, textOrEmpty{&ref.AgencyID}); err != nil {
				return err
			}
			ref.LastUpdated = lastUpdated.t
			ref.Address = (&upstream.Property{StreetNumber: number, StreetName: name}).Address()
			a := &page[idx[aid]]
			a.Properties = append(a.Properties, ref)
			a.PropertyCount++
			return nil
		})
		if err != nil {
			return fmt.Errorf("agent properties: %w", err)
		}
	}
	if full {
		for i := range page {
			page[i].Properties = nonNil(page[i].Properties)
		}
	}
	return nil
}
