package upstream_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"listingproxy/normalize"
	"listingproxy/upstream"
)

func TestIsAnswer(t *testing.T) {
	criteria := &upstream.CriteriaError{Errors: normalize.Errors{{Field: "limit", Message: "too big"}}}
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"not found", upstream.ErrNotFound, true},
		{"wrapped not found", fmt.Errorf("crm: get property 7: %w", upstream.ErrNotFound), true},
		{"criteria rejected", criteria, true},
		{"wrapped criteria rejected", fmt.Errorf("crm: list: %w", criteria), true},
		{"canceled", context.Canceled, false},
		{"wrapped canceled", fmt.Errorf("query: %w", context.Canceled), false},
		{"deadline", context.DeadlineExceeded, false},
		{"other", errors.New("connection refused"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := upstream.IsAnswer(tt.err); got != tt.want {
				t.Errorf("IsAnswer(%v) = %v, want %v", tt.err, got, tt.want)
			}
		})
	}
}
