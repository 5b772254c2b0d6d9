package main

import (
	"context"
	"errors"
	"io"
)

// seedCommand loads the demo dataset into a configured SQL backend.
// Placeholder until the seed tool lands.
func seedCommand(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	return errors.New("seed: not implemented yet")
}
