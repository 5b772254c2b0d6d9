package telemetry

import (
	"io"
	"log/slog"
	"os"
)

// NewLogger returns the service's logger on w at level, which a reload
// may change: JSON lines with format "json", text with "text", and with
// "auto" text when w is a terminal, else JSON.
func NewLogger(format string, level slog.Leveler, w io.Writer) *slog.Logger {
	opts := &slog.HandlerOptions{Level: level}
	text := format == "text"
	if format == "auto" {
		if f, ok := w.(*os.File); ok {
			if fi, err := f.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
				text = true
			}
		}
	}
	if text {
		return slog.New(slog.NewTextHandler(w, opts))
	}
	return slog.New(slog.NewJSONHandler(w, opts))
}
