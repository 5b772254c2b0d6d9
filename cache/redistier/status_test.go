package redistier_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"listingproxy/cache/redistier"
)

// TestStatusRecords: replicas' status records are read back by every
// replica until their ttl passes, then dropped (and deleted); a fleet
// holds at most MaxStatusRecords, a new replica past it is refused until
// records expire, and a replica already counted may always renew its own.
func TestStatusRecords(t *testing.T) {
	rdb := client(t, redisAddr(t))
	p := "lptest:" + rand.Text()[:10] + ":"
	a := redistier.New(rdb, redistier.Options{KeyPrefix: p})
	b := redistier.New(rdb, redistier.Options{KeyPrefix: p})
	defer a.Close()
	defer b.Close()
	ctx := context.Background()
	now := time.Now()
	if err := a.PublishStatus(ctx, "a", []byte(`{"n":1}`), 10*time.Second, now); err != nil {
		t.Fatal(err)
	}
	if err := b.PublishStatus(ctx, "b", []byte(`{"n":2} with spaces`), 20*time.Second, now); err != nil {
		t.Fatal(err)
	}
	got, err := b.Replicas(ctx, now.Add(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]byte{"a": []byte(`{"n":1}`), "b": []byte(`{"n":2} with spaces`)}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Replicas (-want +got):\n%s", diff)
	}
	// a is silent past its ttl: gone, and deleted from the hash.
	got, err = a.Replicas(ctx, now.Add(11*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string][]byte{"b": want["b"]}, got); diff != "" {
		t.Errorf("Replicas after a's ttl (-want +got):\n%s", diff)
	}
	if n := rdb.HLen(ctx, p+"{status}").Val(); n != 1 {
		t.Errorf("the status hash holds %d records after a's expired, want 1", n)
	}
	if ttl := rdb.PTTL(ctx, p+"{status}").Val(); ttl <= 0 || ttl > 20*time.Second {
		t.Errorf("the status hash's TTL is %v, want (0, 20s]: it must vanish with the fleet", ttl)
	}

	// A replica that stops forgets its record.
	if err := a.PublishStatus(ctx, "a", []byte(`{"n":1}`), 10*time.Second, now); err != nil {
		t.Fatal(err)
	}
	if err := a.ForgetStatus(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if got, err := b.Replicas(ctx, now); err != nil || got["a"] != nil || got["b"] == nil {
		t.Errorf("after a forgot its record: %q, %v; want b's only", got, err)
	}

	// The bound: fill the hash, then a new replica is refused, b renews.
	for i := range redistier.MaxStatusRecords - 1 {
		if err := a.PublishStatus(ctx, fmt.Sprintf("r%03d", i), []byte("{}"), time.Minute, now); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.PublishStatus(ctx, "late", []byte("{}"), time.Minute, now); err == nil {
		t.Errorf("a record past %d was accepted", redistier.MaxStatusRecords)
	}
	if err := b.PublishStatus(ctx, "b", []byte("{}"), time.Minute, now); err != nil {
		t.Errorf("b could not renew its own record at the bound: %v", err)
	}
	if got, err := a.Replicas(ctx, now); err != nil || len(got) != redistier.MaxStatusRecords {
		t.Errorf("Replicas at the bound: %d records, %v", len(got), err)
	}
	// Once they expire, the late replica gets in.
	if err := a.PublishStatus(ctx, "late", []byte("{}"), time.Minute, now.Add(2*time.Minute)); err != nil {
		t.Errorf("a new replica after the others expired: %v", err)
	}
}

// TestStatusRedisDown: with Redis gone, publishing and reading fail within
// the operation deadline, with an error, never a hang.
func TestStatusRedisDown(t *testing.T) {
	port := freePort(t)
	rdb, err := redistier.Dial(redistier.ClientOptions{Addrs: []string{fmt.Sprintf("127.0.0.1:%d", port)}})
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	tier := redistier.New(rdb, redistier.Options{KeyPrefix: "lptest:down:"})
	defer tier.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := tier.PublishStatus(ctx, "a", []byte("{}"), time.Minute, time.Now()); err == nil {
		t.Error("PublishStatus with Redis down succeeded")
	}
	if _, err := tier.Replicas(ctx, time.Now()); err == nil {
		t.Error("Replicas with Redis down succeeded")
	}
	if err := tier.ForgetStatus(ctx, "a"); err == nil {
		t.Error("ForgetStatus with Redis down succeeded")
	}
	if ctx.Err() != nil {
		t.Error("the calls outlived their deadline")
	}
}
