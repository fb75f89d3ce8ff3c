package controller

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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

// breakerOpen reports whether the breaker is open.
func breakerOpen(s *ackov1alpha1.AerospikeClusterStatus) bool {
	return s.CircuitBreaker != nil && s.CircuitBreaker.ConsecutiveFailures >= breakerThreshold
}

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

// recordFailure counts a failure; it reports whether this failure opened the breaker.
func (b Backoff) recordFailure(s *ackov1alpha1.AerospikeClusterStatus, generation int64, err error, now time.Time) (opened bool) {
	wasOpen := breakerOpen(s)
	if s.CircuitBreaker == nil {
		s.CircuitBreaker = &ackov1alpha1.CircuitBreakerStatus{}
	}
	t := metav1.NewTime(now)
	s.CircuitBreaker.ConsecutiveFailures++
	s.CircuitBreaker.LastError = err.Error()
	s.CircuitBreaker.LastFailureTime = &t
	setReconcileFailed(s, generation, true, ackov1alpha1.ReasonReconcileError, err.Error())
	if breakerOpen(s) {
		msg := fmt.Sprintf("%d consecutive reconcile failures; next try in %s: %v",
			s.CircuitBreaker.ConsecutiveFailures, b.delay(s.CircuitBreaker.ConsecutiveFailures), err)
		s.Phase = ackov1alpha1.PhaseError
		setCircuitBreakerOpen(s, generation, true, msg)
		setStalled(s, generation, ackov1alpha1.ReasonTooManyFailures, msg)
		setReconciling(s, generation, false, ackov1alpha1.ReasonTooManyFailures, "Backing off: see Stalled")
	}
	return !wasOpen && breakerOpen(s)
}

// resetBreaker closes the breaker and forgets the failures.
func resetBreaker(s *ackov1alpha1.AerospikeClusterStatus) {
	s.CircuitBreaker = nil
	setCircuitBreakerOpen(s, 0, false, "")
}
