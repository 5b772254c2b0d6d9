package redistier

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/redis/go-redis/v9"
)

// LogTo sends go-redis's own log lines (dial failures) to log, as debug
// lines: the tier's breaker and metrics already say Redis is away. go-redis
// has one logger, global to the library (no per-client knob), so the last
// call wins.
func LogTo(log *slog.Logger) { redis.SetLogger(redisLogger{log}) }

// redisLogger is go-redis's logging interface on a slog.Logger.
type redisLogger struct{ log *slog.Logger }

func (l redisLogger) Printf(ctx context.Context, format string, v ...any) {
	l.log.DebugContext(ctx, "redis: "+fmt.Sprintf(format, v...))
}
