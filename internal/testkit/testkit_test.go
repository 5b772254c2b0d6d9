package testkit_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"testing"
	"time"

	"listingproxy/internal/testkit"
	"listingproxy/normalize"
	"listingproxy/upstream"
)

func TestClock(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	c := testkit.NewClock(t0)
	c.Advance(90 * time.Second)
	if got, want := c.Now(), t0.Add(90*time.Second); !got.Equal(want) {
		t.Errorf("after Advance: %v, want %v", got, want)
	}
	c.Set(t0)
	if got := c.Now(); !got.Equal(t0) {
		t.Errorf("after Set: %v, want %v", got, t0)
	}
}

func TestBackend(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := upstream.Scope{Tenant: "harbour", Country: "au"}
	b := &testkit.Backend{Properties: map[string][]upstream.Property{"harbour/au": {{ID: 1}, {ID: 2}}}}
	if ps, err := b.ListProperties(ctx, s, normalize.Criteria{}); err != nil || len(ps) != 2 {
		t.Errorf("list = %d properties, %v; want 2", len(ps), err)
	}
	if _, err := b.GetProperty(ctx, upstream.Scope{Tenant: "summit", Country: "au"}, 1); !errors.Is(err, upstream.ErrNotFound) {
		t.Errorf("another tenant's property: err = %v, want ErrNotFound", err)
	}
	down := errors.New("down")
	b.Fail(down)
	if _, err := b.GetAgent(ctx, s, 1); !errors.Is(err, down) {
		t.Errorf("failing: err = %v, want %v", err, down)
	}
	b.Fail(nil)
	release := b.Block()
	done := make(chan error)
	go func() { _, err := b.GetProperty(ctx, s, 2); done <- err }()
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := b.ListAgents(cctx, s, normalize.Criteria{}); !errors.Is(err, context.Canceled) {
		t.Errorf("blocked call with a cancelled context: err = %v, want Canceled", err)
	}
	release()
	if err := <-done; err != nil {
		t.Errorf("released call: %v", err)
	}
	if got, want := b.Calls(), int64(5); got != want {
		t.Errorf("Calls = %d, want %d", got, want)
	}
	if got, want := b.TenantCalls("summit"), 1; got != want {
		t.Errorf("TenantCalls(summit) = %d, want %d", got, want)
	}
}

func TestBasicAuthAndClosedAddr(t *testing.T) {
	t.Parallel()
	r, _ := http.NewRequest("GET", "/", nil)
	r.Header.Set("Authorization", testkit.BasicAuth("harbour", "pw:x"))
	if u, p, ok := r.BasicAuth(); !ok || u != "harbour" || p != "pw:x" {
		t.Errorf("BasicAuth round trip = %q %q %v", u, p, ok)
	}
	if c, err := net.Dial("tcp", testkit.ClosedAddr(t)); err == nil {
		c.Close()
		t.Error("dial to ClosedAddr succeeded, want refused")
	}
}
