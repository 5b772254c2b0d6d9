package warmup

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"listingproxy/proxy"
)

// ReadFile reads a warm file (proxy.ReadWarmTargets); a missing one, or
// path "", is empty.
func ReadFile(path string) ([]proxy.WarmTarget, error) {
	if path == "" {
		return nil, nil
	}
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	ts, err := proxy.ReadWarmTargets(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return ts, nil
}

// WriteFile replaces path with the n hottest of targets, through a
// temporary file renamed over it, so a crash leaves the old file or the
// new one.
func WriteFile(path string, targets []proxy.WarmTarget, n int) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after the rename: nothing
	if err := proxy.WriteWarmTargets(tmp, targets, n); err != nil {
		_ = tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// Merge adds b's targets to a's, adding the hits of a repeated user and
// target; a's order comes first, then b's new targets.
func Merge(a, b []proxy.WarmTarget) []proxy.WarmTarget {
	out := append([]proxy.WarmTarget(nil), a...)
	at := map[[2]string]int{}
	for i, t := range out {
		at[[2]string{t.User, t.Target}] = i
	}
	for _, t := range b {
		if i, ok := at[[2]string{t.User, t.Target}]; ok {
			out[i].Hits += t.Hits
			continue
		}
		at[[2]string{t.User, t.Target}] = len(out)
		out = append(out, t)
	}
	return out
}
