// Package validation is the one rule set for AerospikeCluster specs. The admission webhook answers
// with it, and the reconciler re-checks ValidateSpec on every object it reads, because a webhook can
// be bypassed (absent, failurePolicy changed, object stored before it existed).
//
// Every function is pure: spec in, field errors and warnings out, in a deterministic order.
package validation

import (
	"fmt"
	"maps"
	"slices"
	"strconv"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
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
		validateRacks(c.Spec.RackConfig),
		structural,
		validatePod(c),
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

// replicationFactorChange refuses a new replication-factor for a namespace the running cluster has:
// asd keeps it from its config file only (it is not dynamic), and a node restarted with another factor
// does not cluster with the nodes that run the old one, so a roll one node at a time would split the
// cluster, and restarting every node at once loses an in-memory namespace's records.
func replicationFactorChange(old, c *ackov1alpha1.AerospikeCluster) field.ErrorList {
	before := config.NamespaceReplicationFactors(old)
	var errs field.ErrorList
	after := config.NamespaceReplicationFactors(c)
	for _, name := range slices.Sorted(maps.Keys(after)) {
		was, ok := before[name]
		if !ok || slices.Equal(slices.Compact(slices.Sorted(slices.Values(was))),
			slices.Compact(slices.Sorted(slices.Values(after[name])))) {
			continue
		}
		errs = append(errs, field.Forbidden(specPath.Child("aerospikeConfig", "namespaces"),
			fmt.Sprintf("cannot change the replication-factor of namespace %q on a running cluster (%s to %s): asd reads "+
				"it only at start and a node restarted with another factor does not rejoin the nodes that run the "+
				"old one, so a roll splits the cluster; create a new cluster with the new factor and migrate the data",
				name, factorList(was), factorList(after[name]))))
	}
	return errs
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
