package crm

import (
	"bytes"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"listingproxy/normalize"
)

// TestTolerated: flaws of one record or of the label never fail a list. A
// value that cannot be read leaves its record in the list without it, a
// well-formed answer labelled text/html is served, and a Latin-1 byte in a
// document that declares UTF-8 is read as the letter it is; each flaw is
// counted and logged.
func TestTolerated(t *testing.T) {
	const list = `<properties count="2">
  <property id="17" last_updated="Fri Nov 20 09:30:00 +1100 2026"><bedrooms>3+</bedrooms><suburb>Bondi</suburb></property>
  <property id="18" last_updated="Fri Nov 20 09:30:00 +1100 2026"><approved>2024-03-01 10:00:00</approved><suburb>Caf` + "\xe9" + ` Row</suburb></property>
</properties>`
	tests := []struct {
		name, contentType, body string
		want                    Stats
		wantLog                 []string
	}{
		{
			name: "bad values, text/html, Latin-1 in UTF-8", contentType: "text/html; charset=UTF-8",
			body:    `<?xml version="1.0" encoding="UTF-8"?>` + "\n" + list,
			want:    Stats{Calls: 1, BadValues: 1, Mislabelled: 1, Repaired: 1},
			wantLog: []string{`bedrooms \"3+\": not an integer`, `content_type="text/html; charset=UTF-8"`, "not UTF-8"},
		},
		{
			name: "declared Latin-1 is decoded, not repaired", contentType: "application/xml",
			body: `<?xml version="1.0" encoding="ISO-8859-1"?>` + "\n" + list,
			want: Stats{Calls: 1, BadValues: 1, Transcoded: 1},
		},
		{
			name: "no declaration", contentType: "",
			body: list,
			want: Stats{Calls: 1, BadValues: 1, Repaired: 1},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeCRM(t, func(w http.ResponseWriter, r *http.Request, user string) {
				if tc.contentType != "" {
					w.Header().Set("Content-Type", tc.contentType)
				} else {
					w.Header()["Content-Type"] = nil // no sniffing
				}
				w.Write([]byte(tc.body))
			})
			var logs bytes.Buffer
			c := newTestClient(t, f, Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
			props, err := c.listProperties(t.Context(), harbourAU, nil, normalize.Short, "k")
			if err != nil {
				t.Fatalf("list failed: %v", err)
			}
			if len(props) != 2 {
				t.Fatalf("got %d properties, want 2", len(props))
			}
			if props[0].Bedrooms != nil || props[0].Suburb != "Bondi" {
				t.Errorf("property 17: bedrooms %v, suburb %q; want missing, Bondi", props[0].Bedrooms, props[0].Suburb)
			}
			if got := props[1].Suburb; got != "Café Row" {
				t.Errorf("property 18 suburb %q, want %q", got, "Café Row")
			}
			if got := props[1].Approved.Format("2006-01-02"); got != "2024-03-01" {
				t.Errorf("property 18 approved %s, want 2024-03-01", got)
			}
			if got := c.Stats(); got != tc.want {
				t.Errorf("stats %+v, want %+v", got, tc.want)
			}
			for _, w := range tc.wantLog {
				if !strings.Contains(logs.String(), w) {
					t.Errorf("log lacks %q:\n%s", w, logs.String())
				}
			}
		})
	}
}
