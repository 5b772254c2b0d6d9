package redistier

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"listingproxy/cache"
)

// field names a purge scope in the generations hash: "a" (all),
// "t\x00TENANT", "r\x00TENANT\x00RESOURCE".
func field(p cache.Purge) string {
	switch {
	case p.All:
		return "a"
	case p.Resource == "":
		return "t\x00" + p.Tenant
	}
	return "r\x00" + p.Tenant + "\x00" + p.Resource
}

func parseField(f string) (cache.Purge, bool) {
	parts := strings.Split(f, "\x00")
	switch {
	case parts[0] == "a" && len(parts) == 1:
		return cache.Purge{All: true}, true
	case parts[0] == "t" && len(parts) == 2:
		return cache.Purge{Tenant: parts[1]}, true
	case parts[0] == "r" && len(parts) == 3:
		return cache.Purge{Tenant: parts[1], Resource: parts[2]}, true
	}
	return cache.Purge{}, false
}

// purgeScript records a purge. KEYS: generations hash, epoch counter;
// ARGV: field, "1" for hard, the caller's largest epoch, channel, mode
// letter. The epoch is above both the counter and the caller's (which may
// have purged alone while Redis was away). The record is "FILL:HARD";
// the message "EPOCH MODE FIELD".
var purgeScript = redis.NewScript(`
local e = redis.call('INCR', KEYS[2])
local after = tonumber(ARGV[3])
if e <= after then e = after + 1; redis.call('SET', KEYS[2], e) end
local hard = 0
local cur = redis.call('HGET', KEYS[1], ARGV[1])
if cur then hard = tonumber(string.match(cur, ':(%d+)$')) end
if ARGV[2] == '1' then hard = e end
redis.call('HSET', KEYS[1], ARGV[1], e .. ':' .. hard)
redis.call('PUBLISH', ARGV[4], e .. ' ' .. ARGV[5] .. ' ' .. ARGV[1])
return e`)

// Purge implements cache.Generations.
func (t *Tier) Purge(ctx context.Context, p cache.Purge, after uint64) (uint64, error) {
	hard, mode := "0", "s"
	if p.Mode == cache.Hard {
		hard, mode = "1", "h"
	}
	var epoch uint64
	err := t.do(ctx, "purge", func(ctx context.Context) (err error) {
		epoch, err = purgeScript.Run(ctx, t.rdb, []string{t.gensKey, t.epochKey},
			field(p), hard, strconv.FormatUint(after, 10), t.purgeCh, mode).Uint64()
		return err
	})
	if err != nil {
		return 0, err
	}
	t.purgesSent.Add(1)
	return epoch, nil
}

// Covering implements cache.Generations.
func (t *Tier) Covering(ctx context.Context, k cache.Key) (uint64, error) {
	var vals []any
	err := t.do(ctx, "covering", func(ctx context.Context) (err error) {
		vals, err = t.rdb.HMGet(ctx, t.gensKey, "a", field(cache.Purge{Tenant: k.Tenant}),
			field(cache.Purge{Tenant: k.Tenant, Resource: k.Resource})).Result()
		return err
	})
	if err != nil {
		return 0, err
	}
	var cov uint64
	for _, v := range vals {
		if s, ok := v.(string); ok {
			fill, _, _ := parseRecord(s)
			cov = max(cov, fill)
		}
	}
	return cov, nil
}

func parseRecord(s string) (fill, hard uint64, ok bool) {
	a, b, found := strings.Cut(s, ":")
	f, err1 := strconv.ParseUint(a, 10, 64)
	h, err2 := strconv.ParseUint(b, 10, 64)
	return f, h, found && err1 == nil && err2 == nil
}

// Watch implements cache.Generations: it subscribes to the fleet's
// channels and delivers purges to apply, after reading every recorded one
// on each (re)subscription.
func (t *Tier) Watch(apply func(cache.Purge)) {
	ctx, cancel := context.WithCancel(context.Background())
	ps := t.rdb.Subscribe(ctx, t.filledCh, t.purgeCh)
	t.mu.Lock()
	t.apply = apply
	// Receive does not watch ctx while it reads: closing the PubSub ends it.
	t.stop = func() {
		cancel()
		_ = ps.Close()
	}
	t.mu.Unlock()
	go t.listen(ctx, ps)
}

// listen receives fill notices and purges until ctx ends, reconnecting
// with a backoff while Redis is away.
func (t *Tier) listen(ctx context.Context, ps *redis.PubSub) {
	defer close(t.done)
	backoff := 50 * time.Millisecond
	for {
		msg, err := ps.Receive(ctx)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			t.log.Debug("redistier: subscription", "err", err)
			t.wakeAll()
			if !pause(ctx, &backoff) {
				return
			}
			continue
		}
		backoff = 50 * time.Millisecond
		switch m := msg.(type) {
		case *redis.Subscription:
			if m.Kind == "subscribe" && m.Channel == t.purgeCh {
				t.sync(ctx)
				t.subOnce.Do(func() { close(t.subscribed) })
			}
		case *redis.Message:
			switch m.Channel {
			case t.filledCh:
				t.filled(m.Payload)
			case t.purgeCh:
				t.purged(m.Payload)
			}
		}
	}
}

// filled handles "ID ok", "ID retry" or "ID fail MESSAGE".
func (t *Tier) filled(payload string) {
	eid, rest, _ := strings.Cut(payload, " ")
	var n note
	if msg, ok := strings.CutPrefix(rest, "fail "); ok {
		n.failed = msg
		if n.failed == "" {
			n.failed = "unknown error"
		}
	}
	t.notify(eid, n)
}

// purged handles "EPOCH MODE FIELD".
func (t *Tier) purged(payload string) {
	e, rest, _ := strings.Cut(payload, " ")
	mode, f, _ := strings.Cut(rest, " ")
	epoch, err := strconv.ParseUint(e, 10, 64)
	p, ok := parseField(f)
	if err != nil || !ok {
		t.log.Warn("redistier: unreadable purge message", "payload", payload)
		return
	}
	p.Epoch = epoch
	if mode == "h" {
		p.Mode = cache.Hard
	}
	t.purgesIn.Add(1)
	t.deliver(p)
}

func (t *Tier) deliver(p cache.Purge) {
	t.mu.Lock()
	apply := t.apply
	t.mu.Unlock()
	if apply != nil {
		apply(p)
	}
}

// sync delivers every recorded purge: a record FILL:HARD is a soft purge
// at FILL and a hard one at HARD. It runs when the subscription (re)starts,
// often while the breaker is still open after an outage, so it bypasses
// the breaker and, until it succeeds, retries with a backoff.
func (t *Tier) sync(ctx context.Context) {
	backoff := 50 * time.Millisecond
	for {
		start := time.Now()
		rctx, cancel := context.WithTimeout(ctx, max(t.timeout, time.Second))
		recs, err := t.rdb.HGetAll(rctx, t.gensKey).Result()
		cancel()
		if t.observe != nil {
			t.observe("sync", time.Since(start), err)
		}
		if err == nil {
			t.deliverAll(recs)
			return
		}
		t.errs.Add(1)
		t.log.Warn("redistier: reading the fleet's purges failed; retrying", "err", err)
		if !pause(ctx, &backoff) {
			return
		}
	}
}

// pause waits *backoff, then doubles it up to a second; false when ctx
// ended first.
func pause(ctx context.Context, backoff *time.Duration) bool {
	select {
	case <-ctx.Done():
		return false
	case <-time.After(*backoff):
	}
	*backoff = min(2**backoff, time.Second)
	return true
}

func (t *Tier) deliverAll(recs map[string]string) {
	for f, r := range recs {
		p, ok := parseField(f)
		fill, hard, ok2 := parseRecord(r)
		if !ok || !ok2 {
			continue
		}
		if hard > 0 {
			p.Mode, p.Epoch = cache.Hard, hard
			t.deliver(p)
		}
		if fill > hard {
			p.Mode, p.Epoch = cache.Soft, fill
			t.deliver(p)
		}
	}
}
