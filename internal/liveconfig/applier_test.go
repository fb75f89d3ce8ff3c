package liveconfig

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
	"github.com/acko-io/acko/internal/aerospike"
	"github.com/acko-io/acko/internal/config"
	"github.com/acko-io/acko/internal/config/live"
	"github.com/acko-io/acko/internal/config/params"
	"github.com/acko-io/acko/internal/podexec"
	"github.com/acko-io/acko/test/aerosim"
	"github.com/acko-io/acko/test/testcluster"
)

const image = "aerospike:ce-8.1.2.0"

// podFiles stands in for exec into the pod: the two config files it holds, and the copies made.
type podFiles struct {
	own, projected string
	copied         []string // config hashes copied into place
}

func (f *podFiles) ReadConfigs(context.Context, *corev1.Pod) (string, string, error) {
	return f.own, f.projected, nil
}

func (f *podFiles) CopyConfig(_ context.Context, _ *corev1.Pod, configHash string) error {
	f.copied = append(f.copied, configHash)
	return nil
}

func (f *podFiles) PrepareRestart(context.Context, *corev1.Pod, string) error {
	return errors.New("a live change must never restart asd")
}

func (f *podFiles) SignalRestart(context.Context, *corev1.Pod) error {
	return errors.New("a live change must never restart asd")
}

// renderWith is the config template of the test cluster (on image), changed by change: podFile gives a
// pod's own file.
func renderWith(t *testing.T, change func(c *ackov1alpha1.AerospikeCluster)) string {
	t.Helper()
	c := testcluster.Build(func(c *ackov1alpha1.AerospikeCluster) { c.Spec.Image = image })
	if change != nil {
		change(c)
	}
	return render(t, c)
}

// podFile is the own file of the test cluster's pod with this ordinal.
func podFile(template string, ordinal int32) string {
	return config.PodFile(template, config.PodValues{NodeID: config.NodeID(0, ordinal)})
}

// node starts a simulated asd (real info protocol over TCP, held to the server's rules) on the given config,
// and returns the pod it stands for.
func node(t *testing.T, conf string) (*aerosim.Sim, *corev1.Pod) {
	t.Helper()
	sim, err := aerosim.New(aerosim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sim.Close() })
	st, err := sim.AddNode(aerosim.NodeSpec{Name: "aero-0", Config: podFile(conf, 0), Image: image})
	if err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "aero-0"},
		Spec:   corev1.PodSpec{Containers: []corev1.Container{{Name: ackov1alpha1.AerospikeContainerName, Image: image}}},
		Status: corev1.PodStatus{PodIP: st.IP}}
	return sim, pod
}

// planned is the change of the test cluster's pod with this ordinal from before to after, planned as the
// operator plans it (from the files it keeps, the pod's node id filled in).
func planned(t *testing.T, before, after string, ordinal int32) Change {
	t.Helper()
	plan, err := live.Compute(podFile(before, ordinal), podFile(after, ordinal), params.Newest())
	if err != nil {
		t.Fatal(err)
	}
	return Change{From: config.Hash(before), To: config.Hash(after), Plan: &plan}
}

func serviceValue(t *testing.T, pod *corev1.Pod, name string) string {
	t.Helper()
	answers, err := aerospike.NewClient(aerospike.ClientOptions{}).Info(context.Background(),
		pod.Status.PodIP+":3000", "get-config:context=service")
	if err != nil {
		t.Fatal(err)
	}
	for kv := range strings.SplitSeq(answers["get-config:context=service"], ";") {
		if k, v, _ := strings.Cut(kv, "="); k == name {
			return v
		}
	}
	t.Fatalf("get-config has no %s: %s", name, answers)
	return ""
}

func TestApplyDynamicChangeLive(t *testing.T) {
	before, after := renderWith(t, nil), renderWith(t, testcluster.WithService("proto-fd-max", int64(20000)))
	sim, pod := node(t, before)
	files := &podFiles{own: podFile(before, 0), projected: podFile(after, 0)}
	a := &Applier{Pods: files, Info: aerospike.NewClient(aerospike.ClientOptions{})}

	applied, err := a.Apply(context.Background(), pod, planned(t, before, after, 0))
	if err != nil {
		t.Fatal(err)
	}
	if applied != "set-config:context=service;proto-fd-max=20000" {
		t.Errorf("applied %q", applied)
	}
	if got := serviceValue(t, pod, "proto-fd-max"); got != "20000" {
		t.Errorf("the node runs proto-fd-max=%s after the live change", got)
	}
	if len(files.copied) != 1 || files.copied[0] != config.Hash(after) {
		t.Errorf("the pod's own copy was not kept in step: %v", files.copied)
	}
	st, err := sim.Node("aero-0")
	if err != nil {
		t.Fatal(err)
	}
	if st.Restarts != 0 {
		t.Errorf("asd restarted %d times for a live change", st.Restarts)
	}
}

func TestApplyRefusesWhatNeedsARestart(t *testing.T) {
	before := renderWith(t, nil)
	for _, tc := range []struct {
		name   string
		after  string
		hash   string
		target error
	}{
		{"a static parameter", renderWith(t, testcluster.WithService("work-directory", "/opt/aerospike/other")), "",
			ErrNeedsRestart},
		{"a config the kubelet has not projected yet", before, "0123456789abcdef", podexec.ErrNotProjected},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, pod := node(t, before)
			files := &podFiles{own: podFile(before, 0), projected: podFile(tc.after, 0)}
			change := planned(t, before, tc.after, 0)
			if tc.hash != "" {
				change.To = tc.hash
			}
			a := &Applier{Pods: files, Info: aerospike.NewClient(aerospike.ClientOptions{})}
			if _, err := a.Apply(context.Background(), pod, change); !errors.Is(err, tc.target) {
				t.Fatalf("Apply: %v, want %v", err, tc.target)
			}
			if got := serviceValue(t, pod, "proto-fd-max"); got != "15000" || len(files.copied) > 0 {
				t.Errorf("something changed: proto-fd-max=%s, copies %v", got, files.copied)
			}
		})
	}
}

// The plan is the operator's, made from the config the pod records, not the pod's own copy: a copy made
// before the pod recorded it (a restart in place prepared and then given up, a live change whose record
// was lost) says the node runs the new values when it may not. A copy that is neither config ends the
// live change (a restart loads the projected file); with no plan, the applier plans from the copy.
func TestApplyTakesTheOperatorsPlan(t *testing.T) {
	before, after := renderWith(t, nil), renderWith(t, testcluster.WithService("proto-fd-max", int64(20000)))
	other := renderWith(t, testcluster.WithService("proto-fd-max", int64(18000)))
	for _, tc := range []struct {
		name      string
		own       string
		operators bool // the operator hands its plan
		want      string
		err       error
	}{
		{"the own copy is the new config already", after, true, "20000", nil},
		{"the own copy is the one the plan starts from", before, true, "20000", nil},
		{"the own copy is another config", other, true, "15000", ErrNeedsRestart},
		{"no plan: planned from the own copy", before, false, "20000", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, pod := node(t, before)
			files := &podFiles{own: podFile(tc.own, 0), projected: podFile(after, 0)}
			change := planned(t, before, after, 0)
			if !tc.operators {
				change.Plan = nil
			}
			a := &Applier{Pods: files, Info: aerospike.NewClient(aerospike.ClientOptions{})}
			if _, err := a.Apply(context.Background(), pod, change); !errors.Is(err, tc.err) {
				t.Fatalf("Apply: %v, want %v", err, tc.err)
			}
			if got := serviceValue(t, pod, "proto-fd-max"); got != tc.want {
				t.Errorf("the node runs proto-fd-max=%s, want %s", got, tc.want)
			}
			if copied := len(files.copied) > 0; copied != (tc.err == nil) {
				t.Errorf("copies %v after %v", files.copied, tc.err)
			}
		})
	}
}

// Which plan a change takes at the act, from the pod's own copy: the operator's while the copy stands for
// it; a single node's change is restarted when it does not, a change every node takes together (which
// never restarts) plans from the copy.
func TestChangePlanOn(t *testing.T) {
	before, after := renderWith(t, nil), renderWith(t, testcluster.WithService("proto-fd-max", int64(20000)))
	other := renderWith(t, testcluster.WithService("proto-fd-max", int64(18000)))
	_, pod := node(t, before)
	operators := planned(t, before, after, 0)
	for _, tc := range []struct {
		name     string
		own      string
		plan     bool
		alone    int // steps of the plan a single node takes
		stale    bool
		together int // steps of the plan it takes in a change of every node
	}{
		{"the copy is the planned-from config", before, true, 1, false, 1},
		{"the copy is the target already: the operator's plan still goes out", after, true, 1, false, 1},
		{"the copy is neither", other, true, 0, true, 1},
		{"no plan, the copy is the target: nothing to send", after, false, 0, false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			change := operators
			if !tc.plan {
				change.Plan = nil
			}
			plan, err := change.planOn(pod, podFile(tc.own, 0), podFile(after, 0))
			if errors.Is(err, errPlanStale) != tc.stale || len(plan.Steps) != tc.alone {
				t.Errorf("alone: %d steps, %v; want %d, stale %v", len(plan.Steps), err, tc.alone, tc.stale)
			}
			a := &Applier{Pods: &podFiles{own: podFile(tc.own, 0), projected: podFile(after, 0)}}
			plan, err = a.togetherPlan(context.Background(), pod, change)
			if err != nil || len(plan.Steps) != tc.together {
				t.Errorf("together: %d steps, %v; want %d", len(plan.Steps), err, tc.together)
			}
		})
	}
}

func setLogging(levels map[string]any) func(c *ackov1alpha1.AerospikeCluster) {
	return func(c *ackov1alpha1.AerospikeCluster) { c.Spec.AerospikeConfig.Value["logging"] = levels }
}

// A new level for "any" reaches every context and leaves the explicit ones at their level; log/0,
// which never lists "any", confirms it.
func TestApplyLogContextAny(t *testing.T) {
	before := renderWith(t, setLogging(map[string]any{"hb": "debug"}))
	after := renderWith(t, setLogging(map[string]any{"any": "warning", "hb": "debug"}))
	_, pod := node(t, before)
	a := &Applier{Pods: &podFiles{own: podFile(before, 0), projected: podFile(after, 0)}, Info: aerospike.NewClient(aerospike.ClientOptions{})}
	applied, err := a.Apply(context.Background(), pod, planned(t, before, after, 0))
	if err != nil {
		t.Fatal(err)
	}
	if applied != "log-set:id=0;any=warning, log-set:id=0;hb=debug" {
		t.Errorf("applied %q", applied)
	}
	answers, err := aerospike.NewClient(aerospike.ClientOptions{}).Info(context.Background(), pod.Status.PodIP+":3000", "log/0")
	if err != nil {
		t.Fatal(err)
	}
	levels := answers["log/0"]
	if !strings.Contains(levels, ";hb:DEBUG;") || !strings.Contains(levels, ";migrate:WARNING;") || strings.Contains(levels, "INFO") {
		t.Errorf("log/0 after the change: %s", levels)
	}
}

// A geo2dsphere-within parameter goes live in the form the server takes.
func TestApplyGeo2dsphereWithin(t *testing.T) {
	setGeo := func(c *ackov1alpha1.AerospikeCluster) {
		ns := c.Spec.AerospikeConfig.Value["namespaces"].([]any)[0].(map[string]any)
		ns["geo2dsphere-within"] = map[string]any{"max-cells": int64(13)}
	}
	before, after := renderWith(t, nil), renderWith(t, setGeo)
	_, pod := node(t, before)
	a := &Applier{Pods: &podFiles{own: podFile(before, 0), projected: podFile(after, 0)}, Info: aerospike.NewClient(aerospike.ClientOptions{})}
	applied, err := a.Apply(context.Background(), pod, planned(t, before, after, 0))
	if err != nil || !strings.HasSuffix(applied, ";geo2dsphere-within-max-cells=13") {
		t.Fatalf("applied %q, %v", applied, err)
	}
}

// podsFiles stands in for exec into several pods, by pod name.
type podsFiles map[string]*podFiles

func (f podsFiles) ReadConfigs(ctx context.Context, pod *corev1.Pod) (string, string, error) {
	return f[pod.Name].ReadConfigs(ctx, pod)
}

func (f podsFiles) CopyConfig(ctx context.Context, pod *corev1.Pod, configHash string) error {
	return f[pod.Name].CopyConfig(ctx, pod, configHash)
}

func (f podsFiles) PrepareRestart(context.Context, *corev1.Pod, string) error {
	return errors.New("a live change must never restart asd")
}

func (f podsFiles) SignalRestart(context.Context, *corev1.Pod) error {
	return errors.New("a live change must never restart asd")
}

// threeNodes starts the test cluster's three nodes on conf (with the simulator's timings opts), found by their pods' DNS names (the rendered
// mesh seeds), and waits until they form one cluster.
func threeNodes(t *testing.T, conf string, opts aerosim.Options) (*aerosim.Sim, []*corev1.Pod) {
	t.Helper()
	sim, err := aerosim.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sim.Close() })
	c := testcluster.Build()
	records := map[string][]string{}
	var pods []*corev1.Pod
	for i := range int32(3) {
		name := c.PodName(0, i)
		st, err := sim.AddNode(aerosim.NodeSpec{Name: name, Config: podFile(conf, i), Image: image})
		if err != nil {
			t.Fatal(err)
		}
		records[c.PodDNSName(name, ackov1alpha1.DefaultClusterDomain)] = []string{st.IP}
		pods = append(pods, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec:   corev1.PodSpec{Containers: []corev1.Container{{Name: ackov1alpha1.AerospikeContainerName, Image: image}}},
			Status: corev1.PodStatus{PodIP: st.IP}})
	}
	if err := sim.SetDNS(records); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for _, p := range pods {
		for namespaceStats(t, p)["ns_cluster_size"] != "3" {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not one cluster of 3: %v", p.Name, namespaceStats(t, p)["ns_cluster_size"])
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return sim, pods
}

func namespaceStats(t *testing.T, pod *corev1.Pod) map[string]string {
	t.Helper()
	answers, err := aerospike.NewClient(aerospike.ClientOptions{}).Info(context.Background(), pod.Status.PodIP+":3000",
		"namespace/test")
	if err != nil {
		t.Fatal(err)
	}
	return aerospike.ParseKV(answers["namespace/test"])
}

func setRF(rf int64) func(c *ackov1alpha1.AerospikeCluster) {
	return func(c *ackov1alpha1.AerospikeCluster) {
		c.Spec.AerospikeConfig.Value["namespaces"].([]any)[0].(map[string]any)["replication-factor"] = rf
	}
}

// togetherSetup is three nodes on replication-factor 2 whose pods show the config with 3, and an
// applier for them.
func togetherSetup(t *testing.T) (*aerosim.Sim, []*corev1.Pod, podsFiles, map[string]Change, *Applier, string) {
	t.Helper()
	return togetherSetupWith(t, aerosim.Options{})
}

// togetherSetupWith is togetherSetup with the simulator's timings.
func togetherSetupWith(t *testing.T, opts aerosim.Options) (*aerosim.Sim, []*corev1.Pod, podsFiles, map[string]Change, *Applier, string) {
	t.Helper()
	before, after := renderWith(t, setRF(2)), renderWith(t, setRF(3))
	sim, pods := threeNodes(t, before, opts)
	files, changes := podsFiles{}, map[string]Change{}
	for i, p := range pods {
		files[p.Name] = &podFiles{own: podFile(before, int32(i)), projected: podFile(after, int32(i))}
		changes[p.Name] = planned(t, before, after, int32(i))
	}
	return sim, pods, files, changes, &Applier{Pods: files, Info: aerospike.NewClient(aerospike.ClientOptions{})}, before
}

// A pod whose kubelet has not projected the new file yet holds the change on every node: none is set.
func TestApplyTogetherWaitsForEveryPod(t *testing.T) {
	_, pods, files, changes, a, before := togetherSetup(t)
	files[pods[2].Name].projected = podFile(before, 2)
	if _, err := a.ApplyTogether(context.Background(), pods, pods, changes); !errors.Is(err, podexec.ErrNotProjected) {
		t.Fatalf("ApplyTogether with a config not projected: %v", err)
	}
	for _, p := range pods {
		if kv := namespaceStats(t, p); kv["replication-factor"] != "2" || len(files[p.Name].copied) > 0 {
			t.Fatalf("%s changed before every pod was ready for it: %v, copies %v", p.Name, kv["replication-factor"], files[p.Name].copied)
		}
	}
}

// A new replication-factor reaches every node live, then one recluster puts it in effect everywhere;
// no asd restarts, and each pod's own copy of the config keeps in step.
func TestApplyTogether(t *testing.T) {
	sim, pods, files, changes, a, _ := togetherSetup(t)
	applied, err := a.ApplyTogether(context.Background(), pods, pods, changes)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(applied, "replication-factor test=3 on 3 nodes; reclustered by aero-") {
		t.Errorf("applied %q", applied)
	}
	for _, p := range pods {
		kv := namespaceStats(t, p)
		if kv["replication-factor"] != "3" || kv["effective_replication_factor"] != "3" || kv["ns_cluster_size"] != "3" {
			t.Errorf("%s: replication-factor=%s effective=%s size=%s", p.Name, kv["replication-factor"],
				kv["effective_replication_factor"], kv["ns_cluster_size"])
		}
		if got := files[p.Name].copied; len(got) != 1 || got[0] != changes[p.Name].To {
			t.Errorf("%s: the pod's own copy was not kept in step: %v", p.Name, got)
		}
		if st, err := sim.Node(p.Name); err != nil || st.Restarts != 0 {
			t.Errorf("%s: asd restarted (%+v, %v)", p.Name, st, err)
		}
	}
}

// The change is done only once the cluster has rebalanced: every node answers cluster-stable (migrations
// included) when ApplyTogether returns, not only the factor in effect (a real cluster kept migrating
// about 2700 partitions per node for 13 s more).
func TestApplyTogetherWaitsForTheRebalance(t *testing.T) {
	_, pods, _, changes, a, _ := togetherSetupWith(t, aerosim.Options{MigrationDuration: 2 * time.Second,
		JoinDelay: 100 * time.Millisecond, DropDelay: 100 * time.Millisecond})
	time.Sleep(2 * time.Second) // the formation's migrations
	applied, err := a.ApplyTogether(context.Background(), pods, pods, changes)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods {
		answers, err := aerospike.NewClient(aerospike.ClientOptions{}).Info(context.Background(), p.Status.PodIP+":3000",
			aerospike.ClusterStableCommand(3, false))
		if _, stableErr := aerospike.ParseClusterStable(answers[aerospike.ClusterStableCommand(3, false)]); err != nil || stableErr != nil {
			t.Fatalf("%s: reported done (%q) while the cluster is not stable: %v %v", p.Name, applied, err, stableErr)
		}
	}
	if !strings.Contains(applied, "stable (migrations done) after") {
		t.Errorf("applied %q", applied)
	}
}

// A node that leaves while the change waits for its migrations ends the wait once it has been gone for
// the patience, not at the 15 minutes' deadline: the cluster of those nodes will not be stable again,
// and the change is run again over the nodes there are.
func TestApplyTogetherEndsWhenANodeLeaves(t *testing.T) {
	defer func(p time.Duration) { clusterGonePatience = p }(clusterGonePatience)
	clusterGonePatience = time.Second
	sim, pods, _, changes, a, _ := togetherSetupWith(t, aerosim.Options{MigrationDuration: time.Minute,
		JoinDelay: 100 * time.Millisecond, DropDelay: 100 * time.Millisecond})
	go func() {
		time.Sleep(time.Second)
		if err := sim.RemoveNode(pods[2].Name); err != nil {
			t.Error(err)
		}
	}()
	start := time.Now()
	_, err := a.ApplyTogether(context.Background(), pods, pods, changes)
	if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "no longer form one cluster of them all") {
		t.Fatalf("ApplyTogether with a node gone: %v", err)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("the wait ended %s after the change began, not within the patience of the node's leaving", took)
	}
}

// stuckSetup is togetherSetup with the exchange stuck: the first two nodes took replication-factor 3 by
// set-config, then the third restarted on its file's 2.
func stuckSetup(t *testing.T) ([]*corev1.Pod, podsFiles, map[string]Change, *Applier) {
	t.Helper()
	sim, pods, files, changes, a, _ := togetherSetupWith(t, aerosim.Options{JoinDelay: 100 * time.Millisecond,
		DropDelay: 100 * time.Millisecond, RestartDowntime: 20 * time.Millisecond})
	const cmd = "set-config:context=namespace;id=test;replication-factor=3"
	for _, p := range pods[:2] {
		answers, err := a.Info.Info(context.Background(), p.Status.PodIP+":3000", cmd)
		if err != nil || answers[cmd] != "ok" {
			t.Fatalf("set-config: %v %v", answers, err)
		}
	}
	if _, err := sim.WarmRestart(pods[2].Name); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	return pods, files, changes, a
}

// A node that came back with the old factor after the others took the new one sticks the exchange:
// ApplyTogether sets the new factor on every node, the recluster is refused for good, and it names the
// node in no cluster (the one whose restart ends it).
func TestApplyTogetherFindsTheStuckExchange(t *testing.T) {
	pods, files, changes, a := stuckSetup(t)
	_, err := a.ApplyTogether(context.Background(), pods, pods, changes)
	var stuck *StuckExchangeError
	if !errors.As(err, &stuck) || !errors.Is(err, ErrRefused) || !slices.Equal(stuck.Outside, []string{pods[2].Name}) {
		t.Fatalf("ApplyTogether in a stuck exchange: %v", err)
	}
	for _, p := range pods {
		if kv := namespaceStats(t, p); kv["replication-factor"] != "3" || len(files[p.Name].copied) != 1 {
			t.Errorf("%s: the file and the running value are not at the new factor: %s, copies %v", p.Name,
				kv["replication-factor"], files[p.Name].copied)
		}
	}
}

// A node whose asd was down when the change began (not in it) and came back with the old factor is
// found outside the stuck exchange too: the change looks at every pod of the cluster.
func TestApplyTogetherFindsTheStuckExchangeOutsideTheChange(t *testing.T) {
	pods, _, changes, a := stuckSetup(t)
	_, err := a.ApplyTogether(context.Background(), pods[:2], pods, changes)
	var stuck *StuckExchangeError
	if !errors.As(err, &stuck) || !slices.Equal(stuck.Outside, []string{pods[2].Name}) {
		t.Fatalf("ApplyTogether on two nodes beside a third in no cluster: %v", err)
	}
}

// okRecluster is a real principal in the moment before the exchange sticks: it answers recluster: with
// ok (and starts nothing that ends the conflict).
type okRecluster struct{ aerospike.InfoClient }

func (c okRecluster) Info(ctx context.Context, addr string, commands ...string) (map[string]string, error) {
	if len(commands) == 1 && commands[0] == cmdRecluster {
		return map[string]string{cmdRecluster: reclusterOK}, nil
	}
	return c.InfoClient.Info(ctx, addr, commands...)
}

// The stuck exchange is found from the nodes' readings, not from the recluster's answer: a principal that
// said ok before the exchange stuck leaves ApplyTogether naming the node in no cluster, not "not stable".
func TestApplyTogetherFindsTheStuckExchangeAfterAnOK(t *testing.T) {
	pods, _, changes, a := stuckSetup(t)
	a.Info = okRecluster{a.Info}
	_, err := a.ApplyTogether(context.Background(), pods, pods, changes)
	var stuck *StuckExchangeError
	if !errors.As(err, &stuck) || !slices.Equal(stuck.Outside, []string{pods[2].Name}) ||
		!strings.Contains(stuck.Answers, pods[0].Name+": ok") {
		t.Fatalf("ApplyTogether in a stuck exchange whose principal said ok: %v", err)
	}
}
