package testcluster

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
)

// Option changes one aspect of a cluster built by Build.
type Option = func(*ackov1alpha1.AerospikeCluster)

// Build is the 3-node cluster "db/aero" with a fixed UID (so owner references can be compared), changed by opts.
func Build(opts ...Option) *ackov1alpha1.AerospikeCluster {
	c := New("db", "aero", 3)
	c.UID = "uid-1"
	for _, o := range opts {
		o(c)
	}
	return c
}

// WithRacks sets the cluster's racks.
func WithRacks(racks ...ackov1alpha1.Rack) Option {
	return func(c *ackov1alpha1.AerospikeCluster) {
		c.Spec.RackConfig = &ackov1alpha1.RackConfig{Racks: racks}
	}
}

// WithVolumes sets the cluster's storage volumes.
func WithVolumes(vols ...ackov1alpha1.VolumeSpec) Option {
	return func(c *ackov1alpha1.AerospikeCluster) { c.Spec.Storage = &ackov1alpha1.StorageSpec{Volumes: vols} }
}

// WithService sets a parameter of aerospikeConfig's service stanza.
func WithService(name string, value any) Option {
	return func(c *ackov1alpha1.AerospikeCluster) {
		svc, _ := c.Spec.AerospikeConfig.Value["service"].(map[string]any)
		if svc == nil {
			svc = map[string]any{}
		}
		svc[name] = value
		c.Spec.AerospikeConfig.Value["service"] = svc
	}
}

// WithPod sets the cluster's pod overrides.
func WithPod(o ackov1alpha1.PodOverrides) Option {
	return func(c *ackov1alpha1.AerospikeCluster) { c.Spec.PodSpec = &o }
}

// Volume is a persistent volume of the given size; an empty mode is the API default (Filesystem).
func Volume(name, path, size string, mode corev1.PersistentVolumeMode) ackov1alpha1.VolumeSpec {
	return ackov1alpha1.VolumeSpec{Name: name, Path: path, Size: resource.MustParse(size), VolumeMode: mode}
}
