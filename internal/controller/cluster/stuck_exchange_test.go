package cluster

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
	"github.com/acko-io/acko/internal/aerospike"
	"github.com/acko-io/acko/internal/liveconfig"
	"github.com/acko-io/acko/internal/operations"
	"github.com/acko-io/acko/internal/podexec"
	"github.com/acko-io/acko/internal/tasks"
	"github.com/acko-io/acko/test/testcluster"
)

// restartRecorder records the warm restarts asked for; nothing else of a podexec.Signaller is used here.
type restartRecorder struct {
	podexec.Signaller
	mu        sync.Mutex
	restarted []string
}

func (s *restartRecorder) PrepareRestart(context.Context, *corev1.Pod, string) error { return nil }

func (s *restartRecorder) SignalRestart(_ context.Context, pod *corev1.Pod) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.restarted = append(s.restarted, pod.Name)
	return nil
}

func (s *restartRecorder) names() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.restarted)
}

// stuckFixture: a replication-factor change 2 → 3 recorded on every pod, in the stuck exchange of issue 39:
// every node not Ready, cluster-stable erring everywhere, aero-2 in no cluster, aero-0 and aero-1 in theirs.
func stuckFixture(t *testing.T) (*doorFixture, *restartRecorder) {
	f := newDoorFixture(t, testcluster.Build())
	signals := &restartRecorder{}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() { _ = f.r.Tasks.Start(ctx) }()
	waitRunnerStarted(f.r.Tasks)
	f.r.Executor = &operations.Executor{Signaller: signals}
	f.edit(replicationFactor(3))
	f.migrating()
	for _, name := range []string{"aero-0", "aero-1", "aero-2"} {
		f.pod(name, notReady)
		f.record(name, ackov1alpha1.PodUpdate{Method: ackov1alpha1.UpdateLiveTogether, ConfigHash: "new"})
	}
	f.node("aero-2", func(h *aerospike.NodeHealth) {
		h.Facts.ClusterSize, h.Facts.ClusterKey, h.Facts.MigratePartitionsRemaining = 0, "0", 0
		h.Facts.Uptime = 20 * time.Second
	})
	for !taskRunnerStarted(f) {
		time.Sleep(time.Millisecond)
	}
	return f, signals
}

// taskRunnerStarted: the runner takes tasks (before Start, Run records ErrNotRunning at once).
func taskRunnerStarted(f *doorFixture) bool {
	key := tasks.Key{Cluster: f.key, Name: "probe"}
	f.r.Tasks.Run(key, func(context.Context) (string, error) { return "", nil })
	f.awaitTask()
	return f.r.Tasks.Take(f.key)["probe"].Err == nil
}

// awaitTask waits until the cluster's background task, if any, ended.
func (f *doorFixture) awaitTask() {
	for {
		if _, busy := f.r.Tasks.Busy(f.key); !busy {
			return
		}
		time.Sleep(time.Millisecond)
	}
}

// saysWhatHappens: the Reconciling reason and an event say that the exchange is stuck and which node ends it.
func saysWhatHappens(t *testing.T, st *clusterState) {
	t.Helper()
	if st.work == nil || st.work.reason != ackov1alpha1.ReasonReplicationFactorConflict {
		t.Fatalf("the status does not say what happens: %+v", st.work)
	}
	if !slices.ContainsFunc(st.events, func(e pendingEvent) bool {
		return e.reason == ackov1alpha1.EventReplicationFactorConflict && strings.Contains(e.message, "restarting aero-2")
	}) {
		t.Fatalf("no ReplicationFactorConflict event naming aero-2: %+v", st.events)
	}
}

// freshReadings: the prober read every node just after the moment the test is at.
func (f *doorFixture) freshReadings() {
	for name := range f.prober.health.Nodes {
		f.node(name, func(h *aerospike.NodeHealth) { h.ReadAt = doorNow.Add(time.Millisecond) })
	}
}

// The operator's way out of issue 39's stuck exchange: a replication-factor change that finds it says so
// (an event and the Reconciling reason ReplicationFactorConflict), restarts in place exactly the node in no
// cluster through the door, recorded before the signal, and once that node restarted runs the change again
// (which waits for the rebalance).
func TestAStuckExchangeEndsByRestartingTheNodeOutside(t *testing.T) {
	f, signals := stuckFixture(t)
	names := []string{"aero-0", "aero-1", "aero-2"}
	st := f.observe()
	st.results = map[string]tasks.Result{togetherTask: {Err: &liveconfig.StuckExchangeError{Outside: []string{"aero-2"},
		Answers: "aero-0: ignored-by-non-principal; aero-1: ignored-by-non-principal; aero-2: ERROR::unknown"}}}
	why, err := f.r.applyTogether(f.ctx, st, names)
	if err != nil || !strings.HasPrefix(why, waitingForReadings) {
		t.Fatalf("first pass: %q, %v: want fresh readings asked for", why, err)
	}
	saysWhatHappens(t, st)
	f.freshReadings()
	why, err = f.afterLastLook(func(st *clusterState) (string, error) { return f.r.applyTogether(f.ctx, st, names) }, nil)
	if err != nil || why != "restarting asd in aero-2" {
		t.Fatalf("after the last look: %q, %v", why, err)
	}
	if u := f.cluster().Status.Pods["aero-2"].Update; u.Attempted == nil || u.NodeStartedBefore == nil {
		t.Fatalf("the restart was not recorded before the signal: %+v", u)
	}
	f.awaitTask()
	if got := signals.names(); len(got) > 0 {
		t.Fatalf("signalled %v with the preparation, before the door looked again", got)
	}
	signalAfterLastLook(t, f, signals, names)

	// The next reconcile, before the node shows its restart: no second signal.
	if why, _ := f.r.applyTogether(f.ctx, f.observe(), names); !strings.Contains(why, "settling") {
		t.Fatalf("before the restart shows: %q, want the attempt settled first", why)
	}
	f.node("aero-2", func(h *aerospike.NodeHealth) { h.Facts.Uptime, h.ReadAt = 0, doorNow.Add(2*time.Second) })
	st = f.observe()
	why, err = f.r.applyTogether(f.ctx, st, names)
	if err != nil || !strings.HasPrefix(why, "restarted aero-2") {
		t.Fatalf("once restarted: %q, %v", why, err)
	}
	if outside := f.r.stuck.keys(f.key); len(outside) != 0 {
		t.Fatalf("still ending a stuck exchange on %v", outside)
	}
	if u := f.cluster().Status.Pods["aero-2"].Update; u.Attempted != nil {
		t.Fatalf("the attempt was not cleared: %+v", u)
	}
	if got := signals.names(); len(got) != 1 {
		t.Fatalf("restarted %v: a second signal", got)
	}
}

// A finding that names a node holding data (in a cluster) never restarts it: the finding is dropped (the
// door would hold it too: TestTheDoorEndsAStuckExchangeOnlyByTheNodeOutside).
func TestAStuckExchangeNeverRestartsANodeHoldingData(t *testing.T) {
	f, signals := stuckFixture(t)
	names := []string{"aero-0", "aero-1", "aero-2"}
	f.r.stuck.set(f.key, "aero-1", doorNow.Add(-time.Second))
	f.freshReadings()
	why, err := f.afterLastLook(func(st *clusterState) (string, error) { return f.r.applyTogether(f.ctx, st, names) }, nil)
	if err != nil || why != "the exchange is no longer stuck: aero-1 is in a cluster" || len(f.r.stuck.keys(f.key)) != 0 {
		t.Fatalf("restarting aero-1, in a cluster: %q, %v: want the finding dropped", why, err)
	}
	if got := signals.names(); len(got) != 0 {
		t.Fatalf("restarted %v", got)
	}
}

// signalAfterLastLook: the signal itself goes through the door, after its own last look (issue 38), and
// restarts exactly aero-2.
func signalAfterLastLook(t *testing.T, f *doorFixture, signals *restartRecorder, names []string) {
	t.Helper()
	why, err := f.afterLastLook(func(st *clusterState) (string, error) { return f.r.applyTogether(f.ctx, st, names) }, nil)
	if err != nil || why != "restarting asd in aero-2" {
		t.Fatalf("the signal after the last look: %q, %v", why, err)
	}
	f.awaitTask()
	if got := signals.names(); !slices.Equal(got, []string{"aero-2"}) {
		t.Fatalf("restarted %v, want exactly aero-2", got)
	}
}
