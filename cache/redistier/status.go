package redistier

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
)

// MaxStatusRecords bounds the replicas' status records a reader returns
// (Replicas) and a fleet keeps: a replica does not add its record to a
// hash that already holds this many others.
const MaxStatusRecords = 256

// statusKey is the hash of the fleet's status records: one field per
// replica, its value "EXPIRY-UNIX-MS RECORD". One key (its hash tag
// {status}), so that a Redis Cluster serves it from one node.
func (t *Tier) statusKey() string { return t.prefix + "{status}" }

// PublishStatus writes this replica's status record (a small document of
// the caller's, such as the operator's page's summary of this process)
// under id, valid for ttl: Replicas stops returning it once ttl has
// passed without a new one, so a replica that died drops off the fleet's
// page within ttl. The hash itself expires ttl after the last write of any
// replica. It bypasses the breaker (the status is not on a request's
// path) and is bounded by the operation deadline.
func (t *Tier) PublishStatus(ctx context.Context, id string, record []byte, ttl time.Duration, now time.Time) error {
	ctx, cancel := context.WithTimeout(ctx, t.deadline)
	defer cancel()
	key := t.statusKey()
	n, err := t.rdb.HLen(ctx, key).Result()
	if err != nil {
		return fmt.Errorf("redistier: status: %w", err)
	}
	if n >= MaxStatusRecords {
		mine, err := t.rdb.HExists(ctx, key, id).Result()
		if err != nil {
			return fmt.Errorf("redistier: status: %w", err)
		}
		if !mine {
			// Make room for the living: delete the expired, then count again.
			if _, err := t.Replicas(ctx, now); err != nil {
				return err
			}
			if n, err = t.rdb.HLen(ctx, key).Result(); err != nil {
				return fmt.Errorf("redistier: status: %w", err)
			}
			if n >= MaxStatusRecords {
				return fmt.Errorf("redistier: status: the fleet already has %d status records", n)
			}
		}
	}
	value := strconv.FormatInt(now.Add(ttl).UnixMilli(), 10) + " " + string(record)
	pipe := t.rdb.TxPipeline()
	pipe.HSet(ctx, key, id, value)
	pipe.PExpire(ctx, key, ttl)
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("redistier: status: %w", err)
	}
	return nil
}

// Replicas returns the status record of every replica that published one
// within its ttl as of now, by id: at most MaxStatusRecords, the first by
// id when there are more. It deletes the expired ones it finds.
func (t *Tier) Replicas(ctx context.Context, now time.Time) (map[string][]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, t.deadline)
	defer cancel()
	all, err := t.rdb.HGetAll(ctx, t.statusKey()).Result()
	if err != nil {
		return nil, fmt.Errorf("redistier: status: %w", err)
	}
	out := map[string][]byte{}
	var expired []string
	for _, id := range slices.Sorted(maps.Keys(all)) {
		exp, rec, ok := strings.Cut(all[id], " ")
		ms, err := strconv.ParseInt(exp, 10, 64)
		if !ok || err != nil || ms <= now.UnixMilli() {
			expired = append(expired, id)
			continue
		}
		if len(out) < MaxStatusRecords {
			out[id] = []byte(rec)
		}
	}
	if len(expired) > 0 {
		t.rdb.HDel(ctx, t.statusKey(), expired...)
	}
	return out, nil
}

// ForgetStatus deletes id's status record: a replica that stops drops off
// the fleet's page at once instead of after its ttl.
func (t *Tier) ForgetStatus(ctx context.Context, id string) error {
	ctx, cancel := context.WithTimeout(ctx, t.deadline)
	defer cancel()
	if err := t.rdb.HDel(ctx, t.statusKey(), id).Err(); err != nil {
		return fmt.Errorf("redistier: status: %w", err)
	}
	return nil
}
