package redistier

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/cenkalti/backoff/v5"
	"github.com/redis/go-redis/v9"

	"listingproxy/cache"
)

// field names a purge scope in the generations hash: "a" (all),
// "t\x00TENANT", "r\x00TENANT\x00RESOURCE"; in a purge message, a purge by
// tags is "g\x00TENANT\x00TAG,TAG..." (tags in hexadecimal).
func field(p cache.Purge) string {
	switch {
	case p.All:
		return "a"
	case len(p.Tags) > 0:
		b := make([]byte, 0, 3+len(p.Tenant)+17*len(p.Tags))
		b = append(b, "g\x00"...)
		b = append(b, p.Tenant...)
		b = append(b, 0)
		for i, t := range p.Tags {
			if i > 0 {
				b = append(b, ',')
			}
			b = strconv.AppendUint(b, uint64(t), 16)
		}
		return string(b)
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
	case parts[0] == "g" && len(parts) == 3:
		p := cache.Purge{Tenant: parts[1]}
		for h := range strings.SplitSeq(parts[2], ",") {
			t, err := strconv.ParseUint(h, 16, 64)
			if err != nil {
				return cache.Purge{}, false
			}
			p.Tags = append(p.Tags, cache.Tag(t))
		}
		return p, len(p.Tags) > 0
	}
	return cache.Purge{}, false
}

// tagField names a tag's record in the tags hash: "TENANT\x00TAG" (the
// tag in hexadecimal).
func tagField(tenant string, t cache.Tag) string {
	return tenant + "\x00" + strconv.FormatUint(uint64(t), 16)
}

func parseTagField(f string) (tenant string, t cache.Tag, ok bool) {
	tenant, h, found := strings.Cut(f, "\x00")
	v, err := strconv.ParseUint(h, 16, 64)
	return tenant, cache.Tag(v), found && err == nil
}

// purgeTagsScript records a purge by tags. KEYS: tags hash, its expiry
// sorted set, epoch counter, generations hash; ARGV: "1" for hard, the
// caller's largest epoch, channel, mode letter, message field, now and
// expiry (Unix ms), the most records to keep, then the tags' fields. Each
// record is "FILL:HARD" as in the generations hash and expires (is dropped
// by a later purge) once no entry it may cover can be alive; past the
// bound, the records closest to expiry are folded into their tenant's
// record in the generations hash (a purge of the whole tenant at their
// epochs), as a process folds its own table. The message is "EPOCH MODE
// FIELD".
var purgeTagsScript = redis.NewScript(`
local e = redis.call('INCR', KEYS[3])
local after = tonumber(ARGV[2])
if e <= after then e = after + 1; redis.call('SET', KEYS[3], e) end
for i = 9, #ARGV do
	local hard = 0
	local cur = redis.call('HGET', KEYS[1], ARGV[i])
	if cur then hard = tonumber(string.match(cur, ':(%d+)$')) end
	if ARGV[1] == '1' then hard = e end
	redis.call('HSET', KEYS[1], ARGV[i], e .. ':' .. hard)
	redis.call('ZADD', KEYS[2], ARGV[7], ARGV[i])
end
local old = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', ARGV[6], 'LIMIT', 0, 1000)
for _, f in ipairs(old) do
	redis.call('HDEL', KEYS[1], f)
	redis.call('ZREM', KEYS[2], f)
end
local over = redis.call('ZCARD', KEYS[2]) - tonumber(ARGV[8])
if over > 0 then
	local popped = redis.call('ZPOPMIN', KEYS[2], math.min(over, 1000))
	for i = 1, #popped, 2 do
		local f = popped[i]
		local rec = redis.call('HGET', KEYS[1], f)
		redis.call('HDEL', KEYS[1], f)
		local z = string.find(f, '\0', 1, true)
		if rec and z then
			local fill, hard = string.match(rec, '^(%d+):(%d+)$')
			local tf = 't\0' .. string.sub(f, 1, z - 1)
			local cf, ch = 0, 0
			local cur = redis.call('HGET', KEYS[4], tf)
			if cur then
				local a, b = string.match(cur, '^(%d+):(%d+)$')
				cf, ch = tonumber(a) or 0, tonumber(b) or 0
			end
			if fill then
				redis.call('HSET', KEYS[4], tf, math.max(cf, tonumber(fill)) .. ':' .. math.max(ch, tonumber(hard)))
			end
		end
	end
end
redis.call('PUBLISH', ARGV[3], e .. ' ' .. ARGV[4] .. ' ' .. ARGV[5])
return e`)

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

// Purge implements cache.Generations. A purge that Redis cannot record
// within Options.Timeout is not lost: it is pending (Stats.PurgesPending)
// and the tier records it as soon as it can, retrying with a backoff
// (retryPurges); Purge then returns an error wrapping
// cache.ErrPurgePending, and the Store applies the purge here at once.
func (t *Tier) Purge(ctx context.Context, p cache.Purge, after uint64) (uint64, error) {
	t.pending.Add(1)
	epoch, err := call(t, ctx, "purge", func(ctx context.Context) (uint64, error) {
		return t.record(ctx, p, after)
	}, func(_ uint64, err error, _ bool) {
		if err != nil {
			t.requeue(p, after)
			return
		}
		t.pending.Add(-1)
		t.purgesSent.Add(1)
	})
	if err != nil {
		return 0, fmt.Errorf("%w: %w", cache.ErrPurgePending, err)
	}
	return epoch, nil
}

// record records p in Redis and publishes it, in one script.
func (t *Tier) record(ctx context.Context, p cache.Purge, after uint64) (uint64, error) {
	hard, mode := "0", "s"
	if p.Mode == cache.Hard {
		hard, mode = "1", "h"
	}
	if len(p.Tags) > 0 {
		now := time.Now()
		args := make([]any, 0, 8+len(p.Tags))
		args = append(args, hard, strconv.FormatUint(after, 10), t.purgeCh, mode, field(p),
			now.UnixMilli(), now.Add(max(p.Lifetime, time.Minute)).UnixMilli(), t.maxRecords)
		for _, tg := range p.Tags {
			args = append(args, tagField(p.Tenant, tg))
		}
		return purgeTagsScript.Run(ctx, t.rdb, []string{t.tagsKey, t.tagsExpKey, t.epochKey, t.gensKey}, args...).Uint64()
	}
	return purgeScript.Run(ctx, t.rdb, []string{t.gensKey, t.epochKey},
		field(p), hard, strconv.FormatUint(after, 10), t.purgeCh, mode).Uint64()
}

// maxPendingPurges bounds the purges waiting to be recorded: past it,
// they are widened to purges of their whole tenants (see requeue).
const maxPendingPurges = 10_000

// pendingPurge is a purge waiting to be recorded. seq tells a retry that
// the entry it recorded has not been replaced (merged) since.
type pendingPurge struct {
	p     cache.Purge
	after uint64
	seq   uint64
}

// requeue makes p, whose recording failed, pending: retryPurges records
// it. A pending purge of the same scope is merged with it (the harder
// mode wins); past maxPendingPurges every pending purge is widened to its
// tenant's (or everything), which bounds them by the number of tenants:
// a wider purge than asked for, never a lost one.
func (t *Tier) requeue(p cache.Purge, after uint64) {
	t.retryMu.Lock()
	defer t.retryMu.Unlock()
	if t.retryQ == nil {
		t.retryQ = map[string]pendingPurge{}
	}
	t.merge(p, after)
	if len(t.retryQ) > maxPendingPurges {
		old := t.retryQ
		t.retryQ = make(map[string]pendingPurge, len(old)/8)
		for _, pp := range old {
			w := cache.Purge{All: pp.p.All, Tenant: pp.p.Tenant, Mode: pp.p.Mode}
			if w.All {
				w.Tenant = ""
			}
			t.merge(w, pp.after) // each purge merged counts itself out
		}
	}
	if t.retryStop == nil && !t.retryClosed {
		ctx, cancel := context.WithCancel(context.Background())
		t.retryStop, t.retryDone, t.retryKick = cancel, make(chan struct{}), make(chan struct{}, 1)
		go t.retryPurges(ctx)
	}
	select {
	case t.retryKick <- struct{}{}:
	default:
	}
}

// merge adds p to retryQ, merging it with a pending purge of the same
// scope (retryMu held); that one and p are then one pending purge.
func (t *Tier) merge(p cache.Purge, after uint64) {
	p.Epoch = 0
	f := field(p)
	t.retrySeq++
	if old, ok := t.retryQ[f]; ok {
		p.Mode = max(p.Mode, old.p.Mode)
		p.Lifetime = max(p.Lifetime, old.p.Lifetime)
		after = max(after, old.after)
		t.pending.Add(-1)
	}
	t.retryQ[f] = pendingPurge{p, after, t.retrySeq}
}

// retryPurges records the pending purges until none is left, waiting a
// backoff (50ms, doubling to 1s) after a failure; it runs from the first
// failed purge until Close.
func (t *Tier) retryPurges(ctx context.Context) {
	defer close(t.retryDone)
	bo := newBackoff()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.retryKick:
		}
		for {
			done, err := t.recordPending(ctx, func(ctx context.Context, pp pendingPurge) error {
				_, err := exec(t, ctx, "purge", func(ctx context.Context) (uint64, error) {
					return t.record(ctx, pp.p, pp.after)
				})
				return err
			})
			if done {
				break
			}
			if err == nil {
				bo.Reset()
				continue
			}
			t.log.Debug("redistier: recording pending purges failed; retrying", "pending", t.pending.Load(), "err", err)
			if !pause(ctx, bo) {
				return
			}
		}
	}
}

// recordPending records the purges pending now with rec, each counted out
// when recorded and not merged with a newer one meanwhile; done when none
// was pending, else the first failure (nil when all were recorded).
func (t *Tier) recordPending(ctx context.Context, rec func(context.Context, pendingPurge) error) (done bool, err error) {
	t.retryMu.Lock()
	batch := make([]pendingPurge, 0, len(t.retryQ))
	for _, pp := range t.retryQ {
		batch = append(batch, pp)
	}
	t.retryMu.Unlock()
	if len(batch) == 0 {
		return true, nil
	}
	for _, pp := range batch {
		if err := rec(ctx, pp); err != nil {
			return false, err
		}
		t.purgesSent.Add(1)
		t.retryMu.Lock()
		if cur, ok := t.retryQ[field(pp.p)]; ok && cur.seq == pp.seq {
			delete(t.retryQ, field(pp.p))
			t.pending.Add(-1)
		}
		t.retryMu.Unlock()
	}
	return false, nil
}

// flushPending is Close's last try at the pending purges, until none is
// left or ctx ends: a replica stopped by a deploy while Redis was slow or
// away still tells the fleet what it purged if Redis answers in time. It
// bypasses the breaker (open after the outage that made them pending, it
// would refuse every try until its own timeout) and bounds each try by
// the operation's deadline.
func (t *Tier) flushPending(ctx context.Context) {
	bo := newBackoff()
	for ctx.Err() == nil {
		done, err := t.recordPending(ctx, func(ctx context.Context, pp pendingPurge) error {
			octx, cancel := context.WithTimeout(ctx, t.deadline)
			defer cancel()
			start := time.Now()
			_, err := t.record(octx, pp.p, pp.after)
			if t.observe != nil {
				t.observe("purge", time.Since(start), err)
			}
			return err
		})
		if done {
			return
		}
		if err != nil && !pause(ctx, bo) {
			return
		}
	}
}

// Covering implements cache.Generations: the records of everything, k's
// tenant and resource, and the tenant's tags among tags, in one round
// trip (both hashes share a hash slot).
func (t *Tier) Covering(ctx context.Context, k cache.Key, tags []cache.Tag) (uint64, error) {
	vals, err := call(t, ctx, "covering", func(ctx context.Context) ([]any, error) {
		var scopes, byTag *redis.SliceCmd
		_, err := t.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			scopes = p.HMGet(ctx, t.gensKey, "a", field(cache.Purge{Tenant: k.Tenant}),
				field(cache.Purge{Tenant: k.Tenant, Resource: k.Resource}))
			if len(tags) > 0 {
				fields := make([]string, len(tags))
				for i, tg := range tags {
					fields[i] = tagField(k.Tenant, tg)
				}
				byTag = p.HMGet(ctx, t.tagsKey, fields...)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		vals := scopes.Val()
		if byTag != nil {
			vals = append(vals, byTag.Val()...)
		}
		return vals, nil
	}, nil)
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
	bo := newBackoff()
	for {
		msg, err := ps.Receive(ctx)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			t.log.Debug("redistier: subscription", "err", err)
			// Purges published while the subscription is down are lost
			// to it: the entries in Redis are not to be judged until the
			// next sync has read them.
			t.synced.Store(false)
			t.wakeAll()
			if !pause(ctx, bo) {
				return
			}
			continue
		}
		bo.Reset()
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
	n := note{written: rest == "ok"}
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

// syncPage is how many records one HSCAN of a sync asks for: a page is
// read well within Options.Timeout, however many records Redis holds.
const syncPage = 1000

// sync delivers every recorded purge: a record FILL:HARD is a soft purge
// at FILL and a hard one at HARD. It reads both hashes page by page
// (HSCAN), the tags first: a record folded into its tenant's while the
// sync runs is then found in the generations hash, read after. HSCAN
// returns every field present for the whole scan; a record written
// meanwhile is also published, and the subscription is already up. It
// runs when the subscription (re)starts, often while the breaker is still
// open after an outage, so it bypasses the breaker and retries a failed
// page with a backoff. Until it ends, Get treats the entries in Redis as
// misses (see Synced).
func (t *Tier) sync(ctx context.Context) {
	for _, key := range [...]string{t.tagsKey, t.gensKey} {
		deliver := t.deliverTag
		if key == t.gensKey {
			deliver = t.deliverScope
		}
		var cursor uint64
		bo := newBackoff()
		for {
			start := time.Now()
			rctx, cancel := context.WithTimeout(ctx, max(t.timeout, time.Second))
			kv, next, err := t.rdb.HScan(rctx, key, cursor, "", syncPage).Result()
			cancel()
			if t.observe != nil {
				t.observe("sync", time.Since(start), err)
			}
			if ctx.Err() != nil {
				return
			}
			if err != nil {
				t.errs.Add(1)
				t.log.Warn("redistier: reading the fleet's purges failed; retrying", "key", key, "err", err)
				if !pause(ctx, bo) {
					return
				}
				continue
			}
			bo.Reset()
			for i := 0; i+1 < len(kv); i += 2 {
				deliver(kv[i], kv[i+1])
			}
			if next == 0 {
				break
			}
			cursor = next
		}
	}
	t.synced.Store(true)
}

// pause waits *backoff, then doubles it up to a second; false when ctx
// ended first.
func pause(ctx context.Context, bo *backoff.ExponentialBackOff) bool {
	t := time.NewTimer(bo.NextBackOff())
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
	}
	return true
}

// newBackoff is the retry delay of Redis operations: 50ms doubling to 1s,
// jittered by half (cenkalti/backoff) so that the replicas of a fleet that
// lost Redis together do not come back in step.
func newBackoff() *backoff.ExponentialBackOff {
	b := backoff.NewExponentialBackOff()
	b.InitialInterval, b.MaxInterval = 50*time.Millisecond, time.Second
	return b
}

// deliverScope delivers the record r of field f of the generations hash.
func (t *Tier) deliverScope(f, r string) {
	p, ok := parseField(f)
	fill, hard, ok2 := parseRecord(r)
	if ok && ok2 {
		t.deliverRecord(p, fill, hard)
	}
}

// deliverTag delivers the record r of field f of the tags hash.
func (t *Tier) deliverTag(f, r string) {
	tenant, tag, ok := parseTagField(f)
	fill, hard, ok2 := parseRecord(r)
	if ok && ok2 {
		t.deliverRecord(cache.Purge{Tenant: tenant, Tags: []cache.Tag{tag}}, fill, hard)
	}
}

// deliverRecord delivers a record FILL:HARD of p's scope: a hard purge at
// HARD and, when later, a soft one at FILL.
func (t *Tier) deliverRecord(p cache.Purge, fill, hard uint64) {
	if hard > 0 {
		p.Mode, p.Epoch = cache.Hard, hard
		t.deliver(p)
	}
	if fill > hard {
		p.Mode, p.Epoch = cache.Soft, fill
		t.deliver(p)
	}
}
