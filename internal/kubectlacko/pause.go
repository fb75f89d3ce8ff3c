package kubectlacko

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
)

// pauseChange is pause or resume: the patch that asks for it and how the status acknowledges it.
type pauseChange struct {
	verb, short, long string
	// done starts the report of an acknowledged change; state says that nothing needed doing.
	done, state string
	paused      bool
	patch       string
	// acknowledged reports whether the status shows the change at generation gen or later.
	acknowledged func(c *ackov1alpha1.AerospikeCluster, gen int64) bool
}

var (
	pause = pauseChange{
		verb:  "pause",
		short: "Pause an AerospikeCluster and wait until the operator acknowledges it",
		long: "Sets spec.paused and waits until the operator acknowledges it (phase Paused, condition Paused " +
			"True at the new generation). While paused the operator changes nothing; see docs/pause.md.",
		done: "Paused", state: "paused", paused: true, patch: `{"spec":{"paused":true}}`,
		acknowledged: pauseAcknowledged,
	}
	// Resume removes the field rather than writing false: the spec reads as if never paused.
	resume = pauseChange{
		verb:  "resume",
		short: "Resume an AerospikeCluster and wait until the operator acknowledges it",
		long: "Clears spec.paused and waits until the operator manages the cluster again: the Paused " +
			"condition is gone and the spec is applied. Changes made while paused roll out then.",
		done: "Resumed", state: "not paused", paused: false, patch: `{"spec":{"paused":null}}`,
		acknowledged: resumeAcknowledged,
	}
)

// pauseAcknowledged: phase Paused and the Paused condition True for generation gen or later (ADR-0018).
func pauseAcknowledged(c *ackov1alpha1.AerospikeCluster, gen int64) bool {
	cond := meta.FindStatusCondition(c.Status.Conditions, ackov1alpha1.ConditionPaused)
	return c.Status.Phase == ackov1alpha1.PhasePaused && cond != nil && cond.Status == metav1.ConditionTrue &&
		cond.ObservedGeneration >= gen
}

// resumeAcknowledged: the Paused condition is gone and the operator has taken up generation gen: it
// applied it, or it says why it cannot (ReconcileFailed at that generation).
func resumeAcknowledged(c *ackov1alpha1.AerospikeCluster, gen int64) bool {
	if meta.FindStatusCondition(c.Status.Conditions, ackov1alpha1.ConditionPaused) != nil ||
		c.Status.Phase == ackov1alpha1.PhasePaused {
		return false
	}
	return c.Status.ObservedGeneration >= gen || reconcileFailure(c, gen) != nil
}

// reconcileFailure returns the ReconcileFailed condition when it is True for generation gen or later.
func reconcileFailure(c *ackov1alpha1.AerospikeCluster, gen int64) *metav1.Condition {
	cond := meta.FindStatusCondition(c.Status.Conditions, ackov1alpha1.ConditionReconcileFailed)
	if cond == nil || cond.Status != metav1.ConditionTrue || cond.ObservedGeneration < gen {
		return nil
	}
	return cond
}

func (o *options) newPauseCommand(paused bool) *cobra.Command {
	change := resume
	if paused {
		change = pause
	}
	wait, timeout := true, pauseTimeout
	cmd := &cobra.Command{
		Use:               change.verb + " NAME",
		Short:             change.short,
		Long:              change.long,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: o.completeClusterNames,
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.setPaused(cmd.Context(), args[0], change, wait, timeout)
		},
	}
	cmd.Flags().BoolVar(&wait, "wait", wait, "wait until the operator acknowledges it (--wait=false returns at once)")
	cmd.Flags().DurationVar(&timeout, "timeout", timeout, "how long to wait for the acknowledgement")
	return cmd
}

func (o *options) setPaused(ctx context.Context, name string, change pauseChange, wait bool, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	s, err := o.connect()
	if err != nil {
		return err
	}
	c, err := s.getCluster(ctx, name)
	if err != nil {
		return timedOut(err, timeout, "the API server")
	}
	ref := s.namespace + "/" + name
	if c.Spec.Paused == change.paused && change.acknowledged(c, c.Generation) {
		_, err = fmt.Fprintf(o.streams.Out, "%s is already %s\n", ref, change.state)
		return err
	}
	start := time.Now()
	if err := s.client.Patch(ctx, c, client.RawPatch(types.MergePatchType, []byte(change.patch))); err != nil {
		return timedOut(explain(err, s.namespace, name), timeout, "the API server")
	}
	if !wait {
		_, err = fmt.Fprintf(o.streams.Out, "%s: %s requested at generation %d (kubectl acko status %s -n %s shows "+
			"when the operator acknowledges it)\n", ref, change.verb, c.Generation, name, s.namespace)
		return err
	}
	gen := c.Generation
	err = s.watchCluster(ctx, name, func(cur *ackov1alpha1.AerospikeCluster) (bool, error) {
		c = cur
		return change.acknowledged(cur, gen), nil
	})
	if err != nil {
		return timedOut(err, timeout, fmt.Sprintf("the operator to acknowledge the %s of %s at generation %d; "+
			"the request stands: is the ACKO manager running? (kubectl acko status %s -n %s)",
			change.verb, ref, gen, name, s.namespace))
	}
	_, err = fmt.Fprintf(o.streams.Out, "%s %s: the operator acknowledged it in %s\n", change.done, ref,
		time.Since(start).Round(time.Millisecond))
	if failed := reconcileFailure(c, gen); err == nil && failed != nil && !change.paused {
		_, err = fmt.Fprintf(o.streams.Out, "but it cannot apply the spec: %s: %s\n", failed.Reason, failed.Message)
	}
	return err
}
