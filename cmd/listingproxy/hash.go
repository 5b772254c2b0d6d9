package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"golang.org/x/crypto/bcrypt"
	"golang.org/x/term"
)

// hashPassword prints the bcrypt hash of a password for config.yaml. On a
// terminal it prompts on stderr and reads twice without echo (the password
// never shows on screen nor in the scrollback); otherwise it reads one line
// from stdin, for scripts: echo -n "$PW" | listingproxy hash-password.
func hashPassword(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("hash-password", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cost := fs.Int("cost", bcrypt.DefaultCost, "bcrypt cost")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var pw string
	if f, ok := stdin.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		var err error
		if pw, err = readSecret(int(f.Fd()), stderr); err != nil {
			return err
		}
	} else {
		line, err := bufio.NewReader(stdin).ReadString('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("hash-password: read password: %w", err)
		}
		pw = strings.TrimRight(line, "\r\n")
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

// readSecret prompts on w and reads the password twice from the terminal
// fd with echo off.
func readSecret(fd int, w io.Writer) (string, error) {
	read := func(prompt string) (string, error) {
		fmt.Fprint(w, prompt)
		b, err := term.ReadPassword(fd)
		fmt.Fprintln(w)
		if err != nil {
			return "", fmt.Errorf("hash-password: read password: %w", err)
		}
		return string(b), nil
	}
	pw, err := read("Password: ")
	if err != nil || pw == "" {
		return pw, err
	}
	again, err := read("Repeat: ")
	if err != nil {
		return "", err
	}
	if again != pw {
		return "", errors.New("hash-password: the passwords differ")
	}
	return pw, nil
}
