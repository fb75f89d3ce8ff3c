package validation

import (
	"fmt"
	"slices"
	"testing"

	"k8s.io/utils/ptr"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
)

func expectWarnings(t *testing.T, got []string, want ...string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Errorf("warnings:\n got  %q\n want %q", got, want)
	}
}

// capped is the warning of a batch larger than replication-factor − 1 allows.
func capped(batch, limit, rf int) string {
	return fmt.Sprintf("spec.rollingUpdateBatchSize: %d is more than replication-factor − 1 allows: batches are "+
		"capped at %d pod(s) (the smallest replication-factor is %d, counting no more copies than nodes), so that "+
		"never two copies of a partition are down at once", batch, limit, rf)
}

func setRF(c *ackov1alpha1.AerospikeCluster, rf int64) {
	c.Spec.AerospikeConfig.Value["namespaces"].([]any)[0].(map[string]any)["replication-factor"] = rf
}

func TestWarnings(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*ackov1alpha1.AerospikeCluster)
		want   []string
	}{
		{"none for the guide's example", func(*ackov1alpha1.AerospikeCluster) {}, nil},
		{"a batch above replication-factor − 1 is capped", func(c *ackov1alpha1.AerospikeCluster) {
			c.Spec.RollingUpdateBatchSize = ptr.To[int32](5)
		}, []string{capped(5, 1, 2)}},
		{"a batch as large as the cluster is capped too (replication-factor 4 on 3 nodes allows 2)", func(c *ackov1alpha1.AerospikeCluster) {
			c.Spec.RollingUpdateBatchSize = ptr.To[int32](3)
			setRF(c, 4)
		}, []string{capped(3, 2, 4),
			`namespace "test": replication-factor 4 is greater than the cluster size 3: ` +
				"Aerospike keeps only 3 copies until the cluster grows"}},
		{"none for a batch within replication-factor − 1", func(c *ackov1alpha1.AerospikeCluster) {
			c.Spec.Size = 5
			c.Spec.RollingUpdateBatchSize = ptr.To[int32](2)
			setRF(c, 3)
		}, nil},
		{"the smallest replication-factor over the namespaces caps", func(c *ackov1alpha1.AerospikeCluster) {
			c.Spec.Size = 5
			c.Spec.RollingUpdateBatchSize = ptr.To[int32](3)
			setRF(c, 4)
			c.Spec.AerospikeConfig.Value["namespaces"] = append(c.Spec.AerospikeConfig.Value["namespaces"].([]any),
				map[string]any{"name": "other", "storage-engine": map[string]any{"type": "memory"}})
		}, []string{capped(3, 1, 2)}},
		{"replication-factor 1: one pod at a time, and what a restart costs", func(c *ackov1alpha1.AerospikeCluster) {
			c.Spec.RollingUpdateBatchSize = ptr.To[int32](2)
			setRF(c, 1)
		}, []string{capped(2, 1, 1),
			`namespace "test": replication-factor 1 keeps a single copy of each record: each restart loses that ` +
				`node's in-memory data (storage-engine memory) and takes its records offline until the node is back; ` +
				`a rolling restart, a scale-down or a PodRestart costs that much for every pod, one pod at a time`}},
		{"an image whose version the tag does not name", func(c *ackov1alpha1.AerospikeCluster) {
			c.Spec.Image = "aerospike:latest"
		}, []string{"spec.image: the Aerospike server version cannot be read from the image's tag: aerospikeConfig " +
			"is checked against the newest parameter table (8.1.2); use a tag such as ce-8.1.2.0 to check it against " +
			"the image's own version"}},
		{"an image newer than every table", func(c *ackov1alpha1.AerospikeCluster) {
			c.Spec.Image = "aerospike:ce-8.2.0.1"
		}, []string{"spec.image: Aerospike 8.2.0.1 is newer than the newest parameter table ACKO has (8.1.2): " +
			"aerospikeConfig is checked against 8.1.2's parameters"}},
		{"racks without pods", func(c *ackov1alpha1.AerospikeCluster) {
			c.Spec.Size = 2
			c.Spec.RackConfig = &ackov1alpha1.RackConfig{Racks: []ackov1alpha1.Rack{{ID: 3}, {ID: 1}, {ID: 2}}}
			c.Spec.AerospikeConfig.Value["namespaces"].([]any)[0].(map[string]any)["replication-factor"] = int64(2)
		}, []string{"spec.rackConfig.racks: 3 racks for 2 pods: rack(s) 3 get no pods"}},
		{"an operation on a paused cluster", func(c *ackov1alpha1.AerospikeCluster) {
			c.Spec.Paused = true
			c.Spec.Operations = []ackov1alpha1.OperationSpec{op(ackov1alpha1.OperationWarmRestart, "reload")}
		}, []string{"spec.operations: the cluster is paused: the operation starts only after it is resumed (spec.paused: false)"}},
		{"enforce-best-practices: asd checks its host at start (internal/config)", func(c *ackov1alpha1.AerospikeCluster) {
			c.Spec.AerospikeConfig.Value["service"] = map[string]any{"enforce-best-practices": true}
		}, []string{"service.enforce-best-practices: true makes asd check its host (kernel and memory settings) " +
			"when it starts and stop if a check fails, which cannot be checked before the pods run: a failed check " +
			"leaves the pod restarting, with asd's reason in its log; set it only for hosts you have prepared"}},
		{"replication-factor above the size (internal/config)", func(c *ackov1alpha1.AerospikeCluster) {
			c.Spec.Size = 1
		}, []string{`namespace "test": replication-factor 2 is greater than the cluster size 1: ` +
			"Aerospike keeps only 1 copies until the cluster grows"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := cluster()
			tt.mutate(c)
			warnings, _ := ValidateCreate(c, domain)
			expectWarnings(t, warnings, tt.want...)
		})
	}
}

func TestUpdateWarnings(t *testing.T) {
	finished := func() *ackov1alpha1.AerospikeCluster {
		c := inProgress()
		c.Status.OperationStatus.Phase = ackov1alpha1.OperationCompleted
		c.Status.FinishedOperations = []string{"older"}
		return c
	}
	const used = " already ran and will not run again: use a new id"
	tests := []struct {
		name   string
		mutate func(*ackov1alpha1.AerospikeCluster)
		want   []string
	}{
		{"the finished operation edited", func(c *ackov1alpha1.AerospikeCluster) {
			c.Spec.Operations[0].Kind = ackov1alpha1.OperationPodRestart
		}, []string{`spec.operations[0].id: operation "reload-1"` + used}},
		{"an older id reused", func(c *ackov1alpha1.AerospikeCluster) {
			c.Spec.Operations[0].ID = "older"
		}, []string{`spec.operations[0].id: operation "older"` + used}},
		{"none for a finished operation left in place", func(c *ackov1alpha1.AerospikeCluster) {
			c.Spec.Size = 4
		}, nil},
		{"none for a finished operation on a paused cluster", func(c *ackov1alpha1.AerospikeCluster) {
			c.Spec.Paused = true
		}, nil},
		{"none for a new id", func(c *ackov1alpha1.AerospikeCluster) {
			c.Spec.Operations[0].ID = "reload-2"
		}, nil},
		{"none for a metadata-only update", func(c *ackov1alpha1.AerospikeCluster) {
			c.Spec.RollingUpdateBatchSize = ptr.To[int32](1)
			c.Annotations = map[string]string{"a": "b"}
		}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old := finished()
			c := old.DeepCopy()
			tt.mutate(c)
			warnings, errs := ValidateUpdate(old, c, domain)
			expectMessages(t, errs)
			expectWarnings(t, warnings, tt.want...)
		})
	}
}
