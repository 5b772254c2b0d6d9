package disktier

import "time"

// SetBusyTimeout sets how long statements wait for a lock, for the tests
// of a purge that cannot be recorded; it returns the previous value.
func SetBusyTimeout(d time.Duration) time.Duration {
	old := busyTimeout
	busyTimeout = d
	return old
}
