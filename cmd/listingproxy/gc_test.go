package main

import (
	"context"
	"log/slog"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"
)

func TestGCPercent(t *testing.T) {
	const headroom = 64 << 20
	for _, tc := range []struct {
		live uint64
		want int
	}{
		{0, 6400},        // nothing measured yet: as for 1 MiB
		{1 << 20, 6400},  // 1 MiB live: goal 65 MiB
		{4 << 20, 1600},  // the demo's live heap: goal 68 MiB
		{10 << 20, 600},  // 640 rounded down to a multiple of 100
		{32 << 20, 200},  // goal 96 MiB
		{64 << 20, 100},  // Go's default from here on
		{300 << 20, 100}, // a full cache: never below the default
		{1 << 10, 6400},  // below 1 MiB counts as 1 MiB
	} {
		if got := gcPercent(tc.live, headroom); got != tc.want {
			t.Errorf("gcPercent(%d MiB) = %d, want %d", tc.live>>20, got, tc.want)
		}
	}
	if got := gcPercent(1<<20, 1<<40); got != 10000 {
		t.Errorf("gcPercent with a huge headroom = %d, want the 10000 cap", got)
	}
}

// TestTuneGCRespectsGOGC: with GOGC in the environment the tuner returns at
// once and leaves the percentage alone.
func TestTuneGCRespectsGOGC(t *testing.T) {
	before := debug.SetGCPercent(137)
	defer debug.SetGCPercent(before)
	done := make(chan struct{})
	go func() {
		tuneGC(context.Background(), 64<<20, time.Hour, func(k string) string {
			if k == "GOGC" {
				return "200"
			}
			return ""
		}, slog.New(slog.DiscardHandler))
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("tuneGC kept running although GOGC is set")
	}
	if got := gogc(); got != 137 {
		t.Errorf("GOGC changed to %d although the environment sets it", got)
	}
}

// TestTuneGCSetsAndRestores runs the tuner until cancelled: it raises the
// percentage for a small live heap and puts Go's default back when it stops.
func TestTuneGCSetsAndRestores(t *testing.T) {
	before := debug.SetGCPercent(100)
	defer debug.SetGCPercent(before)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		tuneGC(ctx, 1<<40, time.Hour, func(string) string { return "" }, slog.New(slog.DiscardHandler))
		close(done)
	}()
	eventually(t, "GOGC raised to the cap", func() bool { return gogc() == 10000 })
	cancel()
	<-done
	if got := gogc(); got != 100 {
		t.Errorf("GOGC after the tuner stopped = %d, want 100", got)
	}
}

// gogc reads the current GOGC percentage.
func gogc() int {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	return int(s[0].Value.Uint64())
}
