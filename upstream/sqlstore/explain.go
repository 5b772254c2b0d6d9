package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"listingproxy/normalize"
	"listingproxy/upstream"
)

// Explain returns the engine's plan for the main statement of a list
// request: the statement that selects the page, or for a geo search the
// bounding-box candidates. PostgreSQL: EXPLAIN (ANALYZE, COSTS OFF), which
// runs the statement; MySQL: EXPLAIN, one line per table; SQLite: EXPLAIN
// QUERY PLAN. It is for benchmarks and for checking the indexes of a legacy
// schema; the decorating statements (agents, media, open homes of a page)
// look rows up by key.
func (s *Store) Explain(ctx context.Context, sc upstream.Scope, c normalize.Criteria) (string, error) {
	tenant, ok, err := s.tenantID(ctx, sc.Tenant)
	if err != nil {
		return "", fmt.Errorf("sqlstore: explain: %w", err)
	}
	if !ok {
		return "", fmt.Errorf("sqlstore: explain: unknown tenant %q", sc.Tenant)
	}
	var q *query
	switch c.Resource() {
	case normalize.Agents:
		q, err = s.agentPageQuery(tenant, sc.Country, requestOf(c.Agent(), c))
	default:
		r := requestOf(c.Property(), c)
		if r.filter.Geo != nil {
			q, err = s.geoCandidatesQuery(tenant, sc.Country, r)
		} else {
			q, err = s.propertyPageQuery(tenant, sc.Country, r)
		}
	}
	if err != nil {
		return "", fmt.Errorf("sqlstore: explain: %w", err)
	}
	prefix := map[string]string{
		"postgresql": "EXPLAIN (ANALYZE, COSTS OFF) ",
		"mysql":      "EXPLAIN ",
		"sqlite":     "EXPLAIN QUERY PLAN ",
	}[s.d.systemName()]
	rows, err := s.db.QueryContext(ctx, prefix+q.String(), q.args...)
	if err != nil {
		return "", fmt.Errorf("sqlstore: explain: %w", err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return "", fmt.Errorf("sqlstore: explain: %w", err)
	}
	var b strings.Builder
	for rows.Next() {
		vals := make([]sql.NullString, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return "", fmt.Errorf("sqlstore: explain: %w", err)
		}
		switch s.d.systemName() {
		case "mysql": // a table of columns: name them
			for i, v := range vals {
				if i > 0 {
					b.WriteString(", ")
				}
				fmt.Fprintf(&b, "%s: %s", cols[i], nullText(v))
			}
		case "sqlite": // id, parent, notused, detail
			b.WriteString(nullText(vals[len(vals)-1]))
		default:
			b.WriteString(nullText(vals[0]))
		}
		b.WriteByte('\n')
	}
	if err := rows.Err(); err != nil {
		return "", fmt.Errorf("sqlstore: explain: %w", err)
	}
	return b.String(), nil
}

func nullText(v sql.NullString) string {
	if !v.Valid {
		return "NULL"
	}
	return v.String
}
