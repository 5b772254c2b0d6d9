package sqlstore

import (
	"database/sql"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"listingproxy/upstream"
)

// The columns of properties and agents are the listing schema's
// (upstream.PropertyFields, upstream.AgentFields): the statements select
// each field's Column in the table's order, and the scanners below set
// each field through its accessor, by its kind. Nothing here names a
// scalar field.
var (
	propertyScan = newScanLayout(upstream.PropertyFields)
	agentScan    = newScanLayout(upstream.AgentFields)
	// propertyColumns are the columns scanned by propertyScan, in order.
	propertyColumns = propertyScan.columns
	// agentColumns are the columns scanned by agentScan, in order.
	agentColumns = agentScan.columns
)

// scanLayout is the schema of one kind of record as the scanners read it.
type scanLayout[R any] struct {
	fields  []*upstream.Field[R] // those with a column, in order
	columns string               // their columns, as a select list
	// The positions in fields of the kinds set after the scan, held
	// meanwhile in a slot each (slotOf: a field's slot, -1 for none).
	floats, ints, times []int
	slotOf              []int
	slots               int
}

func newScanLayout[R any](fields []upstream.Field[R]) *scanLayout[R] {
	l := &scanLayout[R]{}
	var cols []string
	for i := range fields {
		f := &fields[i]
		if f.Column == "" || f.Kind == upstream.KindHand {
			continue
		}
		slot := -1
		switch f.Kind {
		case upstream.KindFloat:
			l.floats, slot = append(l.floats, len(l.fields)), l.slots
		case upstream.KindInt:
			l.ints, slot = append(l.ints, len(l.fields)), l.slots
		case upstream.KindDate, upstream.KindInstant:
			l.times, slot = append(l.times, len(l.fields)), l.slots
		}
		if slot >= 0 {
			l.slots++
		}
		l.slotOf = append(l.slotOf, slot)
		l.fields = append(l.fields, f)
		cols = append(cols, f.Column)
	}
	l.columns = strings.Join(cols, ", ")
	return l
}

// slot holds a column's value between the scan and the record, for the
// kinds whose model value is not the scanned one: optional numbers
// (pointers) and times.
type slot struct {
	f sql.NullFloat64
	i sql.NullInt64
	t nullTime
}

// settle sets r's optional numbers and times from slots: the numbers
// pointing into one allocation per type (nil where NULL), not one each.
func (l *scanLayout[R]) settle(r *R, slots []slot) {
	for _, k := range l.times {
		*l.fields[k].Time(r) = slots[l.slotOf[k]].t.t
	}
	nf, ni := 0, 0
	for _, k := range l.floats {
		if slots[l.slotOf[k]].f.Valid {
			nf++
		}
	}
	for _, k := range l.ints {
		if slots[l.slotOf[k]].i.Valid {
			ni++
		}
	}
	if nf > 0 {
		fs := make([]float64, 0, nf)
		for _, k := range l.floats {
			if s := slots[l.slotOf[k]].f; s.Valid {
				fs = append(fs, s.Float64)
				*l.fields[k].Float(r) = &fs[len(fs)-1]
			}
		}
	}
	if ni > 0 {
		is := make([]int, 0, ni)
		for _, k := range l.ints {
			if s := slots[l.slotOf[k]].i; s.Valid {
				is = append(is, int(s.Int64))
				*l.fields[k].Int(r) = &is[len(is)-1]
			}
		}
	}
}

// rowScanner scans rows of a layout's columns (database/sql) into the same
// variables every row: a variable whose address is passed to Scan lives
// on the heap, so variables declared per row cost an allocation each (a
// dozen a row). Text and flags read NULL as "" and false, numbers through
// the scanners of nulls.go.
type rowScanner[R any] struct {
	l     *scanLayout[R]
	r     R
	slots []slot
	dest  []any
}

func newRowScanner[R any](l *scanLayout[R]) *rowScanner[R] {
	sc := &rowScanner[R]{l: l, slots: make([]slot, l.slots), dest: make([]any, len(l.fields))}
	for k, f := range l.fields {
		var s *slot
		if i := l.slotOf[k]; i >= 0 {
			s = &sc.slots[i]
		}
		switch f.Kind {
		case upstream.KindID:
			sc.dest[k] = int64Of{f.ID(&sc.r)}
		case upstream.KindText:
			sc.dest[k] = textOrEmpty{f.Text(&sc.r)}
		case upstream.KindFlag:
			sc.dest[k] = flagOrFalse{f.Flag(&sc.r)}
		case upstream.KindInt:
			sc.dest[k] = nullInt64Of{&s.i}
		case upstream.KindFloat:
			sc.dest[k] = nullFloat64Of{&s.f}
		case upstream.KindDate, upstream.KindInstant:
			sc.dest[k] = &s.t
		}
	}
	return sc
}

func (sc *rowScanner[R]) scan(rows *sql.Rows) (R, error) {
	var zero R
	sc.r = zero
	if err := rows.Scan(sc.dest...); err != nil {
		return zero, err
	}
	sc.l.settle(&sc.r, sc.slots)
	return sc.r, nil
}

// pgxRowScanner is rowScanner for pgx's own interface (see eachPgx):
// values decoded straight into reused pgtype fields, NULL text and flags
// read as empty and false, times through nullTime (a sql.Scanner) as on
// database/sql.
type pgxRowScanner[R any] struct {
	l     *scanLayout[R]
	r     R
	slots []slot
	pg    []pgSlot
	dest  []any
}

// pgSlot holds a column's value as pgx decodes it.
type pgSlot struct {
	text pgtype.Text
	flag pgtype.Bool
	f8   pgtype.Float8
	i8   pgtype.Int8
}

func newPgxRowScanner[R any](l *scanLayout[R]) *pgxRowScanner[R] {
	n := len(l.fields)
	sc := &pgxRowScanner[R]{l: l, slots: make([]slot, l.slots), pg: make([]pgSlot, n), dest: make([]any, n)}
	for k, f := range l.fields {
		p := &sc.pg[k]
		switch f.Kind {
		case upstream.KindID:
			sc.dest[k] = f.ID(&sc.r)
		case upstream.KindText:
			sc.dest[k] = &p.text
		case upstream.KindFlag:
			sc.dest[k] = &p.flag
		case upstream.KindInt:
			sc.dest[k] = &p.i8
		case upstream.KindFloat:
			sc.dest[k] = &p.f8
		case upstream.KindDate, upstream.KindInstant:
			sc.dest[k] = &sc.slots[l.slotOf[k]].t
		}
	}
	return sc
}

func (sc *pgxRowScanner[R]) scan(rows pgx.Rows) (R, error) {
	var zero R
	sc.r = zero
	if err := rows.Scan(sc.dest...); err != nil {
		return zero, err
	}
	r := &sc.r
	for k, f := range sc.l.fields {
		p := &sc.pg[k]
		switch f.Kind {
		case upstream.KindText:
			*f.Text(r) = p.text.String
		case upstream.KindFlag:
			*f.Flag(r) = p.flag.Bool
		case upstream.KindInt:
			sc.slots[sc.l.slotOf[k]].i = sql.NullInt64{Int64: p.i8.Int64, Valid: p.i8.Valid}
		case upstream.KindFloat:
			sc.slots[sc.l.slotOf[k]].f = sql.NullFloat64{Float64: p.f8.Float64, Valid: p.f8.Valid}
		}
	}
	sc.l.settle(r, sc.slots)
	return sc.r, nil
}
