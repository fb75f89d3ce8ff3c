// Package testcluster holds the AerospikeCluster that tests start from: the operations guide's
// example, a cluster of in-memory nodes with one namespace "test" and replication factor 2.
package testcluster

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
