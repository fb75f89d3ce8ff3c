package cluster

import (
	"time"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
)

// Circuit breaker (ADR-0013, docs/adr/0013-circuit-breaker.md): after breakerThreshold consecutive failed reconciles it opens and
// reconciles back off 10s·2ⁿ up to 5 minutes; a success closes it. Its state lives in status so
// that an operator restart does not reset it. Paused reconciles are not counted, and resume resets
// it (see docs/pause.md).
const breakerThreshold = 5

// Backoff spaces the retries of failed reconciles.
type Backoff struct {
	// Retry spaces the retries before the breaker opens: 1s, 2s, 4s, 8s by default.
	Retry time.Duration
	// Breaker is the first wait once the breaker is open (10s), doubled on each failure up to Max (5m).
	Breaker, Max time.Duration
}

// DefaultBackoff is ADR-0013's schedule.
var DefaultBackoff = Backoff{Retry: time.Second, Breaker: 10 * time.Second, Max: 5 * time.Minute}

// delay is how long to wait after the nth consecutive failure.
func (b Backoff) delay(failures int32) time.Duration {
	if failures < breakerThreshold {
		return b.Retry << max(failures-1, 0)
	}
	d := b.Breaker
	for range failures - breakerThreshold {
		if d >= b.Max {
			break
		}
		d *= 2
	}
	return min(d, b.Max)
}

// wait is how long an open breaker still holds reconciles back (0: try now).
func (b Backoff) wait(s *ackov1alpha1.AerospikeClusterStatus, now time.Time) time.Duration {
	if !breakerOpen(s) || s.CircuitBreaker.LastFailureTime == nil {
		return 0
	}
	next := s.CircuitBreaker.LastFailureTime.Add(b.delay(s.CircuitBreaker.ConsecutiveFailures))
	return max(next.Sub(now), 0)
}
