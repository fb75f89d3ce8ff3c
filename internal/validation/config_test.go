package validation

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
)

const untouchedSuffix = " (allowed because this update leaves it unchanged: change it to a value the rule accepts)"

func service(c *ackov1alpha1.AerospikeCluster) map[string]any {
	svc, ok := c.Spec.AerospikeConfig.Value["service"].(map[string]any)
	if !ok {
		svc = map[string]any{}
		c.Spec.AerospikeConfig.Value["service"] = svc
	}
	return svc
}

// namespace is the cluster's first namespace.
func namespace(c *ackov1alpha1.AerospikeCluster) map[string]any {
	return c.Spec.AerospikeConfig.Value["namespaces"].([]any)[0].(map[string]any)
}

const bogusMsg = "spec.aerospikeConfig.service.bogus: Forbidden: unknown parameter: Aerospike 8.1.1 does not have it " +
	"and refuses to start with it"

// A cluster stored before the server's rules were checked keeps working: only what an update brings is
// refused.
func TestRatchet(t *testing.T) {
	stored := func() *ackov1alpha1.AerospikeCluster {
		c := cluster()
		service(c)["bogus"] = int64(1)
		return c
	}
	tests := []struct {
		name         string
		mutate       func(*ackov1alpha1.AerospikeCluster)
		errs, warned []string
	}{
		{"pause", func(c *ackov1alpha1.AerospikeCluster) { c.Spec.Paused = true }, nil, []string{bogusMsg}},
		{"an operation", func(c *ackov1alpha1.AerospikeCluster) {
			c.Spec.Operations = []ackov1alpha1.OperationSpec{op(ackov1alpha1.OperationWarmRestart, "reload")}
		}, nil, []string{bogusMsg}},
		{"the bad key changed", func(c *ackov1alpha1.AerospikeCluster) { service(c)["bogus"] = int64(2) },
			[]string{bogusMsg}, nil},
		{"another bad key added", func(c *ackov1alpha1.AerospikeCluster) { service(c)["proto-fd-max"] = "lots" },
			[]string{`spec.aerospikeConfig.service.proto-fd-max: Invalid value: "lots": must be an integer from 0 to 2147483647`},
			[]string{bogusMsg}},
		{"the bad key fixed", func(c *ackov1alpha1.AerospikeCluster) { delete(service(c), "bogus") }, nil, nil},
		{"an image older than every table", func(c *ackov1alpha1.AerospikeCluster) {
			delete(service(c), "bogus")
			c.Spec.Image = "aerospike:ce-7.2.0.4"
		}, []string{`spec.image: Invalid value: "aerospike:ce-7.2.0.4": Aerospike server version 7.2.0.4 is not ` +
			"supported: ACKO supports server versions 8.0.0, 8.1.0, 8.1.1 and 8.1.2 (and newer, checked against 8.1.2)"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old := stored()
			c := old.DeepCopy()
			tt.mutate(c)
			warnings, errs := ValidateUpdate(old, c, domain)
			expectMessages(t, errs, tt.errs...)
			var got []string
			for _, w := range warnings {
				if s, ok := strings.CutSuffix(w, untouchedSuffix); ok {
					got = append(got, s)
				}
			}
			expectWarnings(t, got, tt.warned...)
		})
	}
}

// A new server version can refuse a value an older one took: the update that brings the version is
// refused, though the key itself is untouched. Going back is allowed.
func TestRatchetImageChange(t *testing.T) {
	old := cluster()
	service(old)["proto-fd-max"] = int64(100) // 8.1.1's minimum is 0, 8.1.2's 1024
	c := old.DeepCopy()
	c.Spec.Image = "aerospike:ce-8.1.2.0"
	_, errs := ValidateUpdate(old, c, domain)
	expectMessages(t, errs, "spec.aerospikeConfig.service.proto-fd-max: Invalid value: 100: must be an integer from 1024 to 2147483647")

	// A cluster stored on 8.1.2 with the value (before the rules) may go back to 8.1.1.
	warnings, errs := ValidateUpdate(c, old, domain)
	expectMessages(t, errs)
	expectWarnings(t, warnings)
}

// The reconciler's structural re-check does not stop a cluster for the server's rules; they are
// reported apart.
func TestConfigViolationsAreApartFromTheStructuralRules(t *testing.T) {
	c := cluster()
	service(c)["bogus"] = int64(1)
	expectMessages(t, ValidateClusterSpec(c))
	expectMessages(t, ConfigViolations(c, domain), bogusMsg)
	_, errs := ValidateCreate(c, domain)
	expectMessages(t, errs, bogusMsg)
}

func TestClusterNameIsImmutable(t *testing.T) {
	old := cluster()
	c := old.DeepCopy()
	service(c)["cluster-name"] = "renamed"
	_, errs := ValidateUpdate(old, c, domain)
	expectMessages(t, errs, `spec.aerospikeConfig.service.cluster-name: Forbidden: cannot change the cluster-name of a `+
		`running cluster ("aerospike-3node" to "renamed"): nodes join by cluster name, so restarting them one at a `+
		`time with a new name splits the cluster; create a new cluster and migrate the data`)
	// Spelling out the name it already has is no change.
	service(c)["cluster-name"] = old.Name
	_, errs = ValidateUpdate(old, c, domain)
	expectMessages(t, errs)
}

// running is the cluster with its pods running and Ready at its generation, as the operator reports it.
func running(c *ackov1alpha1.AerospikeCluster) *ackov1alpha1.AerospikeCluster {
	c.Generation, c.Status.ObservedGeneration = 4, 4
	c.Status.Pods = map[string]ackov1alpha1.PodStatus{"aerospike-3node-0": {}, "aerospike-3node-1": {}, "aerospike-3node-2": {}}
	meta.SetStatusCondition(&c.Status.Conditions, metav1.Condition{Type: ackov1alpha1.ConditionReady,
		Status: metav1.ConditionTrue, Reason: "Ready", ObservedGeneration: 4})
	return c
}

// A replication-factor change goes to a running cluster alone and when it is Ready; a cluster with no
// pod takes any.
func TestReplicationFactorChangesAloneOnAReadyCluster(t *testing.T) {
	old := running(cluster())
	c := old.DeepCopy()
	namespace(c)["replication-factor"] = int64(3)
	_, errs := ValidateUpdate(old, c, domain)
	expectMessages(t, errs)

	c.Spec.RollingUpdateBatchSize = ptr.To[int32](2)
	_, errs = ValidateUpdate(old, c, domain)
	expectMessages(t, errs, `spec.aerospikeConfig.namespaces: Forbidden: change the replication-factor of `+
		`namespace "test" (2 to 3) alone: the operator sets it on every running node at once and then has the `+
		`cluster rebalance, and a pod restarted meanwhile for another change would start with a factor the others `+
		`do not run, which splits the cluster; apply the other changes before or after`)

	c = old.DeepCopy()
	namespace(c)["replication-factor"] = int64(3)
	notReady := old.DeepCopy()
	meta.SetStatusCondition(&notReady.Status.Conditions, metav1.Condition{Type: ackov1alpha1.ConditionReady,
		Status: metav1.ConditionFalse, Reason: "RollingRestart"})
	_, errs = ValidateUpdate(notReady, c, domain)
	expectMessages(t, errs, `spec.aerospikeConfig.namespaces: Forbidden: cannot change the replication-factor of `+
		`namespace "test" (2 to 3) while the cluster is not Ready: every node must run the same config and answer `+
		`before the factor goes to all of them; wait until the cluster is Ready`)

	// Spelling out the default it already has is no change; a cluster with no pod yet may take any factor.
	namespace(c)["replication-factor"] = int64(2)
	c.Spec.RollingUpdateBatchSize = ptr.To[int32](2)
	_, errs = ValidateUpdate(notReady, c, domain)
	expectMessages(t, errs)
	namespace(c)["replication-factor"] = int64(3)
	_, errs = ValidateUpdate(cluster(), c, domain)
	expectMessages(t, errs)
}

func TestImageVersions(t *testing.T) {
	for _, tc := range []struct{ image, want string }{
		{"aerospike:ce-7.2.0.4", `spec.image: Invalid value: "aerospike:ce-7.2.0.4": Aerospike server version 7.2.0.4 ` +
			"is not supported: ACKO supports server versions 8.0.0, 8.1.0, 8.1.1 and 8.1.2 (and newer, checked against 8.1.2)"},
		{"aerospike:ce-8.0.0.12", ""},
		{"aerospike:8.1.2.0", ""},
		{"aerospike@sha256:0123", ""},
	} {
		c := cluster()
		c.Spec.Image = tc.image
		_, errs := ValidateCreate(c, domain)
		if tc.want == "" {
			expectMessages(t, errs)
		} else {
			expectMessages(t, errs, tc.want)
		}
	}
}

// Kubernetes' name limits: the longest name that still fits is accepted, one more character is not.
func TestNameLimits(t *testing.T) {
	named := func(name string, mutate ...func(*ackov1alpha1.AerospikeCluster)) []string {
		c := cluster()
		c.Name = name
		for _, m := range mutate {
			m(c)
		}
		return messages(validateNames(c, domain))
	}
	longest := strings.Repeat("a", MaxStatefulSetNameLength)
	if got := named(longest); len(got) > 0 {
		t.Errorf("the longest name that fits (%d characters) is refused: %q", len(longest), got)
	}
	tooLong := `metadata.name: Invalid value: "` + longest + `a": too long: its StatefulSet ` + longest + `a would have ` +
		`53 characters, Kubernetes allows at most 52 (a pod's controller-revision-hash label adds the revision to ` +
		`the name, within 63); use a name of at most 52 characters`
	expectMessages(t, validateNames(withName(longest+"a"), domain), tooLong)

	// A multi-rack StatefulSet adds -<rackID>: rack 1000000 leaves 44 characters.
	racks := func(c *ackov1alpha1.AerospikeCluster) {
		c.Spec.RackConfig = &ackov1alpha1.RackConfig{Racks: []ackov1alpha1.Rack{{ID: 1}, {ID: 1000000}}}
	}
	if got := named(strings.Repeat("b", 44), racks); len(got) > 0 {
		t.Errorf("44 characters with rack 1000000 is refused: %q", got)
	}
	if got := named(strings.Repeat("b", 45), racks); len(got) != 1 || !strings.Contains(got[0], "use a name of at most 44 characters") {
		t.Errorf("45 characters with rack 1000000: %q", got)
	}

	if got := named("9lives"); len(got) != 2 || !strings.Contains(got[0], "its Service 9lives must have a DNS-1035 label name") {
		t.Errorf("a name starting with a digit: %q", got)
	}
	if got := named("db.prod"); len(got) != 3 || !strings.Contains(got[0], "its pods' names (e.g. db.prod-2) are their hostnames") {
		t.Errorf("a name with a dot: %q", got)
	}
	c := cluster()
	label := strings.Repeat("d", 60)
	long := strings.Join([]string{label, label, label, label}, ".")
	if got := messages(validateNames(c, long)); len(got) != 1 || !strings.Contains(got[0], "pods' DNS names in the mesh seeds") {
		t.Errorf("a long cluster domain: %q", got)
	}
}

func withName(name string) *ackov1alpha1.AerospikeCluster {
	c := cluster()
	c.Name = name
	return c
}

// The admission refusals of the config-truth round 2 issue, as the webhook answers them: asd's line
// where asd has one, and a server rule (the ratchet's kind), not a structural one.
func TestAdmissionMatchesTheServer(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*ackov1alpha1.AerospikeCluster)
		errs   []string
	}{
		{"auto-pin on the address any the operator renders", func(c *ackov1alpha1.AerospikeCluster) {
			service(c)["auto-pin"] = "cpu"
		}, []string{`spec.aerospikeConfig.service.auto-pin: Forbidden: auto-pinning requires binding the service ` +
			`to network interfaces; "any" isn't a network interface: Aerospike refuses to start with it, and ACKO ` +
			`always renders address any (so the pod IP works); leave auto-pin at none`}},
		{"advertise-ipv6, which Community Edition ignores", func(c *ackov1alpha1.AerospikeCluster) {
			service(c)["advertise-ipv6"] = true
		}, []string{`spec.aerospikeConfig.service.advertise-ipv6: Forbidden: advertise-ipv6 has no effect in ` +
			`Aerospike Community Edition, which keeps its default: asd logs "'advertise-ipv6' is relevant for ` +
			`enterprise only"`}},
		{"flush-size without storage backing", func(c *ackov1alpha1.AerospikeCluster) {
			namespace(c)["storage-engine"].(map[string]any)["flush-size"] = "1M"
		}, []string{`spec.aerospikeConfig.namespaces[0].storage-engine.flush-size: Forbidden: {test} can't ` +
			`configure 'flush-size' if not using storage backing: Aerospike refuses to start with it; give the ` +
			`namespace devices or files, or remove flush-size`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := cluster()
			tt.mutate(c)
			_, errs := ValidateCreate(c, domain)
			expectMessages(t, errs, tt.errs...)
			if len(ValidateSpec(c)) > 0 {
				t.Errorf("%s is a server rule, which the ratchet lets through when an update leaves it", tt.name)
			}
		})
	}
}
