package cache

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync/atomic"
	"time"

	"github.com/sony/gobreaker/v2"
)

// ErrOpen is wrapped by every error a Breaker returns without calling the
// backend: it is open, or half-open with all its probes in flight. The proxy
// answers it (when nothing stale can be served) with 503 and Retry-After.
var ErrOpen = errors.New("circuit breaker open")

// State is a breaker's state.
type State uint8

// Breaker states.
const (
	StateClosed State = iota
	StateHalfOpen
	StateOpen
)

// String returns "closed", "half-open" or "open".
func (s State) String() string {
	switch s {
	case StateClosed:
		return "closed"
	case StateHalfOpen:
		return "half-open"
	case StateOpen:
		return "open"
	}
	return "unknown"
}

func fromGobreaker(s gobreaker.State) State {
	switch s {
	case gobreaker.StateHalfOpen:
		return StateHalfOpen
	case gobreaker.StateOpen:
		return StateOpen
	}
	return StateClosed
}

// Breaker defaults, used for the zero fields of BreakerOptions.
const (
	DefaultConsecutiveFailures = 5
	DefaultMinRequests         = 10
	DefaultWindow              = 10 * time.Second
	DefaultOpenFor             = 15 * time.Second
	DefaultHalfOpenProbes      = 3
)

// BreakerOptions configures a Breaker. The zero value is usable.
type BreakerOptions struct {
	// Name identifies the breaker (the backend) in errors and callbacks.
	Name string
	// ConsecutiveFailures trips the breaker after that many failures in a
	// row. Default DefaultConsecutiveFailures (5) when FailureRatio is
	// also zero; zero otherwise (ratio only).
	ConsecutiveFailures uint32
	// FailureRatio, when positive, trips the breaker once failures make up
	// at least this share of the counted calls in the window, provided
	// there were at least MinRequests of them.
	FailureRatio float64
	// MinRequests is the fewest counted calls in the window before
	// FailureRatio applies. Default DefaultMinRequests (10).
	MinRequests uint32
	// Window is the rolling window over which closed-state counts are
	// kept, in ten buckets. Default DefaultWindow (10s).
	Window time.Duration
	// OpenFor is how long the breaker stays open before it lets probes
	// through (half-open). Default DefaultOpenFor (15s).
	OpenFor time.Duration
	// HalfOpenProbes is how many calls a half-open breaker lets through;
	// that many successes in a row close it, one failure opens it again.
	// Default DefaultHalfOpenProbes (3).
	HalfOpenProbes uint32
	// IsAnswer reports errors that are answers from a healthy backend (not
	// found, criteria rejected). They count as successes. Default: none.
	IsAnswer func(error) bool
	// OnStateChange is called on every state change, with the breaker's
	// lock held: it must not call the Breaker's methods.
	OnStateChange func(name string, from, to State)
}

// Breaker is a circuit breaker for one backend, safe for concurrent use.
//
// Errors are classified as: success (nil or an answer per IsAnswer); not
// counted (context.Canceled, or any error once the caller's context was
// cancelled: a client that went away says nothing about the backend);
// failure (everything else, including deadlines and panics).
type Breaker struct {
	cb       *gobreaker.CircuitBreaker[struct{}]
	name     string
	openFor  time.Duration
	isAnswer func(error) bool
	openedAt atomic.Int64 // unix nanos of the latest transition to open
}

// NewBreaker returns a closed Breaker configured by o.
func NewBreaker(o BreakerOptions) *Breaker {
	if o.ConsecutiveFailures == 0 && o.FailureRatio <= 0 {
		o.ConsecutiveFailures = DefaultConsecutiveFailures
	}
	if o.MinRequests == 0 {
		o.MinRequests = DefaultMinRequests
	}
	if o.Window <= 0 {
		o.Window = DefaultWindow
	}
	if o.OpenFor <= 0 {
		o.OpenFor = DefaultOpenFor
	}
	if o.HalfOpenProbes == 0 {
		o.HalfOpenProbes = DefaultHalfOpenProbes
	}
	b := &Breaker{name: o.Name, openFor: o.OpenFor, isAnswer: o.IsAnswer}
	consecutive, ratio, minReq := o.ConsecutiveFailures, o.FailureRatio, o.MinRequests
	onChange := o.OnStateChange
	b.cb = gobreaker.NewCircuitBreaker[struct{}](gobreaker.Settings{
		Name:         o.Name,
		MaxRequests:  o.HalfOpenProbes,
		Interval:     o.Window,
		BucketPeriod: max(o.Window/10, time.Millisecond),
		Timeout:      o.OpenFor,
		ReadyToTrip: func(c gobreaker.Counts) bool {
			if consecutive > 0 && c.ConsecutiveFailures >= consecutive {
				return true
			}
			counted := c.TotalSuccesses + c.TotalFailures
			return ratio > 0 && counted >= minReq && float64(c.TotalFailures) >= ratio*float64(counted)
		},
		IsSuccessful: func(err error) bool {
			var a answerError
			return err == nil || errors.As(err, &a)
		},
		IsExcluded: func(err error) bool {
			var x excludedError
			return errors.As(err, &x)
		},
		OnStateChange: func(name string, from, to gobreaker.State) {
			if to == gobreaker.StateOpen {
				b.openedAt.Store(time.Now().UnixNano())
			}
			if onChange != nil {
				onChange(name, fromGobreaker(from), fromGobreaker(to))
			}
		},
	})
	return b
}

// answerError and excludedError carry fn's error through gobreaker with its
// classification; Do unwraps them.
type answerError struct{ err error }

func (e answerError) Error() string { return e.err.Error() }

type excludedError struct{ err error }

func (e excludedError) Error() string { return e.err.Error() }

// Do calls fn through the breaker. When the breaker is open it returns at
// once an error wrapping ErrOpen; otherwise it returns fn's error unchanged.
// A panic in fn counts as a failure and is returned as a *PanicError.
func (b *Breaker) Do(ctx context.Context, fn func(context.Context) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	_, err := b.cb.Execute(func() (struct{}, error) {
		return struct{}{}, b.classify(ctx, b.call(ctx, fn))
	})
	switch e := err.(type) {
	case nil:
		return nil
	case answerError:
		return e.err
	case excludedError:
		return e.err
	}
	if errors.Is(err, gobreaker.ErrOpenState) || errors.Is(err, gobreaker.ErrTooManyRequests) {
		return fmt.Errorf("breaker %s: %w", b.name, ErrOpen)
	}
	return err
}

func (b *Breaker) call(ctx context.Context, fn func(context.Context) error) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &PanicError{Value: v, Stack: debug.Stack()}
		}
	}()
	return fn(ctx)
}

func (b *Breaker) classify(ctx context.Context, err error) error {
	switch {
	case err == nil:
		return nil
	case b.isAnswer != nil && b.isAnswer(err):
		return answerError{err}
	case errors.Is(err, context.Canceled) || errors.Is(ctx.Err(), context.Canceled):
		return excludedError{err}
	}
	return err
}

// Wrap returns a Loader that calls load through the breaker.
func (b *Breaker) Wrap(load Loader) Loader {
	return func(ctx context.Context) (*Entry, error) {
		var e *Entry
		err := b.Do(ctx, func(ctx context.Context) error {
			var err error
			e, err = load(ctx)
			return err
		})
		if err != nil {
			return nil, err
		}
		return e, nil
	}
}

// State returns the breaker's current state.
func (b *Breaker) State() State {
	return fromGobreaker(b.cb.State())
}

// Name returns the breaker's name.
func (b *Breaker) Name() string { return b.name }

// RetryAfter is how long until an open breaker lets a probe through, for a
// Retry-After header: at least one second while open, zero otherwise.
func (b *Breaker) RetryAfter() time.Duration {
	if b.State() != StateOpen {
		return 0
	}
	left := b.openFor - time.Since(time.Unix(0, b.openedAt.Load()))
	return max(left.Round(time.Second), time.Second)
}
