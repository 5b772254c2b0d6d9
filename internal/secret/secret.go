// Package secret reads a password typed by an operator ("listingproxy
// hash-password"): on a terminal it prompts and reads it twice with echo
// off, so it never shows on screen nor in the scrollback; otherwise it
// reads one line, for scripts (echo -n "$PW" | listingproxy
// hash-password). Standard library and golang.org/x/term only.
package secret

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"golang.org/x/term"
)

// Read reads a password from in: prompted on prompt and typed twice when
// in is a terminal, else its first line (without the line end). An empty
// password is returned as such; the caller refuses it.
func Read(in io.Reader, prompt io.Writer) (string, error) {
	if f, ok := in.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		return readTerminal(int(f.Fd()), prompt)
	}
	line, err := bufio.NewReader(in).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return "", fmt.Errorf("read password: %w", err)
	}
	return strings.TrimRight(line, "\r\n"), nil
}

// readTerminal prompts on w and reads the password twice from the
// terminal fd with echo off.
func readTerminal(fd int, w io.Writer) (string, error) {
	read := func(prompt string) (string, error) {
		fmt.Fprint(w, prompt)
		b, err := term.ReadPassword(fd)
		fmt.Fprintln(w)
		if err != nil {
			return "", fmt.Errorf("read password: %w", err)
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
		return "", errors.New("the passwords differ")
	}
	return pw, nil
}
