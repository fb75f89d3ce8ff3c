// Package validation is the one rule set for AerospikeCluster specs. The admission webhook answers
// with it, and the reconciler re-checks ValidateSpec on every object it reads, because a webhook can
// be bypassed (absent, failurePolicy changed, object stored before it existed).
//
// Every function is pure: spec in, field errors and warnings out, in a deterministic order.
package validation

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
	"github.com/acko-io/acko/internal/config"
)

// The operations guide's messages (seed 001). The CRD's CEL rules carry the same text, so a user
// reads the same line whichever layer answers.
const (
	MsgOnlyOneOperation   = "only one operation allowed"
	MsgOperationIDLength  = "id must be between 1 and 20 characters"
	MsgOperationsInFlight = "cannot modify operations while InProgress"
)

var specPath = field.NewPath("spec")

// ValidateCreate checks a new cluster: every rule, ConfigViolations included. clusterDomain is the
// Kubernetes cluster's DNS domain (the manager's --cluster-domain), for the length of the pods' DNS
// names. Warnings describe risky but legal choices.
func ValidateCreate(c *ackov1alpha1.AerospikeCluster, clusterDomain string) ([]string, field.ErrorList) {
	return Warnings(c), slices.Concat(ValidateSpec(c), ConfigViolations(c, clusterDomain))
}

// ValidateUpdate checks a change: the whole new spec, the operations lock, the changes that cannot be
// applied to running pods, and the ConfigViolations the update brings (Ratchet); violations it leaves
// untouched come back as warnings. An exempt update (see UpdateExempt) is always allowed.
func ValidateUpdate(old, c *ackov1alpha1.AerospikeCluster, clusterDomain string) ([]string, field.ErrorList) {
	if UpdateExempt(old, c) {
		return nil, nil
	}
	refused, untouched := Ratchet(old, c, clusterDomain)
	errs := slices.Concat(ValidateSpec(c), validateOperationsLock(old, c), immutableChanges(old, c),
		clusterNameChange(old, c), replicationFactorChange(old, c), refused)
	warnings := append(Warnings(c), updateWarnings(old, c)...)
	for _, e := range untouched {
		warnings = append(warnings, untouchedWarning(e))
	}
	return warnings, errs
}

// UpdateExempt reports an update that is allowed unchecked: one that leaves the spec alone (labels,
// finalizers, the operator's own metadata writes) or touches a cluster being deleted. So an object
// stored before a rule existed can still be labelled, and deleted.
func UpdateExempt(old, c *ackov1alpha1.AerospikeCluster) bool {
	return c.DeletionTimestamp != nil || apiequality.Semantic.DeepEqual(old.Spec, c.Spec)
}

// ValidateSpec is every rule that needs only the cluster itself.
func ValidateSpec(c *ackov1alpha1.AerospikeCluster) field.ErrorList {
	return slices.Concat(ValidateClusterSpec(c), validateOperations(c))
}

// ValidateClusterSpec is ValidateSpec without the operation rules. The reconciler re-checks it before
// it acts and reports a failure as a condition instead of retrying. A bad operation that got past the
// webhook fails only that operation (the executor ends it in Error before touching a pod) instead of
// stopping the whole cluster; the seed's operation rules are also CEL rules the API server enforces.
// It holds the structural rules only: ConfigViolations, which a cluster accepted before them may break,
// are the reconciler's to report.
func ValidateClusterSpec(c *ackov1alpha1.AerospikeCluster) field.ErrorList {
	structural, _ := config.Check(c)
	return slices.Concat(
		validateSize(c.Spec.Size),
		validateImage(c.Spec.Image),
		validateBatchSize(c.Spec.RollingUpdateBatchSize),
		validateDisruptionBudget(c),
		validateRacks(c.Spec.RackConfig),
		structural,
		validatePod(c),
		validatePodTemplate(c),
		validateRackPlacement(c),
		validateMonitoring(c),
		validateExternalAccess(c),
		validateNodeBlockList(c),
	)
}

// clusterNameChange refuses a new cluster-name for a running cluster: nodes join by cluster name, so
// a change that reaches the nodes one at a time splits the cluster.
func clusterNameChange(old, c *ackov1alpha1.AerospikeCluster) field.ErrorList {
	before, after := config.ClusterName(old, old.RackPlan()[0]), config.ClusterName(c, c.RackPlan()[0])
	if before == after {
		return nil
	}
	return field.ErrorList{field.Forbidden(specPath.Child("aerospikeConfig", "service", "cluster-name"),
		fmt.Sprintf("cannot change the cluster-name of a running cluster (%q to %q): nodes join by cluster name, "+
			"so restarting them one at a time with a new name splits the cluster; create a new cluster and "+
			"migrate the data", before, after))}
}

// replicationFactorChange takes a new replication-factor for a namespace the running cluster has only
// alone and on a Ready cluster: the operator sets it on every node, then has the cluster rebalance once
// (asd takes it live, in effect at the next exchange, and a node restarted with another factor does not
// rejoin the others). Combined with another change, some pods would restart with the new factor while
// the others run the old one; on a cluster that is not Ready, its pods may still run different configs.
// A cluster with no pod yet may take any factor.
func replicationFactorChange(old, c *ackov1alpha1.AerospikeCluster) field.ErrorList {
	changes := factorChanges(old, c)
	if len(changes) == 0 || len(old.Status.Pods) == 0 {
		return nil
	}
	what := "the replication-factor of " + strings.Join(changes, ", ")
	path := specPath.Child("aerospikeConfig", "namespaces")
	if !apiequality.Semantic.DeepEqual(withoutFactors(old.Spec), withoutFactors(c.Spec)) {
		return field.ErrorList{field.Forbidden(path, fmt.Sprintf("change %s alone: the operator sets it on every "+
			"running node at once and then has the cluster rebalance, and a pod restarted meanwhile for another "+
			"change would start with a factor the others do not run, which splits the cluster; apply the other "+
			"changes before or after", what))}
	}
	if ready := meta.FindStatusCondition(old.Status.Conditions, ackov1alpha1.ConditionReady); ready == nil ||
		ready.Status != metav1.ConditionTrue || old.Status.ObservedGeneration != old.Generation {
		return field.ErrorList{field.Forbidden(path, fmt.Sprintf("cannot change %s while the cluster is not Ready: "+
			"every node must run the same config and answer before the factor goes to all of them; wait until "+
			"the cluster is Ready", what))}
	}
	return nil
}

// factorChanges describes each namespace whose replication-factor changes: "namespace \"test\" (2 to 3)".
func factorChanges(old, c *ackov1alpha1.AerospikeCluster) []string {
	before := config.NamespaceReplicationFactors(old)
	after := config.NamespaceReplicationFactors(c)
	var out []string
	for _, name := range slices.Sorted(maps.Keys(after)) {
		was, ok := before[name]
		if !ok || slices.Equal(slices.Compact(slices.Sorted(slices.Values(was))),
			slices.Compact(slices.Sorted(slices.Values(after[name])))) {
			continue
		}
		out = append(out, fmt.Sprintf("namespace %q (%s to %s)", name, factorList(was), factorList(after[name])))
	}
	return out
}

// withoutFactors is the spec as JSON with every namespace's replication-factor left out (in the
// cluster's config and in each rack's), to tell a change of the factors alone.
func withoutFactors(spec ackov1alpha1.AerospikeClusterSpec) any {
	data, err := json.Marshal(spec)
	if err != nil {
		return nil
	}
	var tree any
	if json.Unmarshal(data, &tree) != nil {
		return nil
	}
	stripFactors(tree)
	return tree
}

// stripFactors deletes the replication-factor of every namespace in a spec's JSON tree.
func stripFactors(v any) {
	switch node := v.(type) {
	case map[string]any:
		for key, child := range node {
			if list, ok := child.([]any); ok && key == "namespaces" {
				for _, ns := range list {
					if m, ok := ns.(map[string]any); ok {
						delete(m, "replication-factor")
					}
				}
			}
			stripFactors(child)
		}
	case []any:
		for _, child := range node {
			stripFactors(child)
		}
	}
}

// factorList shows a namespace's factors: one value when every rack has the same.
func factorList(factors []int) string {
	distinct := slices.Compact(slices.Sorted(slices.Values(factors)))
	if len(distinct) == 1 {
		return strconv.Itoa(distinct[0])
	}
	return fmt.Sprint(distinct)
}

// AsError wraps errs the Kubernetes way (422 Invalid, one cause per violation), or returns nil.
func AsError(c *ackov1alpha1.AerospikeCluster, errs field.ErrorList) error {
	if len(errs) == 0 {
		return nil
	}
	gk := ackov1alpha1.GroupVersion.WithKind("AerospikeCluster").GroupKind()
	return apierrors.NewInvalid(gk, c.Name, errs)
}
