// Package crmchanges changes a CRM stand-in's SQLite data as the CRM's
// users would and sends the signed webhook a CRM sends after each change
// (upstream/webhook's format): cmd/legacy-crm serves it, and the tests of
// listingproxy's change feeds run it in process. Test and demo code only.
package crmchanges

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"listingproxy/upstream/webhook"
)

// Handler changes the stand-in's own data, as the legacy CRM's users do,
// and, when told where, sends the signed webhook a CRM sends after each
// change (upstream/webhook's format). It serves POST /_crm/changes:
//
//	{"tenant": "harbour", "op": "update", "id": 12}                          a new price text, last_updated now
//	{"tenant": "harbour", "op": "insert", "copy_of": 12}                     a copy of 12 under a new id
//	{"tenant": "harbour", "op": "delete", "id": 12}
//
// and answers {"id": N, "country": "au", "webhook": STATUS} (webhook 0
// when none was sent). The write commits before the webhook is sent, so a
// caller that gets the answer knows the change is visible to a reader of
// the CRM and that the webhook was delivered.
type Handler struct {
	db *sql.DB
	o  Options
	mu sync.Mutex // one change at a time: ids are max(id)+1
}

// Options are a Handler's optional parts.
type Options struct {
	// Now stamps last_updated. Default time.Now.
	Now func() time.Time
	// WebhookURL, with {tenant} replaced by the tenant, receives a signed
	// webhook after each change of a tenant in Secrets; "" sends none.
	WebhookURL string
	Secrets    map[string][]byte
	// Client sends the webhooks. Default a client with a 10s timeout.
	Client *http.Client
}

// New returns the Handler changing db (a SQLite database holding the
// legacy schema; see OpenWriter).
func New(db *sql.DB, o Options) *Handler {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Client == nil {
		o.Client = &http.Client{Timeout: 10 * time.Second}
	}
	return &Handler{db: db, o: o}
}

// change is a request's body.
type change struct {
	Tenant string `json:"tenant"`
	Op     string `json:"op"`
	ID     int64  `json:"id"`
	CopyOf int64  `json:"copy_of"`
}

func (c *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var ch change
	dec := json.NewDecoder(io.LimitReader(r.Body, 4096))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&ch); err != nil {
		http.Error(w, "body: "+err.Error(), http.StatusBadRequest)
		return
	}
	c.mu.Lock()
	id, country, err := c.apply(r.Context(), ch)
	c.mu.Unlock()
	if err != nil {
		status := http.StatusBadRequest
		if errors.Is(err, sql.ErrNoRows) {
			status = http.StatusNotFound
		}
		http.Error(w, err.Error(), status)
		return
	}
	hook := 0
	if c.o.WebhookURL != "" && c.o.Secrets[ch.Tenant] != nil {
		if hook, err = c.send(r.Context(), ch.Tenant, ch.Op, id, country); err != nil {
			http.Error(w, "webhook: "+err.Error(), http.StatusBadGateway)
			return
		}
	}
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, "{\"id\":%d,\"country\":%q,\"webhook\":%d}\n", id, country, hook)
}

// apply makes the change in one transaction; it returns the property's id
// (the new one for an insert) and country.
func (c *Handler) apply(ctx context.Context, ch change) (id int64, country string, err error) {
	tx, err := c.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, "", err
	}
	defer func() {
		if err != nil {
			tx.Rollback()
		}
	}()
	src := ch.ID
	if ch.Op == "insert" {
		src = ch.CopyOf
	}
	if err := tx.QueryRowContext(ctx, "SELECT p.country FROM properties p JOIN tenants t ON t.id = p.tenant_id WHERE p.id = ? AND t.name = ?",
		src, ch.Tenant).Scan(&country); err != nil {
		return 0, "", fmt.Errorf("property %d of tenant %q: %w", src, ch.Tenant, err)
	}
	stamp := c.o.Now().UTC().Format("2006-01-02T15:04:05Z")
	switch ch.Op {
	case "update":
		id = ch.ID
		_, err = tx.ExecContext(ctx, "UPDATE properties SET price_text = ?, last_updated = ? WHERE id = ?",
			"Offers from "+stamp, stamp, id)
	case "insert":
		if err = tx.QueryRowContext(ctx, "SELECT max(id) + 1 FROM properties").Scan(&id); err != nil {
			return 0, "", err
		}
		for _, stmt := range []string{
			"CREATE TEMP TABLE copy AS SELECT * FROM properties WHERE id = ?",
			"UPDATE temp.copy SET id = ?, last_updated = ?, agency_id = agency_id || '-' || ?",
			"INSERT INTO properties SELECT * FROM temp.copy",
			"DROP TABLE temp.copy",
		} {
			var args []any
			switch {
			case strings.HasPrefix(stmt, "CREATE"):
				args = []any{ch.CopyOf}
			case strings.HasPrefix(stmt, "UPDATE"):
				args = []any{id, stamp, id}
			}
			if _, err = tx.ExecContext(ctx, stmt, args...); err != nil {
				return 0, "", err
			}
		}
	case "delete":
		id = ch.ID
		for _, t := range []string{"property_agents", "property_media", "openhomes"} {
			if _, err = tx.ExecContext(ctx, "DELETE FROM "+t+" WHERE property_id = ?", id); err != nil {
				return 0, "", err
			}
		}
		_, err = tx.ExecContext(ctx, "DELETE FROM properties WHERE id = ?", id)
	default:
		return 0, "", fmt.Errorf("op %q: want update, insert or delete", ch.Op)
	}
	if err != nil {
		return 0, "", err
	}
	return id, country, tx.Commit()
}

// send posts the signed webhook of one change and returns the receiver's
// status; a status other than 200 is an error.
func (c *Handler) send(ctx context.Context, tenant, op string, id int64, country string) (int, error) {
	body, _ := json.Marshal(webhook.Body{Changes: []webhook.BodyChange{{Resource: "property", Op: op, IDs: []int64{id}, Country: country}}})
	ts, sig := webhook.Sign(c.o.Secrets[tenant], c.o.Now(), body)
	req, err := http.NewRequestWithContext(ctx, "POST", strings.ReplaceAll(c.o.WebhookURL, "{tenant}", tenant), bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(webhook.HeaderTimestamp, ts)
	req.Header.Set(webhook.HeaderSignature, sig)
	resp, err := c.o.Client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
	if resp.StatusCode != http.StatusOK {
		return resp.StatusCode, fmt.Errorf("%s: %s", resp.Status, bytes.TrimSpace(msg))
	}
	return resp.StatusCode, nil
}

// OpenWriter opens a stand-in's SQLite database for its changes, apart
// from the store that reads it, waiting for the store's locks as the store
// waits for its.
func OpenWriter(dsn string) (*sql.DB, error) {
	sep := "?"
	if strings.Contains(dsn, "?") {
		sep = "&"
	}
	db, err := sql.Open("sqlite", dsn+sep+"_pragma=busy_timeout(10000)&_pragma=foreign_keys(1)")
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	return db, nil
}
