package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"golang.org/x/crypto/bcrypt"
)

// hashPassword reads a password (one line) from stdin and prints its bcrypt
// hash for config.yaml.
func hashPassword(args []string, stdin io.Reader, stdout io.Writer) error {
	fs := flag.NewFlagSet("hash-password", flag.ContinueOnError)
	cost := fs.Int("cost", bcrypt.DefaultCost, "bcrypt cost")
	if err := fs.Parse(args); err != nil {
		return err
	}
	line, err := bufio.NewReader(stdin).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("hash-password: read password: %w", err)
	}
	pw := strings.TrimRight(line, "\r\n")
	if pw == "" {
		return errors.New("hash-password: empty password (write it on standard input)")
	}
	h, err := bcrypt.GenerateFromPassword([]byte(pw), *cost)
	if err != nil {
		return fmt.Errorf("hash-password: %w", err)
	}
	_, err = fmt.Fprintln(stdout, string(h))
	return err
}
