package redistier

// HoldRetries keeps t from starting its background retries of pending
// purges, so that a test sees what Close alone records.
func HoldRetries(t *Tier) {
	t.retryMu.Lock()
	t.retryClosed = true
	t.retryMu.Unlock()
}
