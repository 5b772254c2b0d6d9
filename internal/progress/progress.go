// Package progress reports the progress of "listingproxy seed"'s load on
// standard error: a bar redrawn in place on a terminal (rate and time
// left), otherwise a plain line at each tenth, for a log. Standard library
// only.
package progress

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// Bar reports the progress of a seeding: a bar redrawn at most every
// 100 ms when its writer is a terminal, otherwise one line per 10%.
type Bar struct {
	w     io.Writer
	tty   bool
	now   func() time.Time
	start time.Time
	last  time.Time
	tenth int // last tenth reported (plain lines)
	drawn bool
}

// New reports to w (a bar when w is a terminal), timing with now.
func New(w io.Writer, now func() time.Time) *Bar {
	p := &Bar{w: w, now: now, start: now(), tenth: -1}
	if f, ok := w.(*os.File); ok {
		if fi, err := f.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
			p.tty = true
		}
	}
	return p
}

// Report reports done of total properties loaded; sqlstore.SeedOptions
// calls it as the load goes.
func (p *Bar) Report(done, total int) {
	t := p.now()
	elapsed := t.Sub(p.start)
	rate := 0.0
	if elapsed > 0 {
		rate = float64(done) / elapsed.Seconds()
	}
	pct := 100
	if total > 0 {
		pct = done * 100 / total
	}
	eta := "-"
	if rate > 0 && done < total {
		eta = (time.Duration(float64(total-done)/rate) * time.Second).Round(time.Second).String()
	}
	if !p.tty {
		if tenth := pct / 10; tenth > p.tenth {
			p.tenth = tenth
			fmt.Fprintf(p.w, "seed: %3d%% %d/%d properties, %.0f/s, elapsed %s, eta %s\n",
				pct, done, total, rate, elapsed.Round(time.Second), eta)
		}
		return
	}
	if done < total && t.Sub(p.last) < 100*time.Millisecond {
		return
	}
	p.last = t
	const width = 30
	fill := width * pct / 100
	fmt.Fprintf(p.w, "\r[%s%s] %3d%% %d/%d properties  %.0f/s  eta %s   ",
		strings.Repeat("#", fill), strings.Repeat(".", width-fill), pct, done, total, rate, eta)
	p.drawn = true
}

// Finish ends a drawn bar's line; the plain lines need nothing.
func (p *Bar) Finish() {
	if p.tty && p.drawn {
		fmt.Fprintln(p.w)
	}
}
