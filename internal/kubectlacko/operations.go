package kubectlacko

import (
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
	"github.com/acko-io/acko/internal/validation"
)

// idAlphabet is what the random part of a generated id is drawn from.
const idAlphabet = "0123456789abcdefghijklmnopqrstuvwxyz"

// idTimeLayout is the time part of a generated id, in UTC.
const idTimeLayout = "060102-150405"

// newOperationID returns an operation id made of the UTC time to the second, a dash and random
// characters up to the 20 the API allows, e.g. "261125-104512-x7k2pq". Ids of different seconds
// never collide, two of one second do with odds of 1 in 36^6 (2·10⁹), and restart also checks the
// id against those the cluster has seen. The time first makes ids sort by when they were made.
func newOperationID(now time.Time, random io.Reader) (string, error) {
	var b strings.Builder
	b.WriteString(now.UTC().Format(idTimeLayout))
	b.WriteByte('-')
	buf := make([]byte, 1)
	for b.Len() < ackov1alpha1.MaxOperationIDLength {
		if _, err := io.ReadFull(random, buf); err != nil {
			return "", fmt.Errorf("generating an operation id: %w", err)
		}
		// Bytes past the last whole multiple of the alphabet are dropped so that every character
		// is equally likely.
		if int(buf[0]) < 256-256%len(idAlphabet) {
			b.WriteByte(idAlphabet[int(buf[0])%len(idAlphabet)])
		}
	}
	return b.String(), nil
}

// generateOperationID is newOperationID with the clock and crypto/rand.
func generateOperationID(now time.Time) (string, error) { return newOperationID(now, rand.Reader) }

// idUsed reports whether the cluster has seen id: in its spec, as its current or last operation,
// or among the operations that ended. A used id never runs again.
func idUsed(c *ackov1alpha1.AerospikeCluster, id string) bool {
	if st := c.Status.OperationStatus; st != nil && st.ID == id {
		return true
	}
	return validation.OperationFinished(c, id) ||
		slices.ContainsFunc(c.Spec.Operations, func(op ackov1alpha1.OperationSpec) bool { return op.ID == id })
}

// inProgress returns the operation the operator is running, if any.
func inProgress(c *ackov1alpha1.AerospikeCluster) *ackov1alpha1.OperationStatus {
	if st := c.Status.OperationStatus; st != nil && st.Phase == ackov1alpha1.OperationInProgress {
		return st
	}
	return nil
}

// pendingOperation returns an operation of the spec that has not started yet (the cluster is paused
// or not Running): neither ended nor the one in progress.
func pendingOperation(c *ackov1alpha1.AerospikeCluster) *ackov1alpha1.OperationSpec {
	for i := range c.Spec.Operations {
		op := &c.Spec.Operations[i]
		if validation.OperationFinished(c, op.ID) {
			continue
		}
		if st := c.Status.OperationStatus; st != nil && st.ID == op.ID {
			continue
		}
		return op
	}
	return nil
}

// operationsWith is the spec.operations to write for a new operation: it replaces the operations
// that ran (and the one in progress, which the server refuses), and keeps one that has not started,
// so that a waiting operation is never dropped silently: the server then refuses the two.
func operationsWith(c *ackov1alpha1.AerospikeCluster, op ackov1alpha1.OperationSpec) []ackov1alpha1.OperationSpec {
	if pending := pendingOperation(c); pending != nil {
		return []ackov1alpha1.OperationSpec{*pending, op}
	}
	return []ackov1alpha1.OperationSpec{op}
}

// operationPatch is the merge patch that writes spec.operations only if the object is still at the
// resourceVersion it was decided on: a resourceVersion in a patch is a precondition, and the server
// answers 409 Conflict when the object changed since. (A JSON patch `test` of the resourceVersion
// would do the same, but the server turns its failure into a generic 422 that cannot be told apart
// from other refusals.)
func operationPatch(resourceVersion string, ops []ackov1alpha1.OperationSpec) ([]byte, error) {
	return json.Marshal(map[string]any{
		"metadata": map[string]any{"resourceVersion": resourceVersion},
		"spec":     map[string]any{"operations": ops},
	})
}

// describeInProgress says what the running operation is doing.
func describeInProgress(st *ackov1alpha1.OperationStatus) string {
	s := fmt.Sprintf("operation %s (%s) is InProgress: %d/%d pods done, %d failed", st.ID, st.Kind,
		len(st.CompletedPods), len(st.TargetPods), len(st.FailedPods))
	if st.CurrentPod != "" {
		s += ", restarting " + st.CurrentPod
	}
	return s
}

// refusal adds to the server's refusal of an operation (printed as the server wrote it) what
// stands in the way.
func refusal(err error, c *ackov1alpha1.AerospikeCluster, id string) error {
	var hint string
	if st := inProgress(c); st != nil {
		hint = fmt.Sprintf("\n%s; wait until it ends (kubectl acko status %s -n %s)", describeInProgress(st),
			c.Name, c.Namespace)
	} else if pending := pendingOperation(c); pending != nil {
		hint = fmt.Sprintf("\nspec.operations already holds operation %s (%s), which has not started yet; "+
			"it starts when the cluster is Running and not paused", pending.ID, pending.Kind)
	}
	return fmt.Errorf("the server refused operation %s: %w%s", id, err, hint)
}
