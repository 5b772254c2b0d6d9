package sqlstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// NotifyChannel is the PostgreSQL channel of change notifications (see
// schema/postgres_notify.sql).
const NotifyChannel = "listingproxy_changes"

// AllTenants is the tenant Listen reports when it cannot tell which tenants
// changed: after a TRUNCATE, and whenever the listener (re)connects, since
// changes made while it was not listening were missed. After a reconnection
// it means "may have changed", and often arrives while the database is still
// recovering (a restart): a consumer should mark cached data stale rather
// than drop it (cmd's soft purges), so it can still be served if the next
// read fails.
const AllTenants = "*"

// ErrNotifyUnsupported is returned by InstallNotify and Listen on engines
// other than PostgreSQL.
var ErrNotifyUnsupported = errors.New("sqlstore: change notifications need PostgreSQL")

// InstallNotify installs (or replaces) the change-notification trigger of
// schema/postgres_notify.sql on the store's tables. PostgreSQL only.
func (s *Store) InstallNotify(ctx context.Context) error {
	if _, ok := s.d.(postgresDialect); !ok {
		return ErrNotifyUnsupported
	}
	text, err := schemas.ReadFile("schema/postgres_notify.sql")
	if err != nil {
		return fmt.Errorf("sqlstore: install notify: %w", err)
	}
	// Without arguments pgx sends the file as one simple-protocol query,
	// which may hold several statements (and the function body's
	// semicolons), exactly as psql -f would run it.
	if _, err := s.db.ExecContext(ctx, string(text)); err != nil {
		return fmt.Errorf("sqlstore: install notify: %w", err)
	}
	return nil
}

// Change is one change notification: what a statement changed in one
// tenant.
type Change struct {
	// Tenant is the changed tenant's tenants.name, or AllTenants.
	Tenant string
	// Resource is the table family changed: "properties" (a property row,
	// its media, open homes or agent links) or "agents"; "" with AllTenants
	// on (re)connection.
	Resource string
	// Table is the changed table (properties, agents, property_agents,
	// property_media, openhomes); "" when not known.
	Table string
	// Op is the statement's "INSERT", "UPDATE" or "DELETE"; "" when not
	// known (a TRUNCATE, a (re)connection, or a trigger installed by an
	// earlier release).
	Op string
	// Properties and Agents are the entities whose documents changed.
	// Both empty: the statement changed too many to name (or the trigger
	// is an earlier release's), so the whole tenant's Resource may have
	// changed.
	Properties, Agents []int64
}

// Entities reports whether c names the changed entities.
func (c Change) Entities() bool { return len(c.Properties)+len(c.Agents) > 0 }

// Listen reports changes announced on NotifyChannel to fn. It listens on a dedicated connection, reconnecting with
// exponential backoff (100ms to 30s) after any failure, and calls fn with
// a Change of AllTenants after each (re)connection, the first included:
// changes made meanwhile were not seen, and the first call says listening
// has begun. fn runs on the listener's goroutine and should be quick.
// Listen returns nil when ctx ends, and ErrNotifyUnsupported at once on
// other engines.
func (s *Store) Listen(ctx context.Context, fn func(Change)) error {
	if _, ok := s.d.(postgresDialect); !ok {
		return ErrNotifyUnsupported
	}
	const minBackoff, maxBackoff = 100 * time.Millisecond, 30 * time.Second
	backoff := minBackoff
	for ctx.Err() == nil {
		listening, err := s.listenOnce(ctx, fn)
		if ctx.Err() != nil {
			break
		}
		if listening {
			backoff = minBackoff
		}
		s.log.Warn("sqlstore: change listener lost its connection; reconnecting", "error", err, "retry_in", backoff.String())
		select {
		case <-ctx.Done():
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, maxBackoff)
	}
	return nil
}

// listenOnce connects, listens and reports until the connection fails or
// ctx ends. listening says whether it got as far as LISTEN.
func (s *Store) listenOnce(ctx context.Context, fn func(Change)) (listening bool, err error) {
	conn, err := pgx.Connect(ctx, s.dsn)
	if err != nil {
		return false, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "LISTEN "+NotifyChannel); err != nil {
		return false, err
	}
	fn(Change{Tenant: AllTenants})
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return true, err
		}
		var c Change
		if err := json.Unmarshal([]byte(n.Payload), &c); err != nil || c.Tenant == "" {
			s.log.Warn("sqlstore: ignoring a malformed change notification", "payload", n.Payload)
			continue
		}
		fn(c)
	}
}
