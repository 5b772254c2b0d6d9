package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"listingproxy/normalize"
	"listingproxy/upstream"
)

// denseAgentsNote starts the line of an Explain that says the agent_id
// filter was left to a walk of the scope (see resolveAgents).
const denseAgentsNote = "dense agent filter"

// deepPageNote starts the line of an Explain that says the page lies past
// more than largeRows rows: an offset is walked, index entry by index
// entry, on every engine (no keyset pagination in the API), and only
// PostgreSQL's plans carry the counts that show it.
const deepPageNote = "deep page"

// Explain returns the engine's plan for the main statement of a list
// request: the statement that selects the page, or for a geo search the
// bounding-box candidates. PostgreSQL: EXPLAIN (ANALYZE, COSTS OFF), which
// runs the statement; MySQL: EXPLAIN, one line per table; SQLite: EXPLAIN
// QUERY PLAN. An agent_id filter first runs the statements of
// resolveAgents, and a geo search its geo_count and geo_probe (see geoPage): their plans
// come first, each under a line "statement NAME:", then "statement
// list_properties:" (or geo_walk, geo_candidates) and the main plan; a
// statement that does not run for the request has no plan. When the
// agents have more than 500 properties, a line starting with
// denseAgentsNote says so before the main plan. It is for benchmarks, tests and for checking the
// indexes of a legacy schema; the decorating statements (agents, media, open
// homes of a page) look rows up by key.
func (s *Store) Explain(ctx context.Context, sc upstream.Scope, c normalize.Criteria) (string, error) {
	plan, err := s.explain(ctx, sc, c)
	if err != nil {
		return "", fmt.Errorf("sqlstore: explain: %w", err)
	}
	return plan, nil
}

func (s *Store) explain(ctx context.Context, sc upstream.Scope, c normalize.Criteria) (string, error) {
	tenant, ok, err := s.tenantID(ctx, sc.Tenant)
	if err != nil {
		return "", err
	}
	if !ok {
		return "", fmt.Errorf("unknown tenant %q", sc.Tenant)
	}
	if c.Resource() == normalize.Agents {
		q, err := s.agentPageQuery(tenant, sc.Country, requestOf(c.Agent(), c))
		if err != nil {
			return "", err
		}
		return s.explainQuery(ctx, q)
	}
	r := requestOf(c.Property(), c)
	var b strings.Builder
	if ids := r.filter.AgentIDs; len(ids) > 0 {
		scoped := s.scopeFirst(&r)
		maxLinked := s.maxLinkedFor(&r)
		ok, err := s.resolveAgents(ctx, tenant, sc.Country, &r)
		if err != nil {
			return "", err
		}
		dense := ok && len(r.linked) == 0
		explain := func(name string, q *query) error {
			plan, err := s.explainQuery(ctx, q)
			if err == nil {
				b.WriteString("statement " + name + ":\n" + plan)
			}
			return err
		}
		links := ids // the ids the links statements name
		if scoped {
			if err := explain("scope_agents", s.scopeAgentsQuery(tenant, sc.Country, ids)); err != nil {
				return "", err
			}
			if !ok && len(r.filter.AgentIDs) == 0 { // no agent of the scope: nothing else ran
				return b.String(), nil
			}
			links = r.filter.AgentIDs
		}
		if maxLinked > s.maxLinked {
			if err := explain("agent_links_probe", s.agentLinksProbeQuery(tenant, sc.Country, links, scoped, maxLinked)); err != nil {
				return "", err
			}
		}
		if maxLinked == s.maxLinked || !dense {
			if err := explain("agent_properties", s.agentPropertiesQuery(tenant, sc.Country, links, scoped, maxLinked)); err != nil {
				return "", err
			}
		}
		if !ok {
			return b.String(), nil
		}
		if dense {
			if !scoped {
				if err := explain("scope_agents", s.scopeAgentsQuery(tenant, sc.Country, ids)); err != nil {
					return "", err
				}
			}
			fmt.Fprintf(&b, "%s: more than %d links: the walk below checks each row's agents\n", denseAgentsNote, maxLinked)
		}
	}
	if r.offset > largeRows {
		fmt.Fprintf(&b, "%s: offset %d: at least %d rows or index entries walked before the page\n", deepPageNote, r.offset, r.offset)
	}
	var q *query
	name := "list_properties"
	if g := r.filter.Geo; g != nil {
		plan, err := s.explainQuery(ctx, s.geoCountQuery(tenant, sc.Country, r))
		if err != nil {
			return "", err
		}
		b.WriteString("statement geo_count:\n" + plan)
		gp, hits, err := s.geoProbeRun(ctx, tenant, sc.Country, r, *g)
		if err != nil {
			return "", err
		}
		if gp == geoSmallBox {
			plan, err := s.explainQuery(ctx, s.geoProbeQuery(tenant, sc.Country, r))
			if err != nil {
				return "", err
			}
			b.WriteString("statement geo_probe:\n" + plan)
		}
		switch gp {
		case geoSmallBox:
			if len(hits) == 0 || idOrder(r.order) {
				return b.String(), nil // the page is cut in Go
			}
			slices.Sort(hits)
			q, err = s.geoSmallBoxQuery(tenant, sc.Country, r, hits)
		case geoWalk:
			name = "geo_walk"
			q, err = s.geoWalkQuery(tenant, sc.Country, r, s.geoWalkBatch(r), 0)
		default:
			name = "geo_candidates"
			q, err = s.geoCandidatesQuery(tenant, sc.Country, r, s.geoWalkBatch(r), 0)
		}
		if err != nil { // this block's err, not the one checked below
			return "", err
		}
	} else {
		q, err = s.propertyPageQuery(tenant, sc.Country, r)
	}
	if err != nil {
		return "", err
	}
	plan, err := s.explainQuery(ctx, q)
	if err != nil {
		return "", err
	}
	if b.Len() > 0 {
		b.WriteString("statement " + name + ":\n")
	}
	b.WriteString(plan)
	return b.String(), nil
}

// explainQuery returns the engine's plan of q, one line per row of the
// EXPLAIN.
func (s *Store) explainQuery(ctx context.Context, q *query) (string, error) {
	prefix := map[string]string{
		"postgresql": "EXPLAIN (ANALYZE, COSTS OFF) ",
		"mysql":      "EXPLAIN ",
		"sqlite":     "EXPLAIN QUERY PLAN ",
	}[s.d.systemName()]
	rows, err := s.db.QueryContext(ctx, prefix+q.String(), q.args...)
	if err != nil {
		return "", err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return "", err
	}
	var b strings.Builder
	depth := map[string]int{"0": -1} // SQLite: by node id; top-level nodes have parent 0
	for rows.Next() {
		vals := make([]sql.NullString, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return "", err
		}
		switch s.d.systemName() {
		case "mysql": // a table of columns: name them
			for i, v := range vals {
				if i > 0 {
					b.WriteString(", ")
				}
				fmt.Fprintf(&b, "%s: %s", cols[i], nullText(v))
			}
		case "sqlite": // id, parent, notused, detail: indented by depth
			d := depth[vals[1].String] + 1
			depth[vals[0].String] = d
			b.WriteString(strings.Repeat("  ", d) + nullText(vals[len(vals)-1]))
		default:
			b.WriteString(nullText(vals[0]))
		}
		b.WriteByte('\n')
	}
	if err := rows.Err(); err != nil {
		return "", err
	}
	return b.String(), nil
}

func nullText(v sql.NullString) string {
	if !v.Valid {
		return "NULL"
	}
	return v.String
}

// largeRows is the number of rows from which a plan step counts as a large
// walk in PlanProblems: a scope of the demo at a million properties is
// 250,000 rows, a 20-row page of a selective filter a few hundred.
const largeRows = 20000

// largeEstimate is largeRows for MySQL's estimates, which run low: 14,500
// rows estimated for 29,000 links of 500 agents.
const largeEstimate = largeRows / 2

// bigTables are the tables whose size grows with the properties.
var bigTables = `(?:properties|property_agents|property_media|openhomes)`

var (
	pgSeqScan    = regexp.MustCompile(`Seq Scan on ` + bigTables + `\b`)
	pgIndexScan  = regexp.MustCompile(`Index (?:Only )?Scan (?:Backward )?using \S+ on (` + bigTables + `)\b`)
	pgLoops      = regexp.MustCompile(`\brows=(\d+) loops=(\d+)\)`)
	pgRemoved    = regexp.MustCompile(`Rows Removed by (?:Filter|Join Filter): (\d+)`)
	sqliteScan   = regexp.MustCompile(`^SCAN (p|pa|m|o|` + bigTables + `)\b`)
	sqliteCorrel = regexp.MustCompile(`^CORRELATED (?:SCALAR |LIST |ROW )?SUBQUERY`)
	sqliteWalkP  = regexp.MustCompile(`^SEARCH (?:p|properties) USING .*\((.*)\)$`)
	sqliteInner  = regexp.MustCompile(`^(?:SEARCH|SCAN) (\S+)`)
	mysqlField   = regexp.MustCompile(`(\w+): ([^,]*)`)
	pgGeoFromRow = regexp.MustCompile(`Index Scan (?:Backward )?using (\S*geo\S*) on properties\b`)
	sqliteGeoRow = regexp.MustCompile(`^SEARCH (?:p|properties) USING INDEX (\S*geo\S*)`)
	// An index walk that reads each row from the table (not index-only).
	pgTableScan     = regexp.MustCompile(`Index Scan (?:Backward )?using \S+ on properties\b`)
	sqliteTableRead = regexp.MustCompile(`^\s*SEARCH (?:p|properties) USING INDEX `)
)

// geoWalkRows is the number of rows from which a geo walk (geoWalkQuery)
// that reads each row from the table counts in PlanProblems on
// PostgreSQL: 5 km around a town centre of the demo at a million
// properties walks 700-1,400 index entries, 10-90 ms when each is a heap
// fetch (the order indexes lacking latitude and longitude) against under
// 1 ms index-only.
const geoWalkRows = 500

// perRowSubquery is the number of runs from which a subquery run once per
// row counts in PlanProblems on PostgreSQL, whose plans carry the counts:
// the dense agent walk's check runs 170-2,500 times for a first page of 20
// at a million properties, 9,000 times at offset 1,000 (10-35 ms).
const perRowSubquery = 2000

// geoRows is the number of bounding-box candidates from which reading them
// from the table, not from the geo index alone, counts in PlanProblems (a
// 5 km box around a town centre of the demo at a million properties holds
// 7,000-11,000).
const geoRows = 2000

// PlanProblems returns what, in plan (an Explain of this store), reads much
// more of a big table than a page needs, in words; none for a plan that
// only reads rows by key or walks an index range a LIMIT stops early:
//
//   - a full scan of properties, property_agents, property_media or
//     openhomes, or a walk of a whole index of one (no index condition);
//
//   - a subquery or lookup run once per row of a walk of properties: a
//     correlated subquery (SQLite), a DEPENDENT SUBQUERY (MySQL), or a
//     SEARCH of another table for each row of a range of properties
//     (SQLite), a lookup for each row of a step of properties or of a
//     materialized subquery estimated at more than largeEstimate rows
//     (MySQL); on PostgreSQL, whose plans carry the actual counts, a node
//     run more than largeRows times (a per-row SubPlan or nested-loop
//     inner side over a large walk), and a SubPlan more than
//     perRowSubquery times;
//
//   - on PostgreSQL, more than largeRows rows of a big table read, or
//     thrown away by a filter;
//
//   - the candidates of a geo bounding box read from the table row by row
//     instead of from the geo index alone (index-only): a SQLite SEARCH
//     USING INDEX (not COVERING INDEX) of a geo index, a MySQL step on a
//     geo index without "Using index", a PostgreSQL Index Scan (not Index
//     Only Scan) of one returning more than geoRows rows. The geo indexes
//     hold price_from for the order by price; any other order column
//     makes the box read the table (see docs/sql.md).
//
//   - a geo walk (geoWalkQuery) that reads each row from the table: the
//     order's index lacks latitude and longitude (a SQLite SEARCH USING
//     INDEX, a MySQL step without "Using index", a PostgreSQL Index Scan
//     of more than geoWalkRows rows);
//
//   - a page past more than largeRows rows (the deepPageNote line of
//     Explain): an offset is walked entry by entry on every engine.
//
// SQLite's and MySQL's plans carry no actual counts: a per-row subquery is
// reported however few rows the walk turned out to need, so a plan under
// the dense agent filter note (see Explain) is reported too, on purpose.
func (s *Store) PlanProblems(plan string) []string {
	return planProblems(s.d.systemName(), plan)
}

func planProblems(system, plan string) []string {
	var out []string
	add := func(format string, args ...any) {
		if p := fmt.Sprintf(format, args...); !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	lines := strings.Split(strings.TrimRight(plan, "\n"), "\n")
	// stmts[i] is the statement of line i ("" when the plan is of the
	// main statement alone).
	stmts := make([]string, len(lines))
	stmt := ""
	for i, l := range lines {
		if name, ok := strings.CutPrefix(l, "statement "); ok {
			stmt = strings.TrimSuffix(name, ":")
		}
		stmts[i] = stmt
		if strings.HasPrefix(l, deepPageNote) {
			add("%s", l)
		}
	}
	switch system {
	case "postgresql":
		subPlan := false // the line follows a "SubPlan n" header
		for i, l := range lines {
			if m := pgLoops.FindStringSubmatch(l); m != nil && stmts[i] == "geo_walk" && pgTableScan.MatchString(l) {
				if rows, _ := strconv.Atoi(m[1]); rows > geoWalkRows {
					add("geo walk read from the table, %d rows: %s", rows, pgNode(l))
				}
			}
			if strings.HasPrefix(strings.TrimSpace(l), "SubPlan") {
				subPlan = true
				continue
			}
			if m := pgLoops.FindStringSubmatch(l); m != nil && subPlan {
				if loops, _ := strconv.Atoi(m[2]); loops > perRowSubquery {
					add("subquery run once per row, %d times: %s", loops, pgNode(l))
				}
			}
			if strings.Contains(l, "->") {
				subPlan = false
			}
			if m := pgSeqScan.FindString(l); m != "" {
				add("full scan: %s", m)
			}
			if m := pgIndexScan.FindStringSubmatch(l); m != nil && !pgNodeHas(lines[i+1:], "Index Cond:") {
				add("walk of a whole index of %s: %s", m[1], strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(l), "->")))
			}
			if m := pgLoops.FindStringSubmatch(l); m != nil {
				rows, _ := strconv.Atoi(m[1])
				loops, _ := strconv.Atoi(m[2])
				if loops > largeRows {
					add("run once per row, %d times: %s", loops, pgNode(l))
				}
				if rows*loops > largeRows && pgIndexScan.MatchString(l) {
					add("%d rows read: %s", rows*loops, pgNode(l))
				}
				if rows*loops > geoRows && pgGeoFromRow.MatchString(l) {
					add("geo box read from the table, %d rows: %s", rows*loops, pgNode(l))
				}
			}
			if m := pgRemoved.FindStringSubmatch(l); m != nil {
				if n, _ := strconv.Atoi(m[1]); n > largeRows {
					add("%d rows read and thrown away by a filter", n)
				}
			}
		}
	case "mysql":
		// MySQL's rows are estimates. A large step (properties, or a
		// materialized subquery) followed by a lookup of another table in
		// the same SELECT is a lookup per row of the step.
		var walk, walkID string
		walkRows := 0
		for i, l := range lines {
			f := map[string]string{}
			for _, m := range mysqlField.FindAllStringSubmatch(l, -1) {
				f[m[1]] = strings.TrimSpace(m[2])
			}
			table, typ := f["table"], f["type"]
			rows, _ := strconv.Atoi(f["rows"])
			isP := table == "p" || table == "properties"
			switch {
			case strings.HasPrefix(f["select_type"], "DEPENDENT"):
				add("dependent subquery, run once per row: table %s", table)
			case typ == "ALL" && (isP || table == "pa" || table == "property_agents"):
				add("full scan: table %s", table)
			case typ == "index" && f["key"] == "PRIMARY" && (isP || table == "pa" || table == "property_agents"):
				add("walk of the whole primary key: table %s", table)
			case isP && strings.Contains(f["key"], "geo") && !slices.Contains(strings.Split(f["Extra"], "; "), "Using index"):
				add("geo box read from the table: key %s", f["key"])
			case isP && stmts[i] == "geo_walk" && !slices.Contains(strings.Split(f["Extra"], "; "), "Using index"):
				add("geo walk read from the table: key %s", f["key"])
			}
			if f["id"] != walkID {
				walk = ""
			}
			if walk != "" && table != "" && table != walk && (typ == "ref" || typ == "eq_ref") {
				add("lookup of %s once per row of %s (%d rows estimated)", table, walk, walkRows)
			}
			if (isP || strings.HasPrefix(table, "<subquery")) && rows > largeEstimate {
				walk, walkID, walkRows = table, f["id"], rows
			}
		}
	default: // sqlite, indented by depth
		walkDepth := -1
		for i, l := range lines {
			if stmts[i] == "geo_walk" && sqliteTableRead.MatchString(l) {
				add("geo walk read from the table: %s", strings.TrimSpace(l))
			}
			if strings.HasPrefix(l, "statement ") || strings.HasPrefix(l, denseAgentsNote) || strings.HasPrefix(l, deepPageNote) {
				walkDepth = -1
				continue
			}
			text := strings.TrimLeft(l, " ")
			depth := (len(l) - len(text)) / 2
			if walkDepth >= 0 && depth < walkDepth {
				walkDepth = -1
			}
			switch {
			case sqliteScan.MatchString(text):
				add("full scan: %s", text)
			case sqliteCorrel.MatchString(text):
				add("correlated subquery, run once per row: %s", text)
			case sqliteGeoRow.MatchString(text):
				add("geo box read from the table: %s", text)
			case walkDepth == depth:
				if m := sqliteInner.FindStringSubmatch(text); m != nil {
					add("SEARCH of %s once per row of a walk of properties", m[1])
				}
			}
			if m := sqliteWalkP.FindStringSubmatch(text); m != nil && !strings.Contains(m[1], "id=?") {
				walkDepth = depth
			}
		}
	}
	return out
}

// pgNodeHas reports whether the detail lines of a PostgreSQL plan node (up
// to the next node) hold want.
func pgNodeHas(lines []string, want string) bool {
	for _, l := range lines {
		if strings.Contains(l, "->") || strings.HasPrefix(strings.TrimSpace(l), "SubPlan") || strings.HasPrefix(strings.TrimSpace(l), "InitPlan") {
			return false
		}
		if strings.Contains(l, want) {
			return true
		}
	}
	return false
}

// pgNode is the node of a plan line, without its timings.
func pgNode(l string) string {
	l = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(l), "->"))
	if i := strings.Index(l, " (actual"); i >= 0 {
		l = l[:i]
	}
	return l
}
