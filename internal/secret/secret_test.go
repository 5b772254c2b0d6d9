package secret_test

import (
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"listingproxy/internal/secret"
)

// TestReadLine: away from a terminal the password is the first line, its
// line end dropped, and nothing is prompted.
func TestReadLine(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"s3cret\n", "s3cret"},
		{"s3cret\r\nsecond line\n", "s3cret"},
		{"no line end", "no line end"},
		{"", ""},
	} {
		var prompt strings.Builder
		got, err := secret.Read(strings.NewReader(tc.in), &prompt)
		if err != nil || got != tc.want || prompt.Len() != 0 {
			t.Errorf("Read(%q) = %q, %v, prompted %q; want %q, nothing prompted", tc.in, got, err, prompt.String(), tc.want)
		}
	}
	boom := errors.New("boom")
	if _, err := secret.Read(iotest.ErrReader(boom), io.Discard); !errors.Is(err, boom) || !strings.HasPrefix(err.Error(), "read password: ") {
		t.Errorf("Read of a failing reader: err = %v, want read password: boom", err)
	}
}
