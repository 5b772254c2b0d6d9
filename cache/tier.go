package cache

import (
	"context"
	"errors"
	"time"
)

// ErrPurgePending is wrapped by the error of a Generations.Purge that
// could not record the purge now and keeps trying until it has: the
// Store applies the purge here at once, and the other processes receive
// it once it is recorded.
var ErrPurgePending = errors.New("purge not recorded for the fleet yet: retrying until it is")

// SecondTier is a cache shared with other processes (a fleet's Redis). The
// Store consults it only inside a flight, after the flight's re-check of
// the first tier and before the loader, as groupcache consults its peers:
// a first-tier hit never reaches it. The default, when Options.SecondTier
// is nil, has nothing stored and never coordinates: every fill loads.
//
// Implementations must never block past ctx, and should fail fast (a
// breaker) when their store is unreachable: an error is a miss to the
// Store, never a failed request.
type SecondTier interface {
	// Get returns the entry stored for k and the generation its fill
	// started at (see Generations), or a nil Entry when there is none.
	// The Entry is the caller's own (not shared): Options.Adopt may set
	// its Meta.
	Get(ctx context.Context, k Key) (*Entry, uint64, error)
	// Claim is called on a second-tier miss, before the loader. It
	// returns a nil Entry and a nil error when this process should load k
	// (it now holds k's fill lease, or the tier cannot coordinate), the
	// entry and generation another process filled while this one waited
	// for it, or an error when that other fill failed or ctx ended.
	Claim(ctx context.Context, k Key) (*Entry, uint64, error)
	// Set writes a filled entry through, to be kept for ttl, and ends
	// this process's claim on k.
	Set(ctx context.Context, k Key, gen uint64, e *Entry, ttl time.Duration)
	// Abandon ends this process's claim on k without an entry: failed is
	// the loader's error (the waiting processes give up with it), or nil
	// when the fill's result was dropped (they claim again).
	Abandon(ctx context.Context, k Key, failed error)
}

// Generations is where purge epochs come from and how purges reach other
// processes. The Store keeps the epochs it has applied in a local
// copy-on-write table that the hit path reads without a lock; Generations
// adds the purges recorded by others. The default, when
// Options.Generations is nil, is this process alone: an epoch is one more
// than the last one applied and no purge arrives from elsewhere.
type Generations interface {
	// Purge records p (its Epoch unset) for every process and returns its
	// epoch, which must be larger than after (the largest epoch the
	// Store has applied) and than every epoch recorded before. An error
	// wrapping ErrPurgePending says it will be recorded later.
	Purge(ctx context.Context, p Purge, after uint64) (uint64, error)
	// Watch starts delivering purges to apply: those recorded before
	// (at once) and every later one, this process's own included; apply
	// is idempotent. The Store calls it once, from New.
	Watch(apply func(Purge))
	// Covering returns the largest fill epoch recorded for a purge that
	// covers k, or a body of k's tenant carrying any of tags (its
	// Entry.Tags). The Store asks it when a fill completes, before
	// storing: a purge another process recorded during the fill, and that
	// has not been delivered yet, keeps the fill's result out of both
	// tiers.
	Covering(ctx context.Context, k Key, tags []Tag) (uint64, error)
}

// Purge is one purge: of everything (All), of a tenant (Resource and Tags
// empty), of one resource of a tenant, or of the entries of a tenant that
// carry any of Tags (an entity's bodies, one URL's).
type Purge struct {
	All              bool
	Tenant, Resource string
	Tags             []Tag
	Mode             PurgeMode
	// Lifetime, for a purge by Tags, is how long its record must be
	// kept: the longest lifetime of an entry it may cover. Set by the
	// Store.
	Lifetime time.Duration
	// Epoch orders purges: an entry whose fill started before the
	// Epoch's purge is covered by it. Set by Generations.Purge.
	Epoch uint64
}

// noTier is the default SecondTier: nothing shared.
type noTier struct{}

func (noTier) Get(context.Context, Key) (*Entry, uint64, error)        { return nil, 0, nil }
func (noTier) Claim(context.Context, Key) (*Entry, uint64, error)      { return nil, 0, nil }
func (noTier) Set(context.Context, Key, uint64, *Entry, time.Duration) {}
func (noTier) Abandon(context.Context, Key, error)                     {}

// localGenerations is the default Generations: this process alone.
type localGenerations struct{}

func (localGenerations) Purge(_ context.Context, _ Purge, after uint64) (uint64, error) {
	return after + 1, nil
}
func (localGenerations) Watch(func(Purge))                                    {}
func (localGenerations) Covering(context.Context, Key, []Tag) (uint64, error) { return 0, nil }
