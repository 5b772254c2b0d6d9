package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"listingproxy/upstream/sqlstore/demo"
)

// SeedDemo writes the demo data of o (see package demo) into an empty store,
// in one transaction: either all of it is there afterwards or none. A zero
// o.Now is the store's Now. It returns ErrNotEmpty when the store already
// holds data. Rows go in as multi-row INSERTs through prepared statements,
// in batches, so a million properties stream through without being held.
func (s *Store) SeedDemo(ctx context.Context, o demo.Options) (err error) {
	if o.Now.IsZero() {
		o.Now = s.now()
	}
	empty, err := s.Empty(ctx)
	if err != nil {
		return fmt.Errorf("sqlstore: seed demo: %w", err)
	}
	if !empty {
		return ErrNotEmpty
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("sqlstore: seed demo: %w", err)
	}
	w := newSeedWriter(ctx, s.d, tx)
	defer func() {
		w.close()
		if err != nil {
			tx.Rollback()
		}
	}()
	if err := demo.Generate(o, w); err != nil {
		return fmt.Errorf("sqlstore: seed demo: %w", err)
	}
	if err := w.flush(); err != nil {
		return fmt.Errorf("sqlstore: seed demo: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sqlstore: seed demo: %w", err)
	}
	for _, stmt := range s.d.analyze() {
		if err := s.exec(ctx, stmt); err != nil {
			return fmt.Errorf("sqlstore: seed demo: analyze: %w", err)
		}
	}
	return nil
}

// exec runs a statement and drains any result rows (ANALYZE TABLE answers
// with a result set).
func (s *Store) exec(ctx context.Context, stmt string) error {
	rows, err := s.db.QueryContext(ctx, stmt)
	if err != nil {
		return err
	}
	for rows.Next() {
	}
	return errors.Join(rows.Err(), rows.Close())
}

// seedBatchRows is the number of rows per INSERT statement. The widest table
// (properties, 28 columns) binds 2,800 parameters per statement, below every
// engine's limit.
const seedBatchRows = 100

// batch buffers the rows of one table and writes them as multi-row INSERTs.
type batch struct {
	table string
	cols  []string
	rows  int   // rows buffered
	vals  []any // rows*len(cols) values
	full  *sql.Stmt
}

func (b *batch) statement(d dialect, rows int) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "INSERT INTO %s (%s) VALUES ", b.table, strings.Join(b.cols, ", "))
	n := 0
	for r := range rows {
		if r > 0 {
			sb.WriteString(", ")
		}
		sb.WriteByte('(')
		for c := range b.cols {
			if c > 0 {
				sb.WriteString(", ")
			}
			n++
			sb.WriteString(d.placeholder(n))
		}
		sb.WriteByte(')')
	}
	return sb.String()
}

// seedWriter is the demo.Sink that writes into a transaction. Batches are
// flushed together in foreign-key order whenever one fills up.
type seedWriter struct {
	ctx context.Context
	d   dialect
	tx  *sql.Tx

	tenants, agents, properties, propertyAgents, media, openHomes *batch
}

func newSeedWriter(ctx context.Context, d dialect, tx *sql.Tx) *seedWriter {
	return &seedWriter{
		ctx: ctx, d: d, tx: tx,
		tenants: &batch{table: "tenants", cols: []string{"id", "name"}},
		agents: &batch{table: "agents", cols: []string{"id", "tenant_id", "country", "name", "username", "phone",
			"after_hours_phone", "mobile_phone", "email", "description", "photo_url", "website_url"}},
		properties: &batch{table: "properties", cols: []string{"id", "tenant_id", "country", "agency_id",
			"last_updated", "approved", "street_number", "street_name", "address_display", "status", "latitude",
			"longitude", "price_text", "price_from", "price_to", "price_type", "category", "property_type",
			"suburb", "area", "region", "bedrooms", "bathrooms", "floor_size", "lot_size", "built_in",
			"description", "featured"}},
		propertyAgents: &batch{table: "property_agents", cols: []string{"property_id", "agent_id", "position"}},
		media: &batch{table: "property_media", cols: []string{"property_id", "kind", "url", "thumbnail", "type",
			"caption", "position"}},
		openHomes: &batch{table: "openhomes", cols: []string{"property_id", "starts_at", "ends_at"}},
	}
}

func (w *seedWriter) all() []*batch {
	return []*batch{w.tenants, w.agents, w.properties, w.propertyAgents, w.media, w.openHomes}
}

func (w *seedWriter) add(b *batch, vals ...any) error {
	b.vals = append(b.vals, vals...)
	b.rows++
	if b.rows < seedBatchRows {
		return nil
	}
	return w.flush()
}

// flush writes every buffered row, parents before children.
func (w *seedWriter) flush() error {
	for _, b := range w.all() {
		if b.rows == 0 {
			continue
		}
		var err error
		if b.rows == seedBatchRows {
			if b.full == nil {
				b.full, err = w.tx.PrepareContext(w.ctx, b.statement(w.d, seedBatchRows))
				if err != nil {
					return fmt.Errorf("%s: %w", b.table, err)
				}
			}
			_, err = b.full.ExecContext(w.ctx, b.vals...)
		} else {
			_, err = w.tx.ExecContext(w.ctx, b.statement(w.d, b.rows), b.vals...)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", b.table, err)
		}
		b.rows, b.vals = 0, b.vals[:0]
	}
	return nil
}

func (w *seedWriter) close() {
	for _, b := range w.all() {
		if b.full != nil {
			b.full.Close()
		}
	}
}

func (w *seedWriter) Tenant(t demo.Tenant) error { return w.add(w.tenants, t.ID, t.Name) }

func (w *seedWriter) Agent(a demo.Agent) error {
	return w.add(w.agents, a.ID, a.TenantID, a.Country, a.Name, a.Username, a.Phone, a.AfterHoursPhone,
		a.MobilePhone, a.Email, a.Description, a.PhotoURL, a.WebsiteURL)
}

func (w *seedWriter) Property(p demo.Property) error {
	var approved any
	if !p.Approved.IsZero() {
		approved = w.d.dateArg(p.Approved.UTC().Format(dateLayout))
	}
	return w.add(w.properties, p.ID, p.TenantID, p.Country, p.AgencyID, w.d.timeArg(p.LastUpdated), approved,
		p.StreetNumber, p.StreetName, p.AddressDisplay, p.Status, p.Latitude, p.Longitude, p.PriceText,
		nullable(p.PriceFrom), nullable(p.PriceTo), p.PriceType, p.Category, p.PropertyType, p.Suburb, p.Area,
		p.Region, nullable(p.Bedrooms), nullable(p.Bathrooms), nullable(p.FloorSize), nullable(p.LotSize),
		p.BuiltIn, p.Description, p.Featured)
}

func (w *seedWriter) PropertyAgent(pa demo.PropertyAgent) error {
	return w.add(w.propertyAgents, pa.PropertyID, pa.AgentID, pa.Position)
}

func (w *seedWriter) Media(m demo.Media) error {
	return w.add(w.media, m.PropertyID, m.Kind, m.URL, m.Thumbnail, m.Type, m.Caption, m.Position)
}

func (w *seedWriter) OpenHome(oh demo.OpenHome) error {
	return w.add(w.openHomes, oh.PropertyID, w.d.timeArg(oh.Start), w.d.timeArg(oh.End))
}
