// Package testcluster holds the AerospikeCluster that tests start from: the operations guide's
// example, a cluster of in-memory nodes with one namespace "test" and replication factor 2.
package testcluster

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
)

// Image is the image of the guide's example.
const Image = "aerospike:ce-8.1.1.1"

// New returns a valid cluster of size nodes; tests change what they need on it.
func New(namespace, name string, size int32) *ackov1alpha1.AerospikeCluster {
	return &ackov1alpha1.AerospikeCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: ackov1alpha1.AerospikeClusterSpec{
			Size:  size,
			Image: Image,
			AerospikeConfig: &ackov1alpha1.AerospikeConfig{Value: map[string]any{
				"namespaces": []any{map[string]any{
					"name": "test", "replication-factor": int64(2),
					"storage-engine": map[string]any{"type": "memory"},
				}},
			}},
		},
	}
}

// Sample is one file of config/samples, decoded.
type Sample struct {
	// Path of the file.
	Path string
	// Cluster as the file declares it (no namespace).
	Cluster *ackov1alpha1.AerospikeCluster
}

// Samples decodes every AerospikeCluster sample in config/samples, strictly: a field the API does
// not have is an error.
func Samples() ([]Sample, error) {
	_, file, _, _ := runtime.Caller(0)
	dir := filepath.Join(filepath.Dir(file), "..", "..", "config", "samples")
	files, err := filepath.Glob(filepath.Join(dir, "acko_*.yaml"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no samples in %s", dir)
	}
	samples := make([]Sample, 0, len(files))
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		c := &ackov1alpha1.AerospikeCluster{}
		if err := yaml.UnmarshalStrict(data, c); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		samples = append(samples, Sample{Path: f, Cluster: c})
	}
	return samples, nil
}

// SampleNamed is the sample of config/samples with this file name, in namespace "db".
func SampleNamed(file string) (*ackov1alpha1.AerospikeCluster, error) {
	samples, err := Samples()
	if err != nil {
		return nil, err
	}
	for _, s := range samples {
		if filepath.Base(s.Path) == file {
			s.Cluster.Namespace = "db"
			return s.Cluster, nil
		}
	}
	return nil, fmt.Errorf("no sample %s", file)
}
