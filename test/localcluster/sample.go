package localcluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// SampleNamespace is where Up's caller applies the 3-node sample.
const SampleNamespace = "aerospike"

func (o Options) samplePath() string {
	return filepath.Join(o.Root, "config", "samples", "acko_v1alpha1_aerospikecluster.yaml")
}

// SampleName is the name of the 3-node sample AerospikeCluster.
func (o Options) SampleName() (string, error) {
	b, err := os.ReadFile(o.samplePath())
	if err != nil {
		return "", err
	}
	var obj metav1.PartialObjectMetadata
	if err := yaml.Unmarshal(b, &obj); err != nil {
		return "", err
	}
	return obj.Name, nil
}

// ApplySample applies config/samples/acko_v1alpha1_aerospikecluster.yaml in SampleNamespace.
func (o Options) ApplySample(ctx context.Context) error {
	ns := fmt.Sprintf("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: %s\n", SampleNamespace)
	path := o.path(kwokName, "sample-namespace.yaml")
	if err := os.WriteFile(path, []byte(ns), 0o644); err != nil {
		return err
	}
	if _, err := o.Kubectl(ctx, "apply", "-f", path); err != nil {
		return err
	}
	sample := o.samplePath()
	if o.RealNodes {
		b, err := os.ReadFile(sample)
		if err != nil {
			return err
		}
		var obj map[string]any
		if err := yaml.Unmarshal(b, &obj); err != nil {
			return err
		}
		spec, _ := obj["spec"].(map[string]any)
		if spec == nil {
			return fmt.Errorf("%s has no spec", sample)
		}
		spec["podSpec"] = RealPlacement()
		if b, err = yaml.Marshal(obj); err != nil {
			return err
		}
		sample = o.path(kwokName, "sample-real.yaml")
		if err := os.WriteFile(sample, b, 0o644); err != nil {
			return err
		}
	}
	_, err := o.Kubectl(ctx, "apply", "-n", SampleNamespace, "-f", sample)
	return err
}

// RealPlacement is the spec.podSpec that puts a cluster's pods on RealNode (Options.RealNodes): its
// nodeSelector and the toleration of its taint.
func RealPlacement() map[string]any {
	return map[string]any{
		"nodeSelector": map[string]any{LabelTestBackend: TestBackendReal},
		"tolerations": []any{map[string]any{"key": LabelTestBackend, "operator": "Equal", "value": TestBackendReal,
			"effect": "NoSchedule"}},
	}
}

// Phase returns status.phase of an AerospikeCluster ("" before the reconciler writes one).
func (o Options) Phase(ctx context.Context, namespace, name string) (string, error) {
	out, err := o.Kubectl(ctx, "get", "asc", name, "-n", namespace, "-o", "jsonpath={.status.phase}")
	return strings.TrimSpace(out), err
}

// WaitSampleRunning waits for the sample to reach phase Running, printing each phase it sees.
// It is tolerant on purpose: a reconciler that writes no status yet (or is slow) gets a note,
// not a failure, and the local cluster stays up.
func (c *Cluster) WaitSampleRunning(ctx context.Context, timeout, noStatusAfter time.Duration) {
	name, err := c.opts.SampleName()
	if err != nil {
		c.logf("sample: %v", err)
		return
	}
	start, seen := time.Now(), "?"
	for time.Since(start) < timeout && ctx.Err() == nil {
		phase, err := c.opts.Phase(ctx, SampleNamespace, name)
		switch {
		case err != nil:
			c.logf("sample %s/%s: %v", SampleNamespace, name, err)
			return
		case phase != seen:
			seen = phase
			c.logf("sample %s/%s: phase %q", SampleNamespace, name, phase)
		}
		if phase == "Running" {
			return
		}
		if phase == "" && time.Since(start) > noStatusAfter {
			c.logf("sample %s/%s: no status after %s: the reconciler does not write one (yet)",
				SampleNamespace, name, noStatusAfter)
			return
		}
		time.Sleep(time.Second)
	}
	c.logf("sample %s/%s: not Running after %s (phase %q); the cluster stays up", SampleNamespace, name, timeout, seen)
}
