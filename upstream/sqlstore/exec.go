package sqlstore

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// statement starts one statement of the store: a span named "sql."+name and
// the per-statement timeout. end must be called once the statement's rows
// are consumed (cancelling earlier would cut them off).
func (s *Store) statement(ctx context.Context, name, operation string) (_ context.Context, end func(error)) {
	ctx, span := s.tracer.Start(ctx, "sql."+name,
		trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(s.system, attribute.String("db.operation.name", operation)))
	cancel := context.CancelFunc(func() {})
	if s.queryTimeout > 0 {
		ctx, cancel = context.WithTimeout(ctx, s.queryTimeout)
	}
	return ctx, func(err error) {
		cancel()
		if err != nil {
			// The status says what kind of failure, never the driver's
			// message: it may quote argument values.
			span.SetStatus(codes.Error, errorKind(err))
		}
		span.End()
	}
}

func errorKind(err error) string {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case errors.Is(err, context.Canceled):
		return "canceled"
	case isConnError(err):
		return "connection"
	}
	return "error"
}

// errStop ends each early without an error.
var errStop = errors.New("stop")

// each runs the read statement q, named name for tracing, and calls f for
// every row until f returns errStop or an error.
//
// A statement that fails on a broken connection before delivering a row is
// retried once after the pool's idle connections are dropped: after a
// database restart, or its connections were killed, every idle connection
// is dead, and the first request to notice clears them all instead of each
// later request finding one. Only reads go through each, so a retry is safe.
func (s *Store) each(ctx context.Context, name string, q *query, f func(*sql.Rows) error) (err error) {
	return s.retried(ctx, name, func(ctx context.Context, delivered *bool) error {
		return s.eachOnce(ctx, q, func(rows *sql.Rows) error {
			*delivered = true
			return f(rows)
		})
	})
}

// retried runs a read statement named name (run, which sets *delivered
// once it has a row) as each describes: span, timeout, one retry on a
// broken connection before any row.
func (s *Store) retried(ctx context.Context, name string, run func(ctx context.Context, delivered *bool) error) (err error) {
	if err := s.Ready(); err != nil {
		return err
	}
	ctx, end := s.statement(ctx, name, "SELECT")
	defer func() { end(err) }()
	for attempt := 0; ; attempt++ {
		delivered := false
		err = run(ctx, &delivered)
		if err == nil || errors.Is(err, errStop) {
			return nil
		}
		if attempt > 0 || delivered || ctx.Err() != nil || !isConnError(err) {
			return err
		}
		s.dropIdle()
	}
}

// eachPgx is each on PostgreSQL through pgx's own interface: the rows are
// decoded straight into f's destinations, not into database/sql's boxed
// driver values converted again by Scan.
func (s *Store) eachPgx(ctx context.Context, name string, q *query, f func(pgx.Rows) error) error {
	return s.retried(ctx, name, func(ctx context.Context, delivered *bool) error {
		conn, err := s.db.Conn(ctx)
		if err != nil {
			return err
		}
		defer conn.Close()
		return conn.Raw(func(dc any) error {
			pc, ok := dc.(*stdlib.Conn)
			if !ok {
				return fmt.Errorf("sqlstore: %T is not a pgx connection", dc)
			}
			rows, err := pc.Conn().Query(ctx, q.String(), q.args...)
			if err != nil {
				return err
			}
			defer rows.Close()
			return eachRow(rows, func(rows pgx.Rows) error {
				*delivered = true
				return f(rows)
			})
		})
	})
}

func (s *Store) eachOnce(ctx context.Context, q *query, f func(*sql.Rows) error) error {
	var rows *sql.Rows
	var err error
	if s.stmts != nil && !q.unprepared {
		var st *sql.Stmt
		var release func()
		st, release, err = s.stmts.get(ctx, q.String())
		if err == nil {
			defer release() // after rows.Close below
			rows, err = st.QueryContext(ctx, q.args...)
		}
		// A server out of prepared statements (max_prepared_stmt_count,
		// shared by all its clients) refuses the prepare, here or on the
		// connection the statement first runs on: the query runs
		// unprepared, the request does not fail.
		if tooManyPrepared(err) {
			if s.stmts.unprepared.Add(1) == 1 {
				s.log.Warn("sqlstore: the server refused to prepare a statement (max_prepared_stmt_count reached); running such queries unprepared", "error", err)
			}
			rows, err = s.db.QueryContext(ctx, q.String(), q.args...)
		}
	} else {
		rows, err = s.db.QueryContext(ctx, q.String(), q.args...)
	}
	if err != nil {
		return err
	}
	defer rows.Close()
	return eachRow(rows, f)
}

// eachRow calls f with every row of rows (database/sql's or pgx's) until
// it returns an error, then returns the rows' error.
func eachRow[R interface {
	Next() bool
	Err() error
}](rows R, f func(R) error) error {
	for rows.Next() {
		if err := f(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}

// dropIdle closes the pool's idle connections; new ones are opened on
// demand.
func (s *Store) dropIdle() {
	s.db.SetMaxIdleConns(0)
	s.db.SetMaxIdleConns(s.maxIdle)
}

// isConnError reports errors that mean the connection is gone (server
// restarted, connection killed, network failure), not that the statement
// was wrong.
func isConnError(err error) bool {
	if err == nil {
		return false
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		// Class 08: connection exception; 57P01-57P03: admin shutdown,
		// crash shutdown, cannot connect now.
		return strings.HasPrefix(pgErr.Code, "08") || strings.HasPrefix(pgErr.Code, "57P0")
	}
	var myErr *mysql.MySQLError
	if errors.As(err, &myErr) {
		switch myErr.Number {
		case 1053, 1927: // server shutdown in progress, connection killed
			return true
		}
		return false
	}
	var netErr net.Error
	return errors.Is(err, driver.ErrBadConn) || errors.Is(err, mysql.ErrInvalidConn) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, net.ErrClosed) || (errors.As(err, &netErr) && !netErr.Timeout()) ||
		pgconn.SafeToRetry(err) || strings.Contains(err.Error(), "conn closed")
}
