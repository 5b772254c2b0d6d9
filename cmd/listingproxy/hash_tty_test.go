//go:build linux

package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/crypto/bcrypt"
	"golang.org/x/sys/unix"
)

// openPTY returns the two ends of a new pseudo-terminal.
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		t.Skip("no /dev/ptmx on this machine: cannot test reading from a terminal")
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { master.Close() })
	if err := unix.IoctlSetPointerInt(int(master.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(master.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	slave, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { slave.Close() })
	return master, slave
}

// TestHashPasswordOnATerminal types the password on a real pseudo-terminal:
// it is read twice and never echoed.
func TestHashPasswordOnATerminal(t *testing.T) {
	tests := []struct {
		name, typed string
		wantErr     string
	}{
		{"same twice", "s3cret\ns3cret\n", ""},
		{"differ", "s3cret\nsecret\n", "hash-password: the passwords differ"},
		{"empty", "\n", "hash-password: empty password"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			master, slave := openPTY(t)
			var out, prompts bytes.Buffer
			done := make(chan error, 1)
			go func() { done <- hashPassword([]string{"-cost", "4"}, slave, &out, &prompts) }()

			// Type only once echo is off, as a person would after the
			// prompt; the terminal echoes (or not) as characters arrive.
			for {
				tio, err := unix.IoctlGetTermios(int(slave.Fd()), unix.TCGETS)
				if err != nil {
					t.Fatal(err)
				}
				if tio.Lflag&unix.ECHO == 0 {
					break
				}
				select {
				case err := <-done:
					t.Fatalf("hashPassword returned %v before reading", err)
				default:
					runtime.Gosched()
				}
			}
			if _, err := io.WriteString(master, tt.typed); err != nil {
				t.Fatal(err)
			}
			err := <-done

			// Whatever the terminal echoed is on the master before this
			// marker.
			if _, err := io.WriteString(slave, "END\n"); err != nil {
				t.Fatal(err)
			}
			var screen strings.Builder
			buf := make([]byte, 256)
			for !strings.Contains(screen.String(), "END") {
				n, err := master.Read(buf)
				if err != nil {
					t.Fatal(err)
				}
				screen.Write(buf[:n])
			}
			if strings.Contains(screen.String(), "s3cret") {
				t.Errorf("the terminal showed the password: %q", screen.String())
			}

			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got, want := prompts.String(), "Password: \nRepeat: \n"; got != want {
				t.Errorf("prompts %q, want %q", got, want)
			}
			if err := bcrypt.CompareHashAndPassword(bytes.TrimSpace(out.Bytes()), []byte("s3cret")); err != nil {
				t.Errorf("output %q is not a hash of the typed password: %v", out.String(), err)
			}
		})
	}
}
