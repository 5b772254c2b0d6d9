package memlimit

import (
	"log/slog"
	"math"
	"runtime/debug"
	"testing"
)

func TestLimit(t *testing.T) {
	const MiB = 1 << 20
	for _, tc := range []struct {
		maxBytes, want int64
	}{
		{16 * MiB, 56 * MiB},   // RSS target 1.5 × 16 + 64 = 88 MiB
		{64 * MiB, 128 * MiB},  // target 160 MiB
		{256 * MiB, 416 * MiB}, // the default cache: target 448 MiB
		{1 * MiB, 33*MiB + MiB/2},
		{math.MaxInt64 / 4 * 3, math.MaxInt64}, // saturates
	} {
		if got := Limit(tc.maxBytes); got != tc.want {
			t.Errorf("Limit(%d) = %d, want %d", tc.maxBytes, got, tc.want)
		}
	}
}

// TestApply: the limit is set unless GOMEMLIMIT is, GOGC is never
// touched (whatever the runtime runs with stays: here 137), and restore
// puts back what was there.
func TestApply(t *testing.T) {
	const maxBytes = 64 << 20
	const operatorLimit = 1 << 30
	tests := []struct {
		name          string
		env           map[string]string
		runtimeLimit  int64 // the limit the runtime runs with before (from GOMEMLIMIT)
		wantLimit     int64
		wantGCPercent int
	}{
		{name: "nothing set", runtimeLimit: math.MaxInt64, wantLimit: Limit(maxBytes), wantGCPercent: 137},
		{name: "GOGC set", env: map[string]string{"GOGC": "200"}, runtimeLimit: math.MaxInt64, wantLimit: Limit(maxBytes), wantGCPercent: 137},
		{name: "GOMEMLIMIT set", env: map[string]string{"GOMEMLIMIT": "1GiB"}, runtimeLimit: operatorLimit, wantLimit: operatorLimit, wantGCPercent: 137},
		{name: "GOMEMLIMIT=off keeps GOGC", env: map[string]string{"GOMEMLIMIT": "off"}, runtimeLimit: math.MaxInt64, wantLimit: math.MaxInt64, wantGCPercent: 137},
		{name: "both set", env: map[string]string{"GOMEMLIMIT": "1GiB", "GOGC": "50"}, runtimeLimit: operatorLimit, wantLimit: operatorLimit, wantGCPercent: 137},
	}
	beforeLimit, beforePercent := debug.SetMemoryLimit(-1), debug.SetGCPercent(100)
	defer func() { debug.SetMemoryLimit(beforeLimit); debug.SetGCPercent(beforePercent) }()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			debug.SetMemoryLimit(tc.runtimeLimit)
			debug.SetGCPercent(137)
			restore := Apply(maxBytes, func(k string) string { return tc.env[k] }, slog.New(slog.DiscardHandler))
			if got := debug.SetMemoryLimit(-1); got != tc.wantLimit {
				t.Errorf("memory limit = %d, want %d", got, tc.wantLimit)
			}
			if got := gcPercent(); got != tc.wantGCPercent {
				t.Errorf("GOGC = %d, want %d", got, tc.wantGCPercent)
			}
			restore()
			if got := debug.SetMemoryLimit(-1); got != tc.runtimeLimit {
				t.Errorf("memory limit after restore = %d, want %d", got, tc.runtimeLimit)
			}
			if got := gcPercent(); got != 137 {
				t.Errorf("GOGC after restore = %d, want 137", got)
			}
		})
	}
}

// gcPercent reads the current GOGC percentage (-1: off).
func gcPercent() int {
	p := debug.SetGCPercent(100)
	debug.SetGCPercent(p)
	return p
}
