package kubectlacko

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
)

// restartRequest is what `kubectl acko restart` was asked.
type restartRequest struct {
	cold    bool
	warm    bool
	pods    []string
	id      string
	wait    bool
	timeout time.Duration
}

func (r restartRequest) kind() ackov1alpha1.OperationKind {
	if r.cold {
		return ackov1alpha1.OperationPodRestart
	}
	return ackov1alpha1.OperationWarmRestart
}

func (o *options) newRestartCommand() *cobra.Command {
	req := restartRequest{timeout: restartTimeout}
	cmd := &cobra.Command{
		Use:   "restart NAME [--warm|--cold] [--pods a,b] [--id ID] [--wait]",
		Short: "Restart the pods of an AerospikeCluster one at a time (WarmRestart or PodRestart operation)",
		Long: "Writes an on-demand operation into spec.operations: --warm (the default) restarts asd in place " +
			"(WarmRestart: same pod, same IP), --cold deletes and recreates each pod (PodRestart). Without " +
			"--pods every pod of the cluster is restarted. The id is generated unless --id gives one; an id " +
			"runs once. With --wait it shows each pod's progress until the operation is Completed (exit 0) " +
			"or Error (exit 1, naming the failed pods). See docs/operations.md.",
		Example: "  kubectl acko restart aerospike-3node --wait\n" +
			"  kubectl acko restart aerospike-3node --cold --pods aerospike-3node-2 --wait",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: o.completeClusterNames,
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.restart(cmd.Context(), args[0], req)
		},
	}
	f := cmd.Flags()
	f.BoolVar(&req.warm, "warm", false, "WarmRestart: SIGUSR1 to the image's tini restarts asd in the same pod (default)")
	f.BoolVar(&req.cold, "cold", false, "PodRestart: delete each pod and let it be recreated")
	f.StringSliceVar(&req.pods, "pods", nil, "the pods to restart, comma-separated (default: every pod)")
	f.StringVar(&req.id, "id", "", "the operation id, 1 to 20 characters, never used before on this cluster "+
		"(default: generated from the time)")
	f.BoolVar(&req.wait, "wait", false, "show each pod's progress until the operation ends")
	f.DurationVar(&req.timeout, "timeout", req.timeout, "how long to wait for the API server and, with --wait, "+
		"for the operation")
	cmd.MarkFlagsMutuallyExclusive("warm", "cold")
	_ = cmd.RegisterFlagCompletionFunc("pods", o.completePodNames)
	return cmd
}

func (o *options) restart(ctx context.Context, name string, req restartRequest) error {
	ctx, cancel := context.WithTimeout(ctx, req.timeout)
	defer cancel()
	s, err := o.connect()
	if err != nil {
		return err
	}
	c, op, err := s.writeOperation(ctx, name, ackov1alpha1.OperationSpec{Kind: req.kind(), ID: req.id, PodList: req.pods},
		o.now)
	if err != nil {
		return timedOut(err, req.timeout, "the API server")
	}
	targets := "every pod"
	if len(op.PodList) > 0 {
		targets = strings.Join(op.PodList, ", ")
	}
	_, _ = fmt.Fprintf(o.streams.Out, "Operation %s: %s of %s in %s/%s\n", op.ID, op.Kind, targets, c.Namespace, c.Name)
	if !req.wait {
		if why := whyNotStarting(c); why != "" {
			_, _ = fmt.Fprintf(o.streams.Out, "It waits: %s\n", why)
		}
		_, err = fmt.Fprintf(o.streams.Out, "Follow it with: kubectl acko status %s -n %s\n", c.Name, c.Namespace)
		return err
	}
	follower := newOperationFollower(o.streams.Out, op.ID, time.Now)
	err = s.watchCluster(ctx, name, follower.observe)
	return timedOut(err, req.timeout, fmt.Sprintf("operation %s to end; it goes on: kubectl acko status %s -n %s",
		op.ID, c.Name, c.Namespace))
}

// maxIDDraws bounds the draws of a generated id that the cluster has not seen (one almost always does).
const maxIDDraws = 5

// writeOperation writes op into spec.operations with a resourceVersion precondition, so that what
// was checked (the id is unused, which operations stay) still holds when it lands; a conflict
// re-reads and decides again. A generated id is drawn for each attempt. The server's refusal is
// returned as the server worded it, with what stands in the way.
func (s *session) writeOperation(ctx context.Context, name string, op ackov1alpha1.OperationSpec,
	now func() time.Time) (*ackov1alpha1.AerospikeCluster, ackov1alpha1.OperationSpec, error) {
	var c *ackov1alpha1.AerospikeCluster
	idGiven := op.ID != ""
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var err error
		if c, err = s.getCluster(ctx, name); err != nil {
			return err
		}
		if op.ID, err = unusedID(c, op.ID, idGiven, now); err != nil {
			return err
		}
		patch, err := operationPatch(c.ResourceVersion, operationsWith(c, op))
		if err != nil {
			return err
		}
		before := c.DeepCopy()
		if err := s.client.Patch(ctx, c, client.RawPatch(types.MergePatchType, patch)); err != nil {
			if apierrors.IsConflict(err) || ctx.Err() != nil {
				return err
			}
			return refusal(err, before, op.ID)
		}
		return nil
	})
	if apierrors.IsConflict(err) {
		err = fmt.Errorf("%s/%s kept changing while operation %s was being written; try again: %w",
			s.namespace, name, op.ID, err)
	}
	return c, op, err
}

// unusedID returns the id to write: the given one if the cluster has not seen it, else a new one.
func unusedID(c *ackov1alpha1.AerospikeCluster, id string, given bool, now func() time.Time) (string, error) {
	if given {
		if idUsed(c, id) {
			return "", fmt.Errorf("operation id %q was already used on %s/%s and would never run again: "+
				"choose another id, or leave out --id to get a new one", id, c.Namespace, c.Name)
		}
		return id, nil
	}
	for range maxIDDraws {
		id, err := generateOperationID(now())
		if err != nil || !idUsed(c, id) {
			return id, err
		}
	}
	return "", fmt.Errorf("no unused operation id after %d draws", maxIDDraws)
}

// whyNotStarting says why an operation written to the cluster does not start at once, or "".
func whyNotStarting(c *ackov1alpha1.AerospikeCluster) string {
	switch {
	case c.Spec.Paused:
		return fmt.Sprintf("the cluster is paused; the operation starts when it is resumed (kubectl acko resume %s -n %s)",
			c.Name, c.Namespace)
	case c.Status.Phase != ackov1alpha1.PhaseRunning:
		return fmt.Sprintf("the operation starts when the cluster is Running (phase %s)", orDash(string(c.Status.Phase)))
	}
	return ""
}

// operationFollower prints an operation's progress, pod by pod, from successive states of the cluster.
type operationFollower struct {
	out     io.Writer
	id      string
	now     func() time.Time
	start   time.Time
	started bool
	waiting string
	current string
	shown   map[string]bool
}

func newOperationFollower(out io.Writer, id string, now func() time.Time) *operationFollower {
	return &operationFollower{out: out, id: id, now: now, start: now(), shown: map[string]bool{}}
}

// observe prints what changed since the last state and reports whether the operation ended; an
// operation that ended in Error is an error naming the failed pods.
func (f *operationFollower) observe(c *ackov1alpha1.AerospikeCluster) (bool, error) {
	st := c.Status.OperationStatus
	if st == nil || st.ID != f.id {
		if why := whyNotStarting(c); why != "" && why != f.waiting {
			f.waiting = why
			f.printf("waiting: %s\n", why)
		}
		return false, nil
	}
	if !f.started {
		f.started = true
		f.printf("started: %s of %d pods: %s\n", st.Kind, len(st.TargetPods), strings.Join(st.TargetPods, ", "))
	}
	total := len(st.TargetPods)
	for _, p := range st.CompletedPods {
		if !f.shown[p] {
			f.shown[p] = true
			f.printf("  %s restarted (%d/%d)\n", p, countShown(f.shown, st.CompletedPods), total)
		}
	}
	for _, p := range st.FailedPods {
		if !f.shown[p] {
			f.shown[p] = true
			f.printf("  %s FAILED\n", p)
		}
	}
	if st.Phase == ackov1alpha1.OperationInProgress && st.CurrentPod != "" && st.CurrentPod != f.current &&
		!f.shown[st.CurrentPod] {
		f.current = st.CurrentPod
		f.printf("  %s restarting\n", st.CurrentPod)
	}
	return f.finish(st)
}

// finish reports the end of the operation, if it ended.
func (f *operationFollower) finish(st *ackov1alpha1.OperationStatus) (bool, error) {
	elapsed := f.now().Sub(f.start).Round(100 * time.Millisecond)
	switch st.Phase {
	case ackov1alpha1.OperationCompleted:
		f.printf("Completed in %s: %d pods restarted, %d failed\n", elapsed, len(st.CompletedPods), len(st.FailedPods))
		return true, nil
	case ackov1alpha1.OperationError:
		f.printf("Error after %s: %d pods restarted, %d failed\n", elapsed, len(st.CompletedPods), len(st.FailedPods))
		msg := fmt.Sprintf("operation %s ended in Error; failed pods: %s", st.ID, strings.Join(st.FailedPods, ", "))
		if st.Message != "" {
			msg += ": " + st.Message
		}
		return true, errors.New(msg)
	}
	return false, nil
}

func (f *operationFollower) printf(format string, args ...any) {
	_, _ = fmt.Fprintf(f.out, format, args...)
}

// countShown counts the pods of list already printed.
func countShown(shown map[string]bool, list []string) int {
	n := 0
	for _, p := range list {
		if shown[p] {
			n++
		}
	}
	return n
}
