package upstream

import (
	"context"

	"listingproxy/normalize"
)

// Op names a Backend method.
type Op uint8

// The Backend methods.
const (
	OpListProperties Op = iota
	OpGetProperty
	OpListAgents
	OpGetAgent
)

// Ops lists every Op, in declaration order (for metrics exported at zero).
var Ops = [...]Op{OpListProperties, OpGetProperty, OpListAgents, OpGetAgent}

// String returns the method's name: "ListProperties", "GetProperty",
// "ListAgents" or "GetAgent".
func (o Op) String() string {
	switch o {
	case OpListProperties:
		return "ListProperties"
	case OpGetProperty:
		return "GetProperty"
	case OpListAgents:
		return "ListAgents"
	case OpGetAgent:
		return "GetAgent"
	}
	return "unknown"
}

// Call describes one Backend call to a decorator: which method, for whose
// scope. It never carries the criteria or the id: decorators decide on the
// operation and the tenant, not on what is asked.
type Call struct {
	Op    Op
	Scope Scope
}

// Around is a decorator's body: it runs next (the decorated call, which
// fills the caller's results) zero or one time, with the context it
// chooses, and returns next's error or its own. An Around that returns
// without calling next must return an error.
type Around func(ctx context.Context, call Call, next func(context.Context) error) error

// Wrap returns b with around run around each of its calls: one function
// decorates the four methods, so a cross-cutting concern (a breaker,
// telemetry, a limit, a second tier) is written once, whatever the
// operation. Decorators compose by wrapping in turn; the last Wrap is the
// outermost.
func Wrap(b Backend, around Around) Backend {
	return &wrapped{next: b, around: around}
}

type wrapped struct {
	next   Backend
	around Around
}

func (w *wrapped) ListProperties(ctx context.Context, s Scope, c normalize.Criteria) (ps []Property, err error) {
	err = w.around(ctx, Call{Op: OpListProperties, Scope: s}, func(ctx context.Context) (err error) {
		ps, err = w.next.ListProperties(ctx, s, c)
		return err
	})
	return ps, err
}

func (w *wrapped) GetProperty(ctx context.Context, s Scope, id int64) (p Property, err error) {
	err = w.around(ctx, Call{Op: OpGetProperty, Scope: s}, func(ctx context.Context) (err error) {
		p, err = w.next.GetProperty(ctx, s, id)
		return err
	})
	return p, err
}

func (w *wrapped) ListAgents(ctx context.Context, s Scope, c normalize.Criteria) (as []Agent, err error) {
	err = w.around(ctx, Call{Op: OpListAgents, Scope: s}, func(ctx context.Context) (err error) {
		as, err = w.next.ListAgents(ctx, s, c)
		return err
	})
	return as, err
}

func (w *wrapped) GetAgent(ctx context.Context, s Scope, id int64) (a Agent, err error) {
	err = w.around(ctx, Call{Op: OpGetAgent, Scope: s}, func(ctx context.Context) (err error) {
		a, err = w.next.GetAgent(ctx, s, id)
		return err
	})
	return a, err
}
