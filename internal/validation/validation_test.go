package validation

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
	"github.com/acko-io/acko/test/testcluster"
)

// cluster is the operations guide's example: aerospike-3node, 3 pods, one in-memory namespace.
func cluster() *ackov1alpha1.AerospikeCluster {
	c := testcluster.New("aerospike", "aerospike-3node", 3)
	c.Spec.RollingUpdateBatchSize = ptr.To[int32](1)
	return c
}

// twoRacks is the cluster spread over racks 1 and 2: pods aerospike-3node-1-0, -1-1 and -2-0.
func twoRacks(c *ackov1alpha1.AerospikeCluster) {
	c.Spec.RackConfig = &ackov1alpha1.RackConfig{Racks: []ackov1alpha1.Rack{{ID: 2}, {ID: 1}}}
}

func op(kind ackov1alpha1.OperationKind, id string, pods ...string) ackov1alpha1.OperationSpec {
	return ackov1alpha1.OperationSpec{Kind: kind, ID: id, PodList: pods}
}

// domain is the cluster domain the tests validate for.
const domain = ackov1alpha1.DefaultClusterDomain

func messages(errs field.ErrorList) []string {
	out := make([]string, 0, len(errs))
	for _, e := range errs {
		out = append(out, e.Error())
	}
	return out
}

func expectMessages(t *testing.T, got field.ErrorList, want ...string) {
	t.Helper()
	if g := messages(got); !slices.Equal(g, want) {
		t.Errorf("errors:\n got  %q\n want %q", g, want)
	}
}

const (
	singleRackHint = "not a pod of this cluster: pod names follow <cluster>-<ordinal> " +
		"(aerospike-3node-0, aerospike-3node-1, aerospike-3node-2)"
	multiRackHint = "not a pod of this cluster: pod names follow <cluster>-<rackID>-<ordinal> " +
		"(aerospike-3node-1-0, aerospike-3node-1-1, aerospike-3node-2-0)"
	enterpriseMsg = "Aerospike Enterprise images are not supported: ACKO runs Aerospike Community Edition (CE) only; " +
		"use a CE image such as aerospike:ce-8.1.1.1"
	sizeMsg = "must be between 1 and 8: Aerospike Community Edition allows at most 8 nodes"
)

func TestValidateSpecRejects(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*ackov1alpha1.AerospikeCluster)
		want   []string
	}{
		{"two operations (seed)", func(c *ackov1alpha1.AerospikeCluster) {
			c.Spec.Operations = []ackov1alpha1.OperationSpec{
				op(ackov1alpha1.OperationWarmRestart, "a"), op(ackov1alpha1.OperationPodRestart, "b")}
		}, []string{"spec.operations: Invalid value: only one operation allowed"}},
		{"empty id (seed)", func(c *ackov1alpha1.AerospikeCluster) {
			c.Spec.Operations = []ackov1alpha1.OperationSpec{op(ackov1alpha1.OperationWarmRestart, "")}
		}, []string{`spec.operations[0].id: Invalid value: "": id must be between 1 and 20 characters`}},
		{"21-character id (seed)", func(c *ackov1alpha1.AerospikeCluster) {
			c.Spec.Operations = []ackov1alpha1.OperationSpec{op(ackov1alpha1.OperationWarmRestart, strings.Repeat("x", 21))}
		}, []string{`spec.operations[0].id: Invalid value: "xxxxxxxxxxxxxxxxxxxxx": id must be between 1 and 20 characters`}},
		{"unknown operation kind", func(c *ackov1alpha1.AerospikeCluster) {
			c.Spec.Operations = []ackov1alpha1.OperationSpec{op("ColdBoot", "x")}
		}, []string{`spec.operations[0].kind: Unsupported value: "ColdBoot": supported values: "WarmRestart", "PodRestart"`}},
		{"podList: ordinal beyond the size, another cluster, a padded ordinal, a rack name", func(c *ackov1alpha1.AerospikeCluster) {
			c.Spec.Operations = []ackov1alpha1.OperationSpec{op(ackov1alpha1.OperationPodRestart, "x",
				"aerospike-3node-3", "other-0", "aerospike-3node-01", "aerospike-3node-1-0", "aerospike-3node-2")}
		}, []string{
			`spec.operations[0].podList[0]: Invalid value: "aerospike-3node-3": ` + singleRackHint,
			`spec.operations[0].podList[1]: Invalid value: "other-0": ` + singleRackHint,
			`spec.operations[0].podList[2]: Invalid value: "aerospike-3node-01": ` + singleRackHint,
			`spec.operations[0].podList[3]: Invalid value: "aerospike-3node-1-0": ` + singleRackHint,
		}},
		{"podList of a multi-rack cluster: beyond a rack's share, unknown rack, single-rack name", func(c *ackov1alpha1.AerospikeCluster) {
			twoRacks(c)
			c.Spec.Operations = []ackov1alpha1.OperationSpec{op(ackov1alpha1.OperationWarmRestart, "x",
				"aerospike-3node-2-1", "aerospike-3node-3-0", "aerospike-3node-0", "aerospike-3node-1-1")}
		}, []string{
			`spec.operations[0].podList[0]: Invalid value: "aerospike-3node-2-1": ` + multiRackHint,
			`spec.operations[0].podList[1]: Invalid value: "aerospike-3node-3-0": ` + multiRackHint,
			`spec.operations[0].podList[2]: Invalid value: "aerospike-3node-0": ` + multiRackHint,
		}},
		{"podList names a pod twice", func(c *ackov1alpha1.AerospikeCluster) {
			c.Spec.Operations = []ackov1alpha1.OperationSpec{op(ackov1alpha1.OperationWarmRestart, "x",
				"aerospike-3node-0", "aerospike-3node-0")}
		}, []string{`spec.operations[0].podList[1]: Duplicate value: "aerospike-3node-0"`}},
		{"size 0", func(c *ackov1alpha1.AerospikeCluster) { c.Spec.Size = 0 },
			[]string{"spec.size: Invalid value: 0: " + sizeMsg}},
		{"size 9 (CE allows 8)", func(c *ackov1alpha1.AerospikeCluster) { c.Spec.Size = 9 },
			[]string{"spec.size: Invalid value: 9: " + sizeMsg}},
		{"no image", func(c *ackov1alpha1.AerospikeCluster) { c.Spec.Image = " " },
			[]string{"spec.image: Required value: an Aerospike Community Edition server image, e.g. aerospike:ce-8.1.1.1"}},
		{"Enterprise repository", func(c *ackov1alpha1.AerospikeCluster) {
			c.Spec.Image = "aerospike/aerospike-server-enterprise:8.1.1.1"
		}, []string{`spec.image: Invalid value: "aerospike/aerospike-server-enterprise:8.1.1.1": ` + enterpriseMsg}},
		{"Enterprise tag of the official image", func(c *ackov1alpha1.AerospikeCluster) { c.Spec.Image = "aerospike:ee-8.1.1.1" },
			[]string{`spec.image: Invalid value: "aerospike:ee-8.1.1.1": ` + enterpriseMsg}},
		{"Enterprise image behind a registry port and a digest", func(c *ackov1alpha1.AerospikeCluster) {
			c.Spec.Image = "localhost:5000/aerospike/aerospike-server-enterprise@sha256:abc"
		}, []string{`spec.image: Invalid value: "localhost:5000/aerospike/aerospike-server-enterprise@sha256:abc": ` + enterpriseMsg}},
		{"batch size 0", func(c *ackov1alpha1.AerospikeCluster) { c.Spec.RollingUpdateBatchSize = ptr.To[int32](0) },
			[]string{"spec.rollingUpdateBatchSize: Invalid value: 0: must be at least 1 (the number of pods a rolling update restarts at once)"}},
		{"a budget cap above what replication-factor 2 allows", func(c *ackov1alpha1.AerospikeCluster) {
			c.Spec.DisruptionBudget = &ackov1alpha1.DisruptionBudgetSpec{MaxUnavailable: ptr.To[int32](2)}
		}, []string{"spec.disruptionBudget.maxUnavailable: Invalid value: 2: must be at most 1: the replication factor " +
			"allows only 1 pod(s) down at once (the smallest replication-factor is 2, counting no more copies than nodes); " +
			"more would let a drain take every copy of a partition"}},
		{"a budget cap of 0", func(c *ackov1alpha1.AerospikeCluster) {
			c.Spec.DisruptionBudget = &ackov1alpha1.DisruptionBudgetSpec{MaxUnavailable: ptr.To[int32](0)}
		}, []string{"spec.disruptionBudget.maxUnavailable: Invalid value: 0: must be at least 1: a budget that allows " +
			"no disruption blocks every drain and the operator's own restarts"}},
		{"a budget cap with no budget", func(c *ackov1alpha1.AerospikeCluster) {
			c.Spec.DisruptionBudget = &ackov1alpha1.DisruptionBudgetSpec{MaxUnavailable: ptr.To[int32](1), Disabled: true}
		}, []string{"spec.disruptionBudget.maxUnavailable: Invalid value: 1: a cap needs a budget: " +
			"spec.disruptionBudget.disabled is true; set one of the two"}},
		{"duplicate rack ids", func(c *ackov1alpha1.AerospikeCluster) {
			c.Spec.RackConfig = &ackov1alpha1.RackConfig{Racks: []ackov1alpha1.Rack{{ID: 1}, {ID: 1}}}
		}, []string{"spec.rackConfig.racks[1].id: Duplicate value: 1"}},
		{"rack id 0 (the implicit rack's)", func(c *ackov1alpha1.AerospikeCluster) {
			c.Spec.RackConfig = &ackov1alpha1.RackConfig{Racks: []ackov1alpha1.Rack{{ID: 0}}}
		}, []string{"spec.rackConfig.racks[0].id: Invalid value: 0: must be between 1 and 1000000"}},
		{"rackConfig without racks", func(c *ackov1alpha1.AerospikeCluster) { c.Spec.RackConfig = &ackov1alpha1.RackConfig{} },
			[]string{"spec.rackConfig.racks: Required value: at least one rack; remove rackConfig for a single-rack cluster"}},
		{"pod settings the builders cannot build (internal/resources)", func(c *ackov1alpha1.AerospikeCluster) {
			c.Spec.Storage = &ackov1alpha1.StorageSpec{Volumes: []ackov1alpha1.VolumeSpec{
				{Name: "a", Path: "/data"}, {Name: "b", Path: "/data"}}}
			c.Spec.PodSpec = &ackov1alpha1.PodOverrides{Sidecars: []ackov1alpha1.Sidecar{
				{Container: corev1.Container{Name: "aerospike-server", Image: "busybox"}}}}
		}, []string{
			`spec.storage.volumes[1].path: Duplicate value: "/data"`,
			`spec.podSpec.sidecars[0].name: Duplicate value: "aerospike-server"`,
		}},
		{"a host port where a rack pins several pods to one node, or a sidecar takes it", func(c *ackov1alpha1.AerospikeCluster) {
			c.Spec.RackConfig = &ackov1alpha1.RackConfig{Racks: []ackov1alpha1.Rack{{ID: 1, NodeName: "n1"}, {ID: 2}}}
			c.Spec.Size = 4
			c.Spec.ExternalAccess = &ackov1alpha1.ExternalAccess{Type: ackov1alpha1.ExternalHostPort, HostPort: ptr.To[int32](4000)}
			c.Spec.PodSpec = &ackov1alpha1.PodOverrides{Sidecars: []ackov1alpha1.Sidecar{{Container: corev1.Container{
				Name: "proxy", Image: "envoy", Ports: []corev1.ContainerPort{{ContainerPort: 8080, HostPort: 4000}}}}}}
		}, []string{
			`spec.externalAccess.type: Invalid value: "HostPort": rack 1 places 2 pods on node n1 (nodeName), but a host ` +
				`port takes one pod per node: the others would stay Pending; use NodePort, or spread the rack`,
			`spec.podSpec.sidecars[0].ports[0].hostPort: Duplicate value: "4000: spec.externalAccess takes this host port ` +
				`for the Aerospike service port"`,
		}},
		{"per-pod Service annotations Kubernetes refuses", func(c *ackov1alpha1.AerospikeCluster) {
			c.Spec.ExternalAccess = &ackov1alpha1.ExternalAccess{Type: ackov1alpha1.ExternalLoadBalancer,
				ServiceAnnotations: map[string]string{"not a key": "x"}}
		}, []string{`spec.externalAccess.serviceAnnotations: Invalid value: "not a key": name part must consist of ` +
			`alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. ` +
			`'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`}},
		{"aerospikeConfig that cannot render (internal/config)", func(c *ackov1alpha1.AerospikeCluster) {
			c.Spec.AerospikeConfig.Value["security"] = map[string]any{}
		}, []string{"spec.aerospikeConfig.security: Forbidden: security (access control) is Enterprise-only: " +
			"Aerospike Community Edition does not support it"}},
		{"every violation in one answer", func(c *ackov1alpha1.AerospikeCluster) {
			c.Spec.Size = 9
			c.Spec.Image = "aerospike:ee-8.1.1.1"
			c.Spec.Operations = []ackov1alpha1.OperationSpec{
				op(ackov1alpha1.OperationWarmRestart, strings.Repeat("y", 21)), op(ackov1alpha1.OperationPodRestart, "")}
		}, []string{
			"spec.size: Invalid value: 9: " + sizeMsg,
			`spec.image: Invalid value: "aerospike:ee-8.1.1.1": ` + enterpriseMsg,
			"spec.operations: Invalid value: only one operation allowed",
			`spec.operations[0].id: Invalid value: "yyyyyyyyyyyyyyyyyyyyy": id must be between 1 and 20 characters`,
			`spec.operations[1].id: Invalid value: "": id must be between 1 and 20 characters`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := cluster()
			tt.mutate(c)
			_, errs := ValidateCreate(c, domain)
			expectMessages(t, errs, tt.want...)
			expectMessages(t, ValidateSpec(c), tt.want...)
		})
	}
}

func TestValidateSpecAccepts(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*ackov1alpha1.AerospikeCluster)
	}{
		{"the guide's example", func(*ackov1alpha1.AerospikeCluster) {}},
		{"sizes 1 and 8", func(c *ackov1alpha1.AerospikeCluster) { c.Spec.Size = 8 }},
		{"ids of 1 and 20 characters, counted as characters", func(c *ackov1alpha1.AerospikeCluster) {
			c.Spec.Operations = []ackov1alpha1.OperationSpec{op(ackov1alpha1.OperationWarmRestart, strings.Repeat("재", 20))}
		}},
		{"the guide's podList", func(c *ackov1alpha1.AerospikeCluster) {
			c.Spec.Operations = []ackov1alpha1.OperationSpec{op(ackov1alpha1.OperationPodRestart, "restart-pod-2",
				"aerospike-3node-0", "aerospike-3node-2")}
		}},
		{"a multi-rack podList", func(c *ackov1alpha1.AerospikeCluster) {
			twoRacks(c)
			c.Spec.Operations = []ackov1alpha1.OperationSpec{op(ackov1alpha1.OperationWarmRestart, "reload-rack-1",
				"aerospike-3node-1-0", "aerospike-3node-1-1", "aerospike-3node-2-0")}
		}},
		{"CE images", func(c *ackov1alpha1.AerospikeCluster) {
			c.Spec.Image = "localhost:5000/aerospike/aerospike-server:8.1.1.1"
		}},
		{"a CE image by digest", func(c *ackov1alpha1.AerospikeCluster) { c.Spec.Image = "aerospike@sha256:0123" }},
		{"no batch size (defaults to 1)", func(c *ackov1alpha1.AerospikeCluster) { c.Spec.RollingUpdateBatchSize = nil }},
		{"a budget capped to what the factor allows", func(c *ackov1alpha1.AerospikeCluster) {
			c.Spec.DisruptionBudget = &ackov1alpha1.DisruptionBudgetSpec{MaxUnavailable: ptr.To[int32](1)}
		}},
		{"no budget", func(c *ackov1alpha1.AerospikeCluster) {
			c.Spec.DisruptionBudget = &ackov1alpha1.DisruptionBudgetSpec{Disabled: true}
		}},
		{"sidecars", func(c *ackov1alpha1.AerospikeCluster) {
			c.Spec.PodSpec = &ackov1alpha1.PodOverrides{Sidecars: []ackov1alpha1.Sidecar{
				{Container: corev1.Container{Name: "exporter", Image: "aerospike/aerospike-prometheus-exporter"}}}}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := cluster()
			tt.mutate(c)
			_, errs := ValidateCreate(c, domain)
			expectMessages(t, errs)
		})
	}
	t.Run("size 1", func(t *testing.T) {
		c := cluster()
		c.Spec.Size = 1
		c.Spec.AerospikeConfig.Value["namespaces"].([]any)[0].(map[string]any)["replication-factor"] = int64(1)
		expectMessages(t, ValidateSpec(c))
	})
}

// The samples are what users copy first; they must pass every rule.
func TestSamplesAreValid(t *testing.T) {
	samples, err := testcluster.Samples()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range samples {
		warnings, errs := ValidateCreate(s.Cluster, domain)
		if len(errs) > 0 || len(warnings) > 0 {
			t.Errorf("%s: errors %q, warnings %q", s.Path, messages(errs), warnings)
		}
	}
}

// inProgress is a cluster whose operation reload-1 is running.
func inProgress() *ackov1alpha1.AerospikeCluster {
	c := cluster()
	c.Spec.Operations = []ackov1alpha1.OperationSpec{op(ackov1alpha1.OperationWarmRestart, "reload-1")}
	c.Status.OperationStatus = &ackov1alpha1.OperationStatus{
		ID: "reload-1", Kind: ackov1alpha1.OperationWarmRestart, Phase: ackov1alpha1.OperationInProgress,
	}
	return c
}

const lockedMsg = "spec.operations: Invalid value: cannot modify operations while InProgress"

func TestValidateUpdate(t *testing.T) {
	tests := []struct {
		name   string
		old    func() *ackov1alpha1.AerospikeCluster
		mutate func(*ackov1alpha1.AerospikeCluster)
		want   []string
	}{
		{"a new id while InProgress (seed)", inProgress, func(c *ackov1alpha1.AerospikeCluster) {
			c.Spec.Operations[0].ID = "reload-2"
		}, []string{lockedMsg}},
		{"a podList added while InProgress (seed)", inProgress, func(c *ackov1alpha1.AerospikeCluster) {
			c.Spec.Operations[0].PodList = []string{"aerospike-3node-0"}
		}, []string{lockedMsg}},
		{"the operation removed while InProgress (seed)", inProgress, func(c *ackov1alpha1.AerospikeCluster) {
			c.Spec.Operations = nil
		}, []string{lockedMsg}},
		{"a second operation while InProgress: both rules", inProgress, func(c *ackov1alpha1.AerospikeCluster) {
			c.Spec.Operations = append(c.Spec.Operations, op(ackov1alpha1.OperationPodRestart, "cold"))
		}, []string{"spec.operations: Invalid value: only one operation allowed", lockedMsg}},
		{"another field while InProgress", inProgress, func(c *ackov1alpha1.AerospikeCluster) {
			c.Spec.Size = 4
		}, nil},
		{"an empty list for a missing one while InProgress", func() *ackov1alpha1.AerospikeCluster {
			c := inProgress()
			c.Spec.Operations = nil
			return c
		}, func(c *ackov1alpha1.AerospikeCluster) {
			c.Spec.Operations = []ackov1alpha1.OperationSpec{}
			c.Spec.Paused = true
		}, nil},
		{"removal once Completed", func() *ackov1alpha1.AerospikeCluster {
			c := inProgress()
			c.Status.OperationStatus.Phase = ackov1alpha1.OperationCompleted
			return c
		}, func(c *ackov1alpha1.AerospikeCluster) { c.Spec.Operations = nil }, nil},
		{"a shrink below the pods of an operation that ran", func() *ackov1alpha1.AerospikeCluster {
			c := inProgress()
			c.Spec.Operations[0].PodList = []string{"aerospike-3node-2"}
			c.Status.OperationStatus.Phase = ackov1alpha1.OperationError
			return c
		}, func(c *ackov1alpha1.AerospikeCluster) { c.Spec.Size = 2 }, nil},
		{"a shrink below the pods of a running operation", func() *ackov1alpha1.AerospikeCluster {
			c := inProgress()
			c.Spec.Operations[0].PodList = []string{"aerospike-3node-2"}
			return c
		}, func(c *ackov1alpha1.AerospikeCluster) { c.Spec.Size = 2 }, []string{
			`spec.operations[0].podList[0]: Invalid value: "aerospike-3node-2": not a pod of this cluster: ` +
				"pod names follow <cluster>-<ordinal> (aerospike-3node-0, aerospike-3node-1)"}},
		{"the layout switched (internal/resources)", cluster, twoRacks, []string{"spec.rackConfig: Forbidden: " +
			"cannot switch between the single-rack and the multi-rack layout: every pod would change its name; " +
			"create a new cluster and migrate the data"}},
		{"a spec that was stored invalid, spec untouched", func() *ackov1alpha1.AerospikeCluster {
			c := cluster()
			c.Spec.Size = 9
			return c
		}, func(c *ackov1alpha1.AerospikeCluster) { c.Labels = map[string]string{"team": "db"} }, nil},
		{"a spec that was stored invalid, while deleting", func() *ackov1alpha1.AerospikeCluster {
			c := cluster()
			c.Spec.Size = 9
			return c
		}, func(c *ackov1alpha1.AerospikeCluster) {
			c.DeletionTimestamp = &metav1.Time{}
			c.Spec.Image = "aerospike:ee-8.1.1.1"
		}, nil},
		{"a spec that was stored invalid, other field changed", func() *ackov1alpha1.AerospikeCluster {
			c := cluster()
			c.Spec.Size = 9
			return c
		}, func(c *ackov1alpha1.AerospikeCluster) { c.Spec.Paused = true }, []string{"spec.size: Invalid value: 9: " + sizeMsg}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old := tt.old()
			c := old.DeepCopy()
			tt.mutate(c)
			_, errs := ValidateUpdate(old, c, domain)
			expectMessages(t, errs, tt.want...)
		})
	}
}

func TestAsError(t *testing.T) {
	c := cluster()
	if err := AsError(c, nil); err != nil {
		t.Fatalf("no violations: %v", err)
	}
	c.Spec.Size = 9
	c.Spec.Operations = []ackov1alpha1.OperationSpec{op(ackov1alpha1.OperationWarmRestart, "")}
	err := AsError(c, ValidateSpec(c))
	if !apierrors.IsInvalid(err) {
		t.Fatalf("want Invalid, got %v", err)
	}
	want := `AerospikeCluster.acko.io "aerospike-3node" is invalid: [spec.size: Invalid value: 9: ` + sizeMsg +
		`, spec.operations[0].id: Invalid value: "": id must be between 1 and 20 characters]`
	if err.Error() != want {
		t.Errorf("error:\n got  %s\n want %s", err, want)
	}
	if causes := err.(apierrors.APIStatus).Status().Details.Causes; len(causes) != 2 || causes[1].Field != "spec.operations[0].id" {
		t.Errorf("causes: %+v", causes)
	}
}
