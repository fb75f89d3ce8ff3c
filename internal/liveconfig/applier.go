// Package liveconfig applies a config change to a running Aerospike node without restarting it: it takes
// the operator's plan of the change (config/live, planned against the server's parameter table from the
// config the pod records), checks it against the pod's files (exec: the config asd loaded and the one the
// ConfigMap now holds; the plan is made from them only when the operator has none, or, for a change of
// every node, when they contradict it), sends set-config and log-set, reads every value back with
// get-config, and copies the new file into the pod's own copy, so that a later restart of asd loads the
// same values. It talks to the pod and the node: the reconciler runs it in the background, never inside
// Reconcile.
package liveconfig

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/acko-io/acko/internal/aerospike"
	"github.com/acko-io/acko/internal/config"
	"github.com/acko-io/acko/internal/config/live"
	"github.com/acko-io/acko/internal/config/params"
	"github.com/acko-io/acko/internal/podexec"
	"github.com/acko-io/acko/internal/resources"
)

var (
	// ErrNeedsRestart: the change has a parameter the running server cannot take (static, removed, or
	// one that must change on every node at once); nothing was sent.
	ErrNeedsRestart = errors.New("the change needs a restart")
	// ErrRefused: the node refused a change the tables say it takes live, or did not report it back.
	ErrRefused = errors.New("the node refused the change")
)

// Applier applies config changes live.
type Applier struct {
	// Pods reads the pod's config files and copies the new one into place (exec).
	Pods podexec.Signaller
	// Info talks to the node.
	Info aerospike.InfoClient
}

// Change is one node's config change, planned once: by the operator, from the config the pod's node
// runs by its record to the one it must run (To), or, when the operator does not know the file the node
// runs (a pod older than the operator's record of running files), by the applier from the pod's own
// copy (Plan nil). The act reads the pod's files again only to check that the plan still stands.
type Change struct {
	// From is the identity (config.Hash) of the config the plan starts from: the one the pod records.
	From string
	// To is the identity of the rack's config the node must run, as the kubelet projects it.
	To string
	// Plan is the operator's plan from From to To; nil when it has none.
	Plan *live.Plan
}

// Apply implements controller.LiveConfigurer: the pod's node runs the ConfigMap's config change.To,
// with no restart. A config the kubelet has not projected yet wraps podexec.ErrNotProjected (nothing
// was changed). A pod whose files no longer stand for the operator's plan (errPlanStale) is restarted
// instead: a restart in place loads the new file, whatever the node ran.
func (a *Applier) Apply(ctx context.Context, pod *corev1.Pod, change Change) (string, error) {
	own, projected, err := a.readFiles(ctx, pod, change.To)
	if err != nil {
		return "", err
	}
	plan, err := change.planOn(pod, own, projected)
	if errors.Is(err, errNoPlan) || errors.Is(err, errPlanStale) {
		return "", fmt.Errorf("%w: %v", ErrNeedsRestart, err)
	}
	if err != nil {
		return "", err
	}
	if !plan.Live() {
		why := append(plan.Restart, togetherReasons(plan)...)
		return "", fmt.Errorf("%w: %s", ErrNeedsRestart, strings.Join(why, "; "))
	}
	applied, err := a.applyPlan(ctx, pod, plan, change.To)
	if err != nil || len(applied) > 0 {
		return strings.Join(applied, ", "), err
	}
	return "nothing to change on the node (only the seeds differ)", nil
}

var (
	// errNoPlan: the planner could not compare the pod's two files.
	errNoPlan = errors.New("no plan")
	// errPlanStale: the pod's own copy of the config is neither the one the plan starts from nor its
	// target, so the node may run a config the plan does not start from.
	errPlanStale = errors.New("the plan does not start from the pod's config")
)

// readFiles reads the pod's own copy of the config (what a restart of asd loads) and the projected one,
// which must be to (else podexec.ErrNotProjected).
func (a *Applier) readFiles(ctx context.Context, pod *corev1.Pod, to string) (own, projected string, err error) {
	own, projected, err = a.Pods.ReadConfigs(ctx, pod)
	if err != nil {
		return "", "", fmt.Errorf("pod %s: %w", pod.Name, err)
	}
	if got := config.Hash(projected); got != to {
		return "", "", fmt.Errorf("pod %s: %w: it shows config %s, want %s", pod.Name, podexec.ErrNotProjected, got, to)
	}
	return own, projected, nil
}

// planOn is the change's plan once the pod's files show that it still stands: the own copy is the
// config the plan starts from, or its target already (a change applied, or a restart's copy made, before
// the pod recorded it: the plan's requests take the node there either way, each idempotent). Any other
// copy ends it with errPlanStale: the record is behind (a change applied live whose record was lost) or
// the copy is (a restart in place prepared, then given up), so the node may run values the plan does
// not know of. With no plan, it plans from the own copy to the projected one (else errNoPlan).
func (c Change) planOn(pod *corev1.Pod, own, projected string) (live.Plan, error) {
	switch got := config.Hash(own); {
	case c.Plan != nil && (got == c.From || got == c.To):
		return *c.Plan, nil
	case c.Plan != nil:
		return live.Plan{}, fmt.Errorf("%w: pod %s records config %s, but its own copy is %s", errPlanStale,
			pod.Name, c.From, got)
	}
	return planFiles(pod, own, projected)
}

// planFiles plans the change from the pod's own copy to the projected file.
func planFiles(pod *corev1.Pod, own, projected string) (live.Plan, error) {
	plan, err := live.Compute(own, projected, tableOf(pod))
	if err != nil {
		return live.Plan{}, fmt.Errorf("%w: pod %s: %v", errNoPlan, pod.Name, err)
	}
	return plan, nil
}

// togetherReasons: a change every node must take at once is not one node's to apply.
func togetherReasons(plan live.Plan) []string {
	out := make([]string, 0, len(plan.Together))
	for _, s := range plan.Together {
		out = append(out, s.Command+" goes to every node together, then the cluster reclusters")
	}
	return out
}

// applyPlan sends the plan's steps to the pod's node, its changes for every node last, and copies the
// config into the pod's own copy, so that a later restart of asd (a crash, a warm restart) loads what
// was applied.
func (a *Applier) applyPlan(ctx context.Context, pod *corev1.Pod, plan live.Plan, configHash string) ([]string, error) {
	plan.Steps = append(plan.Steps, plan.Together...)
	applied, err := a.send(ctx, nodeAddr(pod), plan)
	if err != nil {
		return nil, fmt.Errorf("pod %s: %w", pod.Name, err)
	}
	if err := a.Pods.CopyConfig(ctx, pod, configHash); err != nil {
		return nil, fmt.Errorf("pod %s: applied %s, but keeping the pod's copy of the config in step failed: %w",
			pod.Name, strings.Join(applied, ", "), err)
	}
	return applied, nil
}

func nodeAddr(pod *corev1.Pod) string { return net.JoinHostPort(pod.Status.PodIP, "3000") }

// tableOf is the parameter table of the pod's server version (the newest when the tag names none).
func tableOf(pod *corev1.Pod) *params.Table {
	if v, ok := params.ImageVersion(resources.AerospikeImage(pod)); ok {
		if t, _, err := params.Select(v); err == nil {
			return t
		}
	}
	return params.Newest()
}

// send applies the plan's steps in order and confirms each by reading it back; log levels go to the
// sink the "logs" command names.
func (a *Applier) send(ctx context.Context, addr string, plan live.Plan) ([]string, error) {
	steps := plan.Steps
	if len(plan.Logging) > 0 {
		logs, err := a.one(ctx, addr, "logs")
		if err != nil {
			return nil, err
		}
		for _, l := range plan.Logging {
			id, ok := live.SinkID(logs, l.Sink)
			if !ok {
				return nil, fmt.Errorf("%w: the node has no log sink %q (logs: %s)", ErrRefused, l.Sink, logs)
			}
			steps = append(steps, l.Step(id))
		}
	}
	var applied []string
	for _, s := range steps {
		answer, err := a.one(ctx, addr, s.Command)
		if err != nil {
			return applied, err
		}
		if answer != "ok" {
			return applied, fmt.Errorf("%w: %s answered %s", ErrRefused, s.Command, answer)
		}
		for _, r := range s.Confirm {
			got, err := a.one(ctx, addr, r.Command)
			if err != nil {
				return applied, err
			}
			if !r.Confirmed(got) {
				return applied, fmt.Errorf("%w: after %s, %s does not report %s=%s", ErrRefused, s.Command, r.Command, r.Name, r.Value)
			}
		}
		applied = append(applied, s.Command)
	}
	return applied, nil
}

// one sends one info command and returns its raw answer.
func (a *Applier) one(ctx context.Context, addr, cmd string) (string, error) {
	answers, err := a.Info.Info(ctx, addr, cmd)
	if err != nil {
		return "", err
	}
	return answers[cmd], nil
}
