package sqlstore

import (
	"database/sql"
	"errors"
)

// Legacy databases do not always hold the NOT NULL constraints of our
// schema (docs/legacy-database.md): a NULL in a text or flag column must read as the
// empty value, not fail the whole list it is part of. Nullable numbers
// (coordinates, sizes, counts of rooms) scan into pointers and stay
// missing; these two cover the columns whose model value is not a pointer.

// textOrEmpty scans a text column into *s; NULL reads as "".
type textOrEmpty struct{ s *string }

func (n textOrEmpty) Scan(v any) error {
	// The values drivers return for text, without database/sql's
	// conversion (a NullString here escapes: one allocation per column of
	// every row).
	switch v := v.(type) {
	case string:
		*n.s = v
		return nil
	case []byte: // the driver's buffer: copied
		*n.s = string(v)
		return nil
	case nil:
		*n.s = ""
		return nil
	}
	var ns sql.NullString
	if err := ns.Scan(v); err != nil {
		return err
	}
	*n.s = ns.String
	return nil
}

// flagOrFalse scans a boolean column into *b; NULL reads as false (an address
// without a display flag is hidden, a listing without one is not featured).
type flagOrFalse struct{ b *bool }

func (n flagOrFalse) Scan(v any) error {
	switch v := v.(type) {
	case bool:
		*n.b = v
		return nil
	case int64: // SQLite's 0/1
		if v == 0 || v == 1 {
			*n.b = v == 1
			return nil
		}
	case nil:
		*n.b = false
		return nil
	}
	var nb sql.NullBool
	if err := nb.Scan(v); err != nil {
		return err
	}
	*n.b = nb.Bool
	return nil
}

// The number scanners below take the values drivers return for numbers
// directly, as textOrEmpty does for text: database/sql converts a number
// into an *int64 or a sql.NullInt64 through reflection (convertAssignRows,
// ~5% of a SQLite list's instructions), and into a **float64 with an
// allocation per row. Anything else goes through database/sql's own
// conversion, as before.

// int64Of scans a NOT NULL integer column into *p.
type int64Of struct{ p *int64 }

func (n int64Of) Scan(v any) error {
	if v, ok := v.(int64); ok {
		*n.p = v
		return nil
	}
	var ni sql.NullInt64
	if err := ni.Scan(v); err != nil {
		return err
	}
	if !ni.Valid {
		return errors.New("converting NULL to int64 is unsupported")
	}
	*n.p = ni.Int64
	return nil
}

// nullInt64Of scans a nullable integer column into *p.
type nullInt64Of struct{ p *sql.NullInt64 }

func (n nullInt64Of) Scan(v any) error {
	switch v := v.(type) {
	case int64:
		*n.p = sql.NullInt64{Int64: v, Valid: true}
		return nil
	case nil:
		*n.p = sql.NullInt64{}
		return nil
	}
	return n.p.Scan(v)
}

// nullFloat64Of scans a nullable real column into *p.
type nullFloat64Of struct{ p *sql.NullFloat64 }

func (n nullFloat64Of) Scan(v any) error {
	switch v := v.(type) {
	case float64:
		*n.p = sql.NullFloat64{Float64: v, Valid: true}
		return nil
	case nil:
		*n.p = sql.NullFloat64{}
		return nil
	}
	return n.p.Scan(v)
}
