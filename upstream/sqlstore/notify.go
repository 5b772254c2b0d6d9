package sqlstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/cenkalti/backoff/v5"
	"github.com/jackc/pgx/v5"

	"listingproxy/upstream"
)

// NotifyChannel is the PostgreSQL channel of change notifications (see
// schema/postgres_notify.sql).
const NotifyChannel = "listingproxy_changes"

// ErrNotifyUnsupported is returned by InstallNotify and the notify feed's Watch on engines
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

// NotifyFeed returns the store's PostgreSQL change feed ("notify"): the
// notifications the trigger of schema/postgres_notify.sql sends on
// NotifyChannel. Its Watch returns ErrNotifyUnsupported at once on other
// engines.
func (s *Store) NotifyFeed() upstream.ChangeFeed { return notifyFeed{s} }

type notifyFeed struct{ s *Store }

func (notifyFeed) Name() string { return "notify" }

// payload is a notification's JSON, as the trigger writes it: tenant is
// the changed tenant's tenants.name (or "*" after a TRUNCATE); properties
// and agents are empty when the statement changed too many to name, or the
// trigger is an earlier release's.
type payload struct {
	Tenant, Resource, Table, Op string
	Properties, Agents          []int64
}

// Watch reports the notifications on NotifyChannel. It listens on a
// dedicated connection, reconnecting with jittered exponential backoff
// (100ms to 30s) after any failure, and reports a Gap of AllTenants after
// each (re)connection, the first included: changes made meanwhile were not
// seen. It returns nil when ctx ends.
func (f notifyFeed) Watch(ctx context.Context, sink upstream.ChangeSink) error {
	s := f.s
	if _, ok := s.d.(postgresDialect); !ok {
		return ErrNotifyUnsupported
	}
	b := backoff.NewExponentialBackOff()
	b.InitialInterval, b.MaxInterval = 100*time.Millisecond, 30*time.Second
	for ctx.Err() == nil {
		listening, err := s.listenOnce(ctx, sink)
		if ctx.Err() != nil {
			break
		}
		if listening {
			b.Reset()
		}
		sink.Live(err)
		wait := b.NextBackOff()
		s.log.Warn("sqlstore: change listener lost its connection; reconnecting", "error", err, "retry_in", wait.String())
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
		case <-t.C:
		}
	}
	return nil
}

// listenOnce connects, listens and reports until the connection fails or
// ctx ends. listening says whether it got as far as LISTEN.
func (s *Store) listenOnce(ctx context.Context, sink upstream.ChangeSink) (listening bool, err error) {
	conn, err := pgx.Connect(ctx, s.dsn)
	if err != nil {
		return false, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "LISTEN "+NotifyChannel); err != nil {
		return false, err
	}
	sink.Changed(upstream.Change{Tenant: upstream.AllTenants, Gap: true})
	sink.Live(nil)
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return true, err
		}
		var p payload
		if err := json.Unmarshal([]byte(n.Payload), &p); err != nil || p.Tenant == "" {
			s.log.Warn("sqlstore: ignoring a malformed change notification", "payload", n.Payload)
			continue
		}
		sink.Changed(upstream.Change{Tenant: p.Tenant, Resource: p.Resource, Table: p.Table, Op: p.Op,
			Properties: p.Properties, Agents: p.Agents})
	}
}
