package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"listingproxy/normalize"
	"listingproxy/upstream"
)

const agentColumns = "a.id, a.name, a.username, a.phone, a.after_hours_phone, a.mobile_phone, " +
	"a.email, a.description, a.photo_url, a.website_url"

// currentStatuses are the statuses of an agent's current properties
// (design.md §4).
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
	err = s.each(ctx, "list_agents", q, func(rows *sql.Rows) error {
		var a upstream.Agent
		if err := rows.Scan(&a.ID, textOrEmpty{&a.Name}, textOrEmpty{&a.Username}, textOrEmpty{&a.Phone},
			textOrEmpty{&a.AfterHoursPhone}, textOrEmpty{&a.MobilePhone}, textOrEmpty{&a.Email}, textOrEmpty{&a.Description},
			textOrEmpty{&a.PhotoURL}, textOrEmpty{&a.WebsiteURL}); err != nil {
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
func (s *Store) agentPageQuery(tenant int64, country string, r agentRequest) (*query, error) {
	q := newQuery(s.d)
	q.add("SELECT ", agentColumns, " FROM agents a")
	conds := []string{"a.tenant_id = " + q.arg(tenant), "a.country = " + q.arg(country)}
	f := r.filter
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
