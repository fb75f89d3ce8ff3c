package cluster

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
	"github.com/acko-io/acko/internal/config"
	"github.com/acko-io/acko/internal/liveconfig"
	"github.com/acko-io/acko/internal/operations"
	"github.com/acko-io/acko/internal/podexec"
	"github.com/acko-io/acko/internal/pods"
	"github.com/acko-io/acko/internal/resources"
	"github.com/acko-io/acko/internal/tasks"
)

// LiveConfigurer applies a config change to a running node without restarting it (set-config),
// outside Reconcile (it talks to the node): liveconfig.Applier. A change the server cannot take live
// wraps liveconfig.ErrNeedsRestart; a node that refused it wraps liveconfig.ErrRefused with the
// server's answer.
type LiveConfigurer interface {
	// Apply takes the pod's node through the change to the ConfigMap's config change.To, by the
	// change's plan, and keeps the pod's own copy in step; it says what it applied.
	Apply(ctx context.Context, pod *corev1.Pod, change liveconfig.Change) (applied string, err error)
	// ApplyTogether takes every node (pods) through its change (by pod name), whose plans hold new
	// replication-factors: set on every node, then one recluster, then confirmed in effect on all.
	// cluster are every pod of the cluster with an address, where a node outside a stuck exchange is
	// looked for (one whose asd was down is not in pods).
	ApplyTogether(ctx context.Context, pods, cluster []*corev1.Pod, changes map[string]liveconfig.Change) (applied string, err error)
}

// settleDelay is how long after a restart attempt whose signal may have gone out the operator reads
// the node's uptime before it tries again: asd is back within a second or two when it restarted.
const settleDelay = 15 * time.Second

// minUptimeBeforeSignal: asd's uptime is in whole seconds and runs up to a second ahead, so a restart
// proves itself (a start estimate more than a second later) only when asd had run at least this long.
const minUptimeBeforeSignal = 3 * time.Second

// waitingInPlace is what a restart in place says while it runs.
const waitingInPlace = "restarting in place"

// restartInPlace takes a recorded restart in place one move further for a batch of pods: it settles
// an attempt whose outcome is unknown from the nodes' uptimes, takes the result of the background
// task, and otherwise starts one after the safety checks, once the disruption budget counts the pods.
func (r *AerospikeClusterReconciler) restartInPlace(ctx context.Context, st *clusterState, pods []string) (string, error) {
	name := "in-place/" + strings.Join(pods, ",")
	for _, p := range pods {
		if u := st.cluster.Status.Pods[p].Update; st.restartedInPlace(p, u) {
			return "asd restarted", r.markDone(ctx, st, p, u) // the signal went out before the operator stopped
		}
	}
	if res, ok := st.results[name]; ok {
		return r.inPlaceResult(ctx, st, pods, res)
	}
	prepared, res := r.takePrepared(st, name, pods)
	if res.Err != nil {
		return r.inPlaceResult(ctx, st, pods, res)
	}
	intent := takeDown{what: "restart in place", kind: actRestartInPlace, pods: pods, decided: st.decidedAt(pods),
		prepared: prepared}
	restart := restartAttempt{task: name, pods: pods, prepared: prepared}
	if _, v, err := r.takeDownNow(ctx, st, intent, restart); v.why != "" || err != nil {
		return v.why, err
	}
	return waitingInPlace, nil
}

// preparedRestarts remembers, per cluster and task, the restart attempt whose pods a background task
// prepared (their config copied into place, PID 1 checked): the signal, which alone takes the nodes
// down, goes through the door again, after a last look, and out in one exec per pod. In memory: an
// operator that restarts settles the attempt from the nodes' uptimes and prepares again.
type preparedRestarts = perCluster[string, preparedAttempt]

type preparedAttempt struct {
	attempt time.Time // the attempt recorded before the preparation
	ready   bool      // the preparation ended well
}

func prepareTask(task string) string { return "prepare/" + task }

// takePrepared takes the result of the pods' preparation, if it ended: its failure, or, from then on,
// whether the attempt the status records is the one prepared. Only that attempt may be signalled
// without settling first: its signal certainly did not go out yet.
func (r *AerospikeClusterReconciler) takePrepared(st *clusterState, task string, pods []string) (bool, tasks.Result) {
	p, known := r.prepared.get(st.key, task)
	if res, ok := st.results[prepareTask(task)]; ok {
		if res.Err != nil {
			r.prepared.remove(st.key, task)
			return false, res
		}
		p.ready = known
		r.prepared.set(st.key, task, p)
	}
	u := st.cluster.Status.Pods[pods[0]].Update
	return p.ready && u != nil && operations.SameAttempt(u.Attempted, p.attempt), tasks.Result{}
}

// settling: an earlier attempt may have signalled without the operator learning of it; until the
// nodes have had settleDelay to show a restart, no second signal goes out.
func (st *clusterState) settling(pods []string) string {
	for _, p := range pods {
		if u := st.cluster.Status.Pods[p].Update; u != nil && u.Attempted != nil && st.now.Sub(u.Attempted.Time) < settleDelay {
			return "settling whether the last restart attempt went out"
		}
	}
	return ""
}

func (r *AerospikeClusterReconciler) inPlaceResult(ctx context.Context, st *clusterState, pods []string,
	res tasks.Result) (string, error) {
	switch {
	case res.Err == nil:
		for _, p := range pods {
			u := st.cluster.Status.Pods[p].Update
			if err := r.markDone(ctx, st, p, u); err != nil {
				return "", err
			}
			st.addEvent(corev1.EventTypeNormal, ackov1alpha1.EventPodRestartedInPlace, "Restart", st.pods[p],
				"Restarted asd in pod %s in place to load config %s (%s)", p, u.ConfigHash, u.Reason)
		}
		return waitingInPlace, nil
	case errors.Is(res.Err, podexec.ErrNotProjected):
		return res.Err.Error(), r.clearAttempt(ctx, st, pods)
	case errors.Is(res.Err, podexec.ErrNotTini):
		// This pod cannot restart in place: it is evicted and recreated instead, with the same checks.
		return "falling back to recreating the pod", r.switchMethod(ctx, st, pods, ackov1alpha1.UpdateEvict, res.Err)
	}
	return fmt.Sprintf("restart attempt failed, trying again: %v", res.Err), nil
}

// clearAttempt forgets an attempt that certainly changed nothing, so that the next one need not wait.
func (r *AerospikeClusterReconciler) clearAttempt(ctx context.Context, st *clusterState, pods []string) error {
	return r.record(ctx, st, func(s *ackov1alpha1.AerospikeClusterStatus) {
		for _, p := range pods {
			if u := s.Pods[p].Update; u != nil {
				u.Attempted, u.NodeStartedBefore = nil, nil
			}
		}
	})
}

// switchMethod changes how recorded pods are brought up to date, saying why in an event.
func (r *AerospikeClusterReconciler) switchMethod(ctx context.Context, st *clusterState, pods []string,
	method ackov1alpha1.PodUpdateMethod, why error) error {
	for _, p := range pods {
		st.addEvent(corev1.EventTypeNormal, eventForFallback(why), "Restart", st.pods[p],
			"Pod %s: %v; it will %s instead", p, why, methodOf(method).text())
	}
	return r.record(ctx, st, func(s *ackov1alpha1.AerospikeClusterStatus) {
		for _, p := range pods {
			if u := s.Pods[p].Update; u != nil {
				u.Method, u.Attempted, u.NodeStartedBefore = method, nil, nil
			}
		}
	})
}

func eventForFallback(why error) string {
	if errors.Is(why, liveconfig.ErrRefused) || errors.Is(why, liveconfig.ErrNeedsRestart) {
		return ackov1alpha1.EventConfigApplyFailed
	}
	return ackov1alpha1.EventRollingRestartStarted
}

// followInPlace follows a signalled restart in place until the node restarted, the pod is Ready again
// and the cluster stable (afterStep). First the pod records the config its own copy holds now: asd loads
// that file, at this restart and at any later one, so the pod runs it even when asd refuses it and
// crash-loops; if the spec is reverted meanwhile, the pod must be outdated, or nothing would ever bring
// the good file back.
func (r *AerospikeClusterReconciler) followInPlace(ctx context.Context, st *clusterState, pod *corev1.Pod,
	u *ackov1alpha1.PodUpdate) (string, error) {
	switch {
	case u.ConfigHash != "" && pod.Annotations[ackov1alpha1.AnnotationConfigHash] != u.ConfigHash,
		u.VolumeSizes != "" && pod.Annotations[ackov1alpha1.AnnotationVolumeSizes] != u.VolumeSizes:
		return "recording the config the pod runs", pods.RecordRunning(ctx, r.Client, pod, u.ConfigHash, u.VolumeSizes)
	case !st.restartedSince(pod.Name, u.NodeStartedBefore):
		return "waiting for asd to restart", nil
	case !resources.PodReady(pod):
		return st.becauseUnstable("waiting for the node to rejoin the cluster"), nil
	case st.afterStep() != "":
		return st.afterStep(), nil
	}
	return "", r.clearUpdate(ctx, st, pod.Name)
}

// restartedInPlace: the attempt of the pod's restart in place happened. asd started after the start
// recorded before it (its uptime says), or, when it does not answer, its container ended after the
// attempt (a config it refuses: it crash-loops): it loaded the copy made for the attempt, which the pod
// then records (followInPlace). As the operations' warm restart settles its attempt (planUnconfirmed).
// Without the second, a node crash-looping on the attempt's config never proved its restart, and a fix
// of the spec decided the step again as if nothing had happened: the pod, recording the old config, was
// taken to run the current spec and stalled the roll for good (model seed 84207).
func (st *clusterState) restartedInPlace(name string, u *ackov1alpha1.PodUpdate) bool {
	if st.restartedSince(name, u.NodeStartedBefore) {
		return true
	}
	pod := st.pods[name]
	return u.Attempted != nil && pod != nil && string(pod.UID) == u.UID && resources.AerospikeExitedSince(pod, u.Attempted.Time)
}

// restartedSince: the pod's asd started after the start recorded before the restart was asked for
// (aerospike.ClusterHealth.RestartedSince).
func (st *clusterState) restartedSince(pod string, before *metav1.MicroTime) bool {
	return before != nil && st.healthOK && st.health.RestartedSince(pod, before.Time)
}

// applyLive applies a config change to one running node in the background, one node at a time and
// gated on the cluster's stability; a change the node cannot take live falls back to a restart in
// place, with the reason (the server's answer) in an event.
func (r *AerospikeClusterReconciler) applyLive(ctx context.Context, st *clusterState, name string) (string, error) {
	u, pod := st.cluster.Status.Pods[name].Update, st.pods[name]
	if r.Live == nil {
		return waitingInPlace, r.switchMethod(ctx, st, []string{name}, ackov1alpha1.UpdateInPlace,
			fmt.Errorf("%w: live changes are off", liveconfig.ErrNeedsRestart))
	}
	task := "live/" + name
	if res, ok := st.results[task]; ok {
		switch {
		case res.Err == nil:
			st.addEvent(corev1.EventTypeNormal, ackov1alpha1.EventConfigApplied, "Configure", pod,
				"Applied config %s to pod %s with no restart: %s", u.ConfigHash, name, res.Note)
			return "recording the config the pod runs", pods.RecordLive(ctx, r.Client, pod, u.ConfigHash)
		case errors.Is(res.Err, liveconfig.ErrNeedsRestart), errors.Is(res.Err, liveconfig.ErrRefused):
			return waitingInPlace, r.switchMethod(ctx, st, []string{name}, ackov1alpha1.UpdateInPlace, res.Err)
		}
		return fmt.Sprintf("applying the config live: %v (trying again)", res.Err), nil
	}
	if key, busy := r.Tasks.Busy(st.key); busy {
		return "waiting for " + key.Name, nil
	}
	if check, why := st.mayTakeDown(nil); check != "" {
		return holdReason("live config change", check, why), nil
	}
	change := st.liveChange(pod, u.ConfigHash) // the plan the method was chosen by, made before the task runs
	r.Tasks.Run(tasks.Key{Cluster: st.key, Name: task}, func(ctx context.Context) (string, error) {
		return r.Live.Apply(ctx, pod, change)
	})
	return "applying the config live", nil
}

// togetherTask names the background task of a replication-factor change (one per cluster at a time).
const togetherTask = "live-together"

// applyTogether takes a replication-factor change to every node at once: with every node running and
// answering, one background task sets it (and the pods' other live changes) on each, has the cluster
// recluster once and confirms the factor in effect everywhere; then each pod records its config. It
// never falls back to a restart (a node restarted with another factor would not rejoin): a failure is
// tried again whole, and said in the status and a ConfigApplyFailed event.
func (r *AerospikeClusterReconciler) applyTogether(ctx context.Context, st *clusterState, names []string) (string, error) {
	res, ok := st.results[togetherTask]
	r.noteStuckExchange(st, res.Err)
	if outside := slices.Sorted(slices.Values(r.stuck.keys(st.key))); len(outside) > 0 {
		why, err := r.endStuckExchange(ctx, st, outside)
		st.setWork(ackov1alpha1.ReasonReplicationFactorConflict, "The nodes' exchange is stuck on a replication-factor "+
			"conflict; ending it by restarting %s: %s", strings.Join(outside, ", "), why)
		return why, err
	}
	if ok {
		if res.Err != nil {
			if !errors.Is(res.Err, podexec.ErrNotProjected) { // the kubelet's delay, not a failure
				st.addEvent(corev1.EventTypeWarning, ackov1alpha1.EventConfigApplyFailed, "Configure", nil,
					"Applying the replication-factor to every node failed: %v; trying again", res.Err)
			}
			return fmt.Sprintf("applying the replication-factor to every node: %v (trying again)", res.Err), nil
		}
		st.addEvent(corev1.EventTypeNormal, ackov1alpha1.EventConfigApplied, "Configure", nil,
			"Applied config to every node with no restart: %s", res.Note)
		return "recording the config the pods run", r.recordApplied(ctx, st, names)
	}
	if r.Live == nil {
		return "a replication-factor change is applied live on every node, and live changes are off", nil
	}
	if key, busy := r.Tasks.Busy(st.key); busy {
		return "waiting for " + key.Name, nil
	}
	targets, why := st.everyNodeAnswers(names)
	if why != "" {
		return "a replication-factor change waits for every node: " + why, nil
	}
	changes := map[string]liveconfig.Change{}
	for _, pod := range targets {
		changes[pod.Name] = st.liveChange(pod, st.desiredConfigHash(pod))
	}
	// Before any node takes the new factor: until each pod records the config its node runs, its node
	// may run the smaller of the two (podReplicationFactor), even if this change is never recorded.
	for _, pod := range targets {
		rf := min(st.podReplicationFactor(pod), config.ReplicationFactor(st.cluster))
		if err := pods.RecordFactorAhead(ctx, r.Client, pod, rf); err != nil {
			return "", err
		}
	}
	r.applying.forget(st.key)
	for pod, change := range changes {
		r.applying.set(st.key, pod, change.To)
	}
	cluster := st.podsWithAddress()
	apply := func(ctx context.Context) (string, error) {
		return r.Live.ApplyTogether(ctx, targets, cluster, changes)
	}
	r.Tasks.RunWithin(tasks.Key{Cluster: st.key, Name: togetherTask}, liveconfig.TogetherDeadline, apply)
	return "applying the replication-factor to every node", nil
}

// recordApplied records on each pod the config the replication-factor change that succeeded gave its
// node: what it applied, not what the steps say now, as a spec changed while it ran gave the steps another
// config (model seed 73902: the factor 2 applied was recorded as the spec's 3).
func (r *AerospikeClusterReconciler) recordApplied(ctx context.Context, st *clusterState, names []string) error {
	for _, name := range names {
		applied, ok := r.applying.get(st.key, name)
		if !ok || st.pods[name] == nil {
			continue
		}
		if err := pods.RecordConfig(ctx, r.Client, st.pods[name], applied); err != nil {
			return err
		}
	}
	r.applying.forget(st.key)
	return nil
}

// noteStuckExchange remembers the nodes outside a stuck exchange that a replication-factor change found
// (err is its result), and says so in an event.
func (r *AerospikeClusterReconciler) noteStuckExchange(st *clusterState, err error) {
	stuck, isStuck := errors.AsType[*liveconfig.StuckExchangeError](err)
	if !isStuck {
		return
	}
	for _, p := range stuck.Outside {
		r.stuck.set(st.key, p, st.now)
	}
	st.addEvent(corev1.EventTypeWarning, ackov1alpha1.EventReplicationFactorConflict, "Configure", nil,
		"The nodes' exchange is stuck on a replication-factor conflict (a node came back with the old factor): "+
			"%v; every node now runs the new factor and has it in its file; restarting %s, in no cluster, ends it",
		stuck, strings.Join(stuck.Outside, ", "))
}

// stuckExchanges remembers, per cluster, the pods a replication-factor change found in no cluster beside a
// stuck exchange (liveconfig.StuckExchangeError), and when. Until their restart ends it no other such change
// runs. In memory: an operator that restarts runs the change again, which finds them again.
type stuckExchanges = perCluster[string, time.Time]

// applyingConfigs are, per cluster and pod, the config hashes a replication-factor change gives the
// nodes, recorded on the pods once it succeeded.
type applyingConfigs = perCluster[string, string]

// endStuckTask names the background task that restarts the nodes outside a stuck exchange.
const endStuckTask = "end-stuck-exchange"

// endStuckExchange ends an exchange a replication-factor conflict stuck: every node runs the new factor
// and has it in its file (the change set them), but only a new membership starts another exchange. The
// pods in no cluster are restarted in place through the door (actEndStuckExchange: why that loses no
// copy is written beside its checks), each restart recorded in the pod's step first so that an operator
// restarted meanwhile settles it from the node's uptime and never sends a second. Once they restarted,
// the change runs again: it waits for one cluster at the new factor and its rebalance.
func (r *AerospikeClusterReconciler) endStuckExchange(ctx context.Context, st *clusterState, outside []string) (string, error) {
	prepared, res := r.takePrepared(st, endStuckTask, outside)
	if signal, ok := st.results[endStuckTask]; ok && signal.Err != nil {
		res = signal
	}
	if adopted, err := r.adoptOutside(ctx, st, outside, res.Err); adopted != "" || err != nil {
		return adopted, err
	}
	restarted, over := r.settleOutside(st, outside)
	if over != "" {
		return over, nil
	}
	// settleOutside forgot the pods gone from the change (a real run: a pod whose step was cleared);
	// the rest read their step below.
	outside = slices.DeleteFunc(outside, func(p string) bool { return st.cluster.Status.Pods[p].Update == nil || st.pods[p] == nil })
	if len(outside) == 0 && len(restarted) == 0 {
		return "the nodes outside the stuck exchange left the change; running it again", nil
	}
	if len(restarted) > 0 {
		return r.restartedOutside(ctx, st, restarted)
	}
	found, _ := r.stuck.get(st.key, outside[0])
	intent := takeDown{what: "restart of the node outside the stuck exchange", kind: actEndStuckExchange, pods: outside,
		decided: found, prepared: prepared}
	restart := restartAttempt{task: endStuckTask, pods: outside, prepared: prepared}
	if _, v, err := r.takeDownNow(ctx, st, intent, restart); v.why != "" || err != nil {
		return v.why, err
	}
	return "restarting asd in " + strings.Join(outside, ", "), nil
}

// restartedOutside records the restarts that ended a stuck exchange: the attempts cleared, an event each.
func (r *AerospikeClusterReconciler) restartedOutside(ctx context.Context, st *clusterState, restarted []string) (string, error) {
	for _, p := range restarted {
		r.stuck.remove(st.key, p)
		st.addEvent(corev1.EventTypeNormal, ackov1alpha1.EventPodRestartedInPlace, "Restart", st.pods[p],
			"Restarted asd in pod %s in place to end the stuck exchange: it comes back with the new replication-factor", p)
	}
	return "restarted " + strings.Join(restarted, ", ") + "; waiting for one cluster at the new factor",
		r.clearAttempt(ctx, st, restarted)
}

// adoptOutside gives a step in the change to each pod outside the stuck exchange that has none (its asd
// was down when the change began, so the change left it out, and it came back on the old factor): the
// restart that ends the exchange is recorded in, and followed from, the pod's step. It first says when
// the last restart failed (lastErr: its preparation or its signal).
func (r *AerospikeClusterReconciler) adoptOutside(ctx context.Context, st *clusterState, outside []string,
	lastErr error) (string, error) {
	if lastErr != nil {
		st.addEvent(corev1.EventTypeWarning, ackov1alpha1.EventReplicationFactorConflict, "Restart", nil,
			"Restarting %s to end the stuck exchange failed: %v; trying again", strings.Join(outside, ", "), lastErr)
	}
	var adopt []string
	for _, p := range outside {
		if st.pods[p] != nil && st.cluster.Status.Pods[p].Update == nil {
			adopt = append(adopt, p)
		}
	}
	if len(adopt) == 0 {
		return "", nil
	}
	started := metav1.NewMicroTime(st.now)
	return "taking " + strings.Join(adopt, ", ") + " into the change to end the stuck exchange",
		r.record(ctx, st, func(s *ackov1alpha1.AerospikeClusterStatus) {
			for _, p := range adopt {
				pod := st.pods[p]
				setUpdate(s, p, &ackov1alpha1.PodUpdate{Method: ackov1alpha1.UpdateLiveTogether, UID: string(pod.UID),
					Reason: ackov1alpha1.RestartReasonConfigChanged, Started: started, ConfigHash: st.desiredConfigHash(pod)})
			}
		})
}

// settleOutside names the pods outside a stuck exchange whose asd restarted since the attempt recorded,
// and forgets the ones no longer to restart: gone from the change, or in a cluster meanwhile (over then
// says so).
func (r *AerospikeClusterReconciler) settleOutside(st *clusterState, outside []string) (restarted []string, over string) {
	for _, p := range outside {
		u := st.cluster.Status.Pods[p].Update
		if u == nil || st.pods[p] == nil {
			r.stuck.remove(st.key, p) // no longer in the change: the next run finds what is true
			continue
		}
		switch n, read := st.health.Nodes[p]; {
		case st.restartedSince(p, u.NodeStartedBefore):
			restarted = append(restarted, p)
		case u.Attempted == nil && read && n.Err == nil && n.Facts.ClusterSize > 0:
			r.stuck.remove(st.key, p) // it joined a cluster since: nothing left to end
			return nil, "the exchange is no longer stuck: " + p + " is in a cluster"
		}
	}
	return restarted, ""
}

// podsWithAddress lists the cluster's pods that have an IP, by name: the nodes that may answer.
func (st *clusterState) podsWithAddress() []*corev1.Pod {
	var out []*corev1.Pod
	for _, name := range slices.Sorted(maps.Keys(st.pods)) {
		if pod := st.pods[name]; pod.Status.PodIP != "" {
			out = append(out, pod)
		}
	}
	return out
}

// everyNodeAnswers lists the pods whose asd runs, leaving ones included (an exchange takes in every
// node), when each one answers with a reading at most aerospike.MaxReadingAge old, and every pod of the
// batch (names) runs; else it says which does not. Another pod whose asd does not run (crash-looping,
// not started yet) is left out: it starts on its own copy of the config, the new one when the ConfigMap
// gave it, and otherwise is refused by the others and taken in by the next such change.
func (st *clusterState) everyNodeAnswers(names []string) ([]*corev1.Pod, string) {
	for _, name := range names {
		if !slices.Contains(st.members, name) {
			return nil, name + " does not run"
		}
	}
	out := make([]*corev1.Pod, 0, len(st.members))
	for _, name := range st.members {
		n, read := st.health.Nodes[name]
		if !read {
			return nil, "no reading of " + name + " yet"
		}
		if why := n.Unheard(st.now); why != "" {
			return nil, name + ": " + why
		}
		out = append(out, st.pods[name])
	}
	return out, ""
}
