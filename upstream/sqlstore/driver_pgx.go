//go:build sqlstore_pgx

package sqlstore

// The PostgreSQL driver is linked only with -tags sqlstore_pgx until go.sum
// carries github.com/jackc/puddle/v2 (needed by pgx/v5/stdlib). Then this
// import moves to drivers.go and this file goes.
import _ "github.com/jackc/pgx/v5/stdlib"
