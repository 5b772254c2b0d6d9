package main

import (
	"errors"
	"fmt"
	"io"

	"golang.org/x/crypto/bcrypt"

	"listingproxy/internal/secret"
)

// hashPassword prints the bcrypt hash of a password for config.yaml, read
// by internal/secret: typed twice without echo on a terminal, otherwise
// one line of stdin, for scripts: echo -n "$PW" | listingproxy hash-password.
func hashPassword(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := commandFlags("hash-password", "[-cost N] < PASSWORD", stderr)
	cost := fs.Int("cost", bcrypt.DefaultCost, "bcrypt cost")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageErrorf(fs, "unexpected argument %q (the password is read from standard input, never an argument)", fs.Arg(0))
	}
	pw, err := secret.Read(stdin, stderr)
	if err != nil {
		return fmt.Errorf("hash-password: %w", err)
	}
	if pw == "" {
		return errors.New("hash-password: empty password (type it at the prompt, or write it on standard input)")
	}
	h, err := bcrypt.GenerateFromPassword([]byte(pw), *cost)
	if err != nil {
		return fmt.Errorf("hash-password: %w", err)
	}
	_, err = fmt.Fprintln(stdout, string(h))
	return err
}
