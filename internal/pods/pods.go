// Package pods holds the operator's acts on Aerospike pods through the API server, shared by the
// rolling restart and the on-demand operations: evicting or deleting exactly the pod instance that
// was recorded, recording the config a pod's node runs, and setting its readiness gate.
package pods

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
	"github.com/acko-io/acko/internal/resources"
)

// Remove evicts the pod instance uid (the PodDisruptionBudget arbitrates with drains), or deletes it
// when evict is false (a broken pod, which the budget already counts as down). refused says why an
// eviction must wait: the budget allows no disruption now (429), or several budgets select the pod
// (500), which only the user can end. A pod already gone or replaced by another instance counts as removed.
func Remove(ctx context.Context, c client.Client, pod *corev1.Pod, uid types.UID, evict bool) (refused string, err error) {
	pre := &metav1.Preconditions{UID: &uid}
	if evict {
		err = c.SubResource("eviction").Create(ctx, pod, &policyv1.Eviction{
			ObjectMeta:    metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace},
			DeleteOptions: &metav1.DeleteOptions{Preconditions: pre},
		})
	} else {
		err = c.Delete(ctx, pod, &client.DeleteOptions{Preconditions: pre})
	}
	switch {
	case apierrors.IsTooManyRequests(err):
		return fmt.Sprintf("eviction of pod %s refused, waiting: %v", pod.Name, err), nil
	case evict && underSeveralBudgets(err):
		return fmt.Sprintf("eviction of pod %s refused: %v (another PodDisruptionBudget selects the cluster's pods; "+
			"no pod of the cluster can be evicted until it is deleted)", pod.Name, err), nil
	case apierrors.IsNotFound(err), apierrors.IsConflict(err):
		return "", nil
	}
	return "", err
}

// severalBudgets is what the API server answers (500) to an eviction of a pod that more than one
// PodDisruptionBudget selects, whatever the budgets allow.
const severalBudgets = "more than one PodDisruptionBudget"

// underSeveralBudgets: the eviction was refused because several budgets select the pod. It is no
// failure of the operator's: retried as one (through the circuit breaker) it would never end.
func underSeveralBudgets(err error) bool {
	var status apierrors.APIStatus
	return errors.As(err, &status) && status.Status().Code == http.StatusInternalServerError &&
		strings.Contains(status.Status().Message, severalBudgets)
}

// RecordFactorAhead sets the pod's acko.io/replication-factor-changing annotation to rf (the smallest
// factor its node may run once a live change of the factor reaches it, or before) unless it says as
// little already. Until the pod records the config its node runs (RecordRunning drops it), the node may
// run either factor; a change never recorded (the operator restarted, and the spec went back to the
// config the pod records) leaves it on a factor its config hash does not say.
func RecordFactorAhead(ctx context.Context, c client.Client, pod *corev1.Pod, rf int) error {
	if ahead, err := strconv.Atoi(pod.Annotations[ackov1alpha1.AnnotationFactorChanging]); err == nil && ahead <= rf {
		return nil
	}
	return patchAnnotations(ctx, c, pod, map[string]any{ackov1alpha1.AnnotationFactorChanging: strconv.Itoa(rf)})
}

// RecordConfig sets the pod's acko.io/config-hash annotation to the identity of the config its node
// runs now (after a live change or a restart in place).
func RecordConfig(ctx context.Context, c client.Client, pod *corev1.Pod, hash string) error {
	return RecordRunning(ctx, c, pod, hash, "")
}

// RecordLive records the config a live change of other settings than the replication-factor gave the
// pod's node: a factor a change left unrecorded (acko.io/replication-factor-changing) stays on it, as
// that change did not set the factor again.
func RecordLive(ctx context.Context, c client.Client, pod *corev1.Pod, hash string) error {
	return record(ctx, c, pod, hash, "", true)
}

// RecordRunning records the config (RecordConfig) and, unless empty, the volume sizes
// (acko.io/volume-sizes) the pod's node runs with now.
func RecordRunning(ctx context.Context, c client.Client, pod *corev1.Pod, hash, volumeSizes string) error {
	return record(ctx, c, pod, hash, volumeSizes, false)
}

func record(ctx context.Context, c client.Client, pod *corev1.Pod, hash, volumeSizes string, keepFactor bool) error {
	annotations := map[string]any{}
	if hash != "" && pod.Annotations[ackov1alpha1.AnnotationConfigHash] != hash {
		// The factor recorded at creation belonged to the config the pod ran until now.
		annotations[ackov1alpha1.AnnotationConfigHash], annotations[ackov1alpha1.AnnotationReplicationFactor] = hash, nil
	}
	if _, ok := pod.Annotations[ackov1alpha1.AnnotationFactorChanging]; ok && hash != "" && !keepFactor {
		annotations[ackov1alpha1.AnnotationFactorChanging] = nil // the node runs the factor of the config recorded
	}
	if volumeSizes != "" && pod.Annotations[ackov1alpha1.AnnotationVolumeSizes] != volumeSizes {
		annotations[ackov1alpha1.AnnotationVolumeSizes] = volumeSizes
	}
	if len(annotations) == 0 {
		return nil
	}
	return patchAnnotations(ctx, c, pod, annotations)
}

// patchAnnotations sets (or, for nil values, removes) annotations of the pod by a merge patch that
// carries its UID: what is recorded of one instance never lands on a newer pod of the name (the
// StatefulSet's next one, which runs what its template and ConfigMap say). A pod gone, or replaced
// by then, needs nothing recorded.
func patchAnnotations(ctx context.Context, c client.Client, pod *corev1.Pod, annotations map[string]any) error {
	target := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID}}
	err := PatchByUID(ctx, c, target, map[string]any{"metadata": map[string]any{"annotations": annotations}})
	if apierrors.IsNotFound(err) || anotherInstance(err) {
		return nil
	}
	return err
}

// anotherInstance: the API server refused a patch because the object of the name has another UID
// (metadata.uid is immutable): the instance the patch was for is gone.
func anotherInstance(err error) bool {
	var status apierrors.APIStatus
	if !apierrors.IsInvalid(err) || !errors.As(err, &status) || status.Status().Details == nil {
		return false
	}
	return slices.ContainsFunc(status.Status().Details.Causes, func(c metav1.StatusCause) bool { return c.Field == "metadata.uid" })
}

// SetGate writes the pod's readiness-gate condition acko.io/aerospike-ready with a strategic merge
// patch of its status (the conditions list merges by type), keeping the transition time unless the
// status changes.
func SetGate(ctx context.Context, c client.Client, pod *corev1.Pod, ready bool, reason, message string, now time.Time) error {
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	since := metav1.NewTime(now)
	if cur := resources.GateCondition(pod); cur != nil && cur.Status == status {
		since = cur.LastTransitionTime
	}
	cond := corev1.PodCondition{Type: ackov1alpha1.PodConditionAerospikeReady, Status: status, Reason: reason,
		Message: message, LastTransitionTime: since}
	data, err := json.Marshal(map[string]any{"status": map[string]any{"conditions": []corev1.PodCondition{cond}}})
	if err != nil {
		return err
	}
	return client.IgnoreNotFound(c.Status().Patch(ctx, pod, client.RawPatch(types.StrategicMergePatchType, data)))
}

// Annotate sets one annotation of the object (a pod or a claim): PatchByUID.
func Annotate(ctx context.Context, c client.Client, obj client.Object, key, value string) error {
	return PatchByUID(ctx, c, obj, map[string]any{"metadata": map[string]any{"annotations": map[string]any{key: value}}})
}

// PatchByUID applies a merge patch that carries the object's UID (metadata.uid is a precondition of
// a merge patch), so that it never lands on a newer object of the same name.
func PatchByUID(ctx context.Context, c client.Client, obj client.Object, patch map[string]any) error {
	meta, _ := patch["metadata"].(map[string]any)
	if meta == nil {
		meta = map[string]any{}
		patch["metadata"] = meta
	}
	meta["uid"] = obj.GetUID()
	data, err := json.Marshal(patch)
	if err != nil {
		return err
	}
	return c.Patch(ctx, obj, client.RawPatch(types.MergePatchType, data))
}
