package liveconfig

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
	"github.com/acko-io/acko/internal/aerospike"
	"github.com/acko-io/acko/internal/config"
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

func (f *podFiles) WarmRestart(context.Context, *corev1.Pod, string) error {
	return errors.New("a live change must never restart asd")
}

// renderWith is the config of the test cluster (on image), changed by change.
func renderWith(t *testing.T, change func(c *ackov1alpha1.AerospikeCluster)) string {
	t.Helper()
	c := testcluster.Build(func(c *ackov1alpha1.AerospikeCluster) { c.Spec.Image = image })
	if change != nil {
		change(c)
	}
	return render(t, c)
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
	st, err := sim.AddNode(aerosim.NodeSpec{Name: "aero-0", Config: conf, Image: image})
	if err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "aero-0"},
		Spec:   corev1.PodSpec{Containers: []corev1.Container{{Name: ackov1alpha1.AerospikeContainerName, Image: image}}},
		Status: corev1.PodStatus{PodIP: st.IP}}
	return sim, pod
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
	files := &podFiles{own: before, projected: after}
	a := &Applier{Pods: files, Info: aerospike.NewClient(aerospike.ClientOptions{})}

	applied, err := a.Apply(context.Background(), pod, config.Hash(after))
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
			files := &podFiles{own: before, projected: tc.after}
			hash := tc.hash
			if hash == "" {
				hash = config.Hash(tc.after)
			}
			a := &Applier{Pods: files, Info: aerospike.NewClient(aerospike.ClientOptions{})}
			if _, err := a.Apply(context.Background(), pod, hash); !errors.Is(err, tc.target) {
				t.Fatalf("Apply: %v, want %v", err, tc.target)
			}
			if got := serviceValue(t, pod, "proto-fd-max"); got != "15000" || len(files.copied) > 0 {
				t.Errorf("something changed: proto-fd-max=%s, copies %v", got, files.copied)
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
	a := &Applier{Pods: &podFiles{own: before, projected: after}, Info: aerospike.NewClient(aerospike.ClientOptions{})}
	applied, err := a.Apply(context.Background(), pod, config.Hash(after))
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
	a := &Applier{Pods: &podFiles{own: before, projected: after}, Info: aerospike.NewClient(aerospike.ClientOptions{})}
	applied, err := a.Apply(context.Background(), pod, config.Hash(after))
	if err != nil || !strings.HasSuffix(applied, ";geo2dsphere-within-max-cells=13") {
		t.Fatalf("applied %q, %v", applied, err)
	}
}
