package proxy

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
)

// ReadWarmTargets reads warm targets, one a line, in any of three forms
// (blank lines and lines starting with "#" are ignored):
//
//   - a warm file's line (WriteWarmTargets): {"user":…,"target":…,"hits":…};
//   - an access-log line of listingproxy's JSON log: {"msg":"request",
//     "method":"GET","path":…,"status":200,"user":…,…}; lines of other
//     messages, methods other than GET and HEAD, statuses other than 200
//     and 304, or without a user are skipped;
//   - a plain line "USER PATH?QUERY".
//
// Targets that repeat (same user and target) are merged, their hits
// added (a line without hits counts 1). Any other line is an error naming
// its number.
func ReadWarmTargets(r io.Reader) ([]WarmTarget, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	seen := map[[2]string]int{}
	var out []WarmTarget
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 || line[0] == '#' {
			continue
		}
		t, ok, err := parseWarmLine(line)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		if !ok {
			continue
		}
		t.Hits = max(t.Hits, 1)
		if i, dup := seen[[2]string{t.User, t.Target}]; dup {
			out[i].Hits += t.Hits
			continue
		}
		seen[[2]string{t.User, t.Target}] = len(out)
		out = append(out, t)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

func parseWarmLine(line []byte) (WarmTarget, bool, error) {
	if line[0] != '{' {
		user, target, ok := strings.Cut(string(line), " ")
		target = strings.TrimSpace(target)
		if !ok || user == "" || !strings.HasPrefix(target, "/") || strings.ContainsAny(target, " \t") {
			return WarmTarget{}, false, fmt.Errorf("want USER PATH?QUERY (a path starting with /), or a JSON line")
		}
		return WarmTarget{User: user, Target: target}, true, nil
	}
	var l struct {
		User   string `json:"user"`
		Target string `json:"target"`
		Hits   uint32 `json:"hits"`
		Msg    string `json:"msg"`
		Method string `json:"method"`
		Path   string `json:"path"`
		Status int    `json:"status"`
	}
	if err := json.Unmarshal(line, &l); err != nil {
		return WarmTarget{}, false, fmt.Errorf("not a JSON object: %w", err)
	}
	switch {
	case l.Target != "":
		if l.User == "" || !strings.HasPrefix(l.Target, "/") {
			return WarmTarget{}, false, fmt.Errorf("a warm target needs a user and a target starting with /")
		}
		return WarmTarget{User: l.User, Target: l.Target, Hits: l.Hits}, true, nil
	case l.Path != "":
		if l.Msg != "request" || l.User == "" || (l.Method != "GET" && l.Method != "HEAD") || (l.Status != 200 && l.Status != 304) || !strings.HasPrefix(l.Path, "/") {
			return WarmTarget{}, false, nil // not a served API request
		}
		return WarmTarget{User: l.User, Target: l.Path}, true, nil
	}
	return WarmTarget{}, false, nil // another log line
}

// WriteWarmTargets writes at most n targets, the most hits first, one JSON
// object a line (what ReadWarmTargets reads back).
func WriteWarmTargets(w io.Writer, targets []WarmTarget, n int) error {
	ts := slices.Clone(targets)
	slices.SortStableFunc(ts, func(a, b WarmTarget) int { return cmp.Compare(b.Hits, a.Hits) })
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	for _, t := range ts[:min(n, len(ts))] {
		if err := enc.Encode(t); err != nil {
			return err
		}
	}
	return bw.Flush()
}
