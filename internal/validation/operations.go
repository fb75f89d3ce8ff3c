package validation

import (
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation/field"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
)

var operationsPath = specPath.Child("operations")

// validateOperations applies the operations guide's rules. Every operation is checked even when
// there are too many, so that one answer lists every violation.
func validateOperations(c *ackov1alpha1.AerospikeCluster) field.ErrorList {
	var errs field.ErrorList
	if len(c.Spec.Operations) > 1 {
		// No value, as the CRD's CEL rule: the message alone says what is wrong.
		errs = append(errs, field.Invalid(operationsPath, field.OmitValueType{}, MsgOnlyOneOperation))
	}
	for i := range c.Spec.Operations {
		errs = append(errs, validateOperation(c, &c.Spec.Operations[i], operationsPath.Index(i))...)
	}
	return errs
}

func validateOperation(c *ackov1alpha1.AerospikeCluster, op *ackov1alpha1.OperationSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	// Characters, not bytes, as CEL's size() counts them.
	if n := utf8.RuneCountInString(op.ID); n < 1 || n > ackov1alpha1.MaxOperationIDLength {
		errs = append(errs, field.Invalid(path.Child("id"), op.ID, MsgOperationIDLength))
	}
	switch op.Kind {
	case ackov1alpha1.OperationWarmRestart, ackov1alpha1.OperationPodRestart:
	default:
		errs = append(errs, field.NotSupported(path.Child("kind"), op.Kind,
			[]ackov1alpha1.OperationKind{ackov1alpha1.OperationWarmRestart, ackov1alpha1.OperationPodRestart}))
	}
	// An operation that already ran never runs again: its pods need not exist any more (the cluster may
	// have shrunk since), and a stale list must not block later changes.
	if OperationFinished(c, op.ID) {
		return errs
	}
	return append(errs, validatePodList(c, op.PodList, path.Child("podList"))...)
}

// OperationFinished reports whether the status records id as ended (Completed or Error): such an id
// never runs again.
func OperationFinished(c *ackov1alpha1.AerospikeCluster, id string) bool {
	st := c.Status.OperationStatus
	if st != nil && st.ID == id && st.Phase != ackov1alpha1.OperationInProgress {
		return true
	}
	return slices.Contains(c.Status.FinishedOperations, id)
}

// validatePodList accepts only pods the spec asks for: a name of the cluster's layout whose ordinal
// is below its rack's share of spec.size.
func validatePodList(c *ackov1alpha1.AerospikeCluster, pods []string, path *field.Path) field.ErrorList {
	if len(pods) == 0 {
		return nil
	}
	var errs field.ErrorList
	rackSizes := map[int32]int32{}
	for _, r := range c.RackPlan() {
		rackSizes[r.ID] = r.Size
	}
	seen := make(map[string]bool, len(pods))
	for i, name := range pods {
		if seen[name] {
			errs = append(errs, field.Duplicate(path.Index(i), name))
			continue
		}
		seen[name] = true
		rackID, ordinal, ok := c.ParsePodName(name)
		if size, known := rackSizes[rackID]; !ok || !known || ordinal >= size {
			errs = append(errs, field.Invalid(path.Index(i), name, podNameHint(c)))
		}
	}
	return errs
}

// podNameHint names the pattern of the cluster's layout and, when spec.size is valid (so at most
// eight names), every pod an operation can target.
func podNameHint(c *ackov1alpha1.AerospikeCluster) string {
	pattern := "<cluster>-<ordinal>"
	if c.MultiRack() {
		pattern = "<cluster>-<rackID>-<ordinal>"
	}
	hint := "not a pod of this cluster: pod names follow " + pattern
	if c.Spec.Size >= 1 && c.Spec.Size <= ackov1alpha1.MaxClusterSize {
		hint += fmt.Sprintf(" (%s)", strings.Join(c.DesiredPodNames(), ", "))
	}
	return hint
}

// validateOperationsLock refuses any change to spec.operations while the operation recorded in the
// stored object's status is InProgress: the executor has frozen its pod list and is mid-way through.
func validateOperationsLock(old, c *ackov1alpha1.AerospikeCluster) field.ErrorList {
	st := old.Status.OperationStatus
	if st == nil || st.Phase != ackov1alpha1.OperationInProgress {
		return nil
	}
	// Semantic equality treats nil and empty lists alike, as the CEL rule's `has() ? : []` does.
	if apiequality.Semantic.DeepEqual(old.Spec.Operations, c.Spec.Operations) {
		return nil
	}
	return field.ErrorList{field.Invalid(operationsPath, field.OmitValueType{}, MsgOperationsInFlight)}
}
