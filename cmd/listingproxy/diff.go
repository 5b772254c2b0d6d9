package main

import (
	"context"
	"errors"
	"io"
)

// diffCommand compares an old and a new endpoint path by path. Placeholder
// until the diff tool lands.
func diffCommand(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	return errors.New("diff: not implemented yet")
}
