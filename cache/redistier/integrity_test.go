package redistier_test

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"listingproxy/cache"
	"listingproxy/cache/redistier"
)

// entryKeyOf returns the one entry key under prefix p.
func entryKeyOf(t *testing.T, rdb redis.UniversalClient, p string) string {
	t.Helper()
	keys, err := rdb.Keys(context.Background(), p+"e:*").Result()
	if err != nil || len(keys) != 1 {
		t.Fatalf("entry keys under %s: %q, %v; want one", p, keys, err)
	}
	return keys[0]
}

// listing is a 45 KB JSON body, large enough for a gzip form.
func listing() string {
	var b strings.Builder
	for i := 0; b.Len() < 45_000; i++ {
		fmt.Fprintf(&b, `{"id":%d,"address":"%d Harbour Street","price":%d},`, i, i, 500_000+i*1_000)
	}
	return b.String()
}

// TestDamagedEntryIsNeverServed: eight bytes changed in Redis inside a
// stored body, or inside its stored gzip form, make the entry a miss on
// the replica that reads it (counted as damaged), never a hit with the
// damaged bytes; the loader's body is served and written through.
func TestDamagedEntryIsNeverServed(t *testing.T) {
	body := listing()
	for _, part := range []string{"body", "gzip"} {
		t.Run(part, func(t *testing.T) {
			rs, rdb, p := fleet(t, 2)
			e, _, err := rs[0].store.Get(context.Background(), key, pol, loaderOf(body))
			if err != nil || len(e.Gzip) == 0 {
				t.Fatalf("fill: %v (gzip form %d bytes)", err, len(e.Gzip))
			}
			ek := entryKeyOf(t, rdb, p)
			ctx := context.Background()
			raw, err := rdb.Get(ctx, ek).Bytes()
			if err != nil {
				t.Fatal(err)
			}
			target := e.Body
			if part == "gzip" {
				target = e.Gzip
			}
			at := bytes.Index(raw, target)
			if at < 0 {
				t.Fatalf("the stored value does not hold the %s", part)
			}
			at += len(target) / 2
			copy(raw[at:], "XXXXXXXX")
			if err := rdb.Set(ctx, ek, raw, redis.KeepTTL).Err(); err != nil {
				t.Fatal(err)
			}
			var calls atomic.Int32
			got, o, err := rs[1].store.Get(ctx, key, pol, func(ctx context.Context) (*cache.Entry, error) {
				calls.Add(1)
				return loaderOf(body)(ctx)
			})
			if err != nil || o != cache.Miss || calls.Load() != 1 {
				t.Fatalf("damaged %s: %v, %v, %d loader calls; want a miss and one load", part, o, err, calls.Load())
			}
			if string(got.Body) != body || !bytes.Equal(got.Gzip, e.Gzip) {
				t.Errorf("damaged %s: the answer's body or gzip form differs from the loader's", part)
			}
			if n := rs[1].tier.Stats().Damaged; n != 1 {
				t.Errorf("Stats().Damaged = %d, want 1", n)
			}
			fixed, err := rdb.Get(ctx, ek).Bytes()
			if err != nil || bytes.Contains(fixed, []byte("XXXXXXXX")) {
				t.Errorf("the refill did not replace the damaged value (%v)", err)
			}
		})
	}
}

// TestOversizeValueIsNotReadWhole: a value larger than MaxEntryBytes
// (1 MiB here) at an entry's key (32 MiB) is a miss for which Redis sends
// no more than the bound, and it is deleted, so the next miss does not
// read it again.
func TestOversizeValueIsNotReadWhole(t *testing.T) {
	redisAddr(t)
	port := freePort(t)
	startRedis(t, port)
	rdb := client(t, "127.0.0.1:"+strconv.Itoa(port))
	p := prefix(t, rdb)
	r := newReplicaWith(t, rdb, redistier.Options{KeyPrefix: p, Timeout: time.Second, MaxEntryBytes: 1 << 20}, nil)
	ctx := context.Background()
	if _, _, err := r.store.Get(ctx, key, pol, loaderOf("small")); err != nil {
		t.Fatal(err)
	}
	ek := entryKeyOf(t, rdb, p)
	if err := rdb.Set(ctx, ek, bytes.Repeat([]byte{3}, 32<<20), time.Hour).Err(); err != nil {
		t.Fatal(err)
	}
	out := func() int64 {
		info, err := rdb.Info(ctx, "stats").Result()
		if err != nil {
			t.Fatal(err)
		}
		for line := range strings.SplitSeq(info, "\r\n") {
			if v, ok := strings.CutPrefix(line, "total_net_output_bytes:"); ok {
				n, _ := strconv.ParseInt(v, 10, 64)
				return n
			}
		}
		t.Fatal("INFO stats has no total_net_output_bytes")
		return 0
	}
	for i := range 2 {
		before := out()
		e, _, err := r.tier.Get(ctx, key)
		sent := out() - before
		if err != nil || e != nil {
			t.Errorf("read %d of a 32 MiB value: %v, %v; want a miss", i, e, err)
		}
		if sent > 1<<20+64<<10 {
			t.Errorf("read %d: Redis sent %d bytes, want at most the 1 MiB bound and a little", i, sent)
		}
	}
	if n := r.tier.Stats().Oversize; n != 1 {
		t.Errorf("Stats().Oversize = %d, want 1 (the value dropped at the first read)", n)
	}
	if n, _ := rdb.Exists(ctx, ek).Result(); n != 0 {
		t.Error("the oversize value is still there")
	}
}
