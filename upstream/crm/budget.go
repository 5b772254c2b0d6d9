package crm

import (
	"context"
	"fmt"
	"sync/atomic"

	"golang.org/x/sync/semaphore"

	"listingproxy/upstream"
)

// DefaultMaxDecodingBytes is the default budget of answer bytes decoded at
// once (Options.MaxDecodingBytes): four answers of the default
// MaxBodyBytes, or hundreds of ordinary ones.
const DefaultMaxDecodingBytes = 64 << 20

// grantStep is the least a grant grows by while a body of unknown length
// streams in: few semaphore operations per answer, little held ahead of
// what was read.
const grantStep = 64 << 10

// budget bounds the bytes of CRM answers being decoded at once, whatever
// the number of calls: memory for an answer in decoding is proportional to
// its bytes read (docs/crm.md, "Bounded answers"), so many small answers
// may be in flight while only a few huge ones can. An answer's bytes are
// granted as they are read (all at once when its Content-Length says how
// many) and given back when its call ends.
type budget struct {
	sem   *semaphore.Weighted
	size  int64
	inUse atomic.Int64
	waits atomic.Int64 // grants that had to wait
}

func newBudget(size int64) *budget {
	return &budget{sem: semaphore.NewWeighted(size), size: size}
}

// grant is one answer's part of a budget.
type grant struct {
	b    *budget
	held int64
	// known, when positive, is all the answer can need (its
	// Content-Length, plus the byte that would tell it lied).
	known int64
}

// cover makes sure at least n bytes are granted, waiting within ctx. A
// wait that ends with ctx is upstream.ErrBusy, not a failure of the CRM:
// the bytes of other answers filled the budget.
func (g *grant) cover(ctx context.Context, n int64) error {
	n = min(n, g.b.size)
	if g.known > 0 {
		n = min(n, g.known)
	}
	if n <= g.held {
		return nil
	}
	want := min(max(n-g.held, grantStep), g.b.size-g.held)
	if !g.b.sem.TryAcquire(want) {
		g.b.waits.Add(1)
		if err := g.b.sem.Acquire(ctx, want); err != nil {
			return fmt.Errorf("waiting for %d bytes of the decode budget of %d: %w (%v)", want, g.b.size, upstream.ErrBusy, err)
		}
	}
	g.held += want
	g.b.inUse.Add(want)
	return nil
}

// release gives every byte back.
func (g *grant) release() {
	if g.held > 0 {
		g.b.sem.Release(g.held)
		g.b.inUse.Add(-g.held)
		g.held = 0
	}
}
