// Package v1alpha1 is the validating admission webhook of AerospikeCluster v1alpha1: a thin adapter
// around internal/validation, the rule set the reconciler shares.
package v1alpha1

import (
	"context"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
	"github.com/acko-io/acko/internal/validation"
	"github.com/acko-io/acko/internal/volumes"
)

const (
	// Path is where the manager serves the webhook, as in the marker below.
	Path = "/validate-acko-io-v1alpha1-aerospikecluster"
	// Name is the webhook's name in its ValidatingWebhookConfiguration, as in the marker below.
	Name = "vaerospikecluster-v1alpha1.kb.io"
)

// +kubebuilder:webhook:path=/validate-acko-io-v1alpha1-aerospikecluster,mutating=false,failurePolicy=fail,sideEffects=None,groups=acko.io,resources=aerospikeclusters,verbs=create;update,versions=v1alpha1,name=vaerospikecluster-v1alpha1.kb.io,admissionReviewVersions=v1

// SetupAerospikeClusterWebhookWithManager registers the webhook on the manager's webhook server.
// clusterDomain is the Kubernetes cluster's DNS domain (the manager's --cluster-domain).
func SetupAerospikeClusterWebhookWithManager(mgr ctrl.Manager, clusterDomain string) error {
	return ctrl.NewWebhookManagedBy(mgr, &ackov1alpha1.AerospikeCluster{}).
		WithValidator(&AerospikeClusterValidator{ClusterDomain: clusterDomain, Classes: mgr.GetAPIReader()}).
		WithValidatorCustomPath(Path).
		RecoverPanic(true).
		Complete()
}

// ValidatingWebhooks are the webhooks as the markers generate them into config/webhook/manifests.yaml
// in their order there (a test keeps the two equal), for the manager to register itself in self-signed mode.
func ValidatingWebhooks() []admissionregistrationv1.ValidatingWebhook {
	return []admissionregistrationv1.ValidatingWebhook{
		validatingWebhook(BackupName, BackupPath, "aerospikebackups"),
		validatingWebhook(Name, Path, "aerospikeclusters"),
		validatingWebhook(RestoreName, RestorePath, "aerospikerestores"),
	}
}

func validatingWebhook(name, path, resource string) admissionregistrationv1.ValidatingWebhook {
	return admissionregistrationv1.ValidatingWebhook{
		Name: name,
		ClientConfig: admissionregistrationv1.WebhookClientConfig{
			Service: &admissionregistrationv1.ServiceReference{
				Name: "webhook-service", Namespace: "system", Path: ptr.To(path),
			},
		},
		Rules: []admissionregistrationv1.RuleWithOperations{{
			Operations: []admissionregistrationv1.OperationType{
				admissionregistrationv1.Create, admissionregistrationv1.Update,
			},
			Rule: admissionregistrationv1.Rule{
				APIGroups:   []string{ackov1alpha1.GroupVersion.Group},
				APIVersions: []string{ackov1alpha1.GroupVersion.Version},
				Resources:   []string{resource},
			},
		}},
		FailurePolicy:           ptr.To(admissionregistrationv1.Fail),
		SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
		AdmissionReviewVersions: []string{"v1"},
	}
}

// AerospikeClusterValidator answers admission requests for AerospikeCluster.
type AerospikeClusterValidator struct {
	// ClusterDomain is the Kubernetes cluster's DNS domain, for the length of the pods' DNS names.
	ClusterDomain string
	// Classes reads StorageClasses, whether a volume may grow; nil checks nothing.
	Classes client.Reader
}

var _ admission.Validator[*ackov1alpha1.AerospikeCluster] = &AerospikeClusterValidator{}

// ValidateCreate checks a new cluster.
func (v *AerospikeClusterValidator) ValidateCreate(ctx context.Context, c *ackov1alpha1.AerospikeCluster) (
	admission.Warnings, error) {
	warnings, errs := validation.ValidateCreate(c, v.ClusterDomain)
	errs = append(errs, rawObjectErrors(ctx)...)
	return warnings, validation.AsError(c, errs)
}

// ValidateUpdate checks a change of a cluster.
func (v *AerospikeClusterValidator) ValidateUpdate(ctx context.Context, old, c *ackov1alpha1.AerospikeCluster) (
	admission.Warnings, error) {
	warnings, errs := validation.ValidateUpdate(old, c, v.ClusterDomain)
	if !validation.UpdateExempt(old, c) {
		errs = append(errs, rawObjectErrors(ctx)...)
	}
	grow, err := v.expansionRefused(ctx, old, c)
	if err != nil {
		return warnings, err
	}
	return warnings, validation.AsError(c, append(errs, grow...))
}

// expansionRefused refuses a larger volume whose StorageClass does not allow expansion.
func (v *AerospikeClusterValidator) expansionRefused(ctx context.Context, old, c *ackov1alpha1.AerospikeCluster) (
	field.ErrorList, error) {
	if v.Classes == nil {
		return nil, nil
	}
	var errs field.ErrorList
	for _, vol := range validation.GrownVolumes(old, c) {
		class, name, err := volumes.Class(ctx, v.Classes, vol.StorageClassName)
		if err != nil {
			return nil, err
		}
		if e := validation.ExpansionRefused(vol, name, class); e != nil {
			errs = append(errs, e)
		}
	}
	return errs, nil
}

// ValidateDelete allows every deletion; the webhook is not registered for it.
func (v *AerospikeClusterValidator) ValidateDelete(context.Context, *ackov1alpha1.AerospikeCluster) (
	admission.Warnings, error) {
	return nil, nil
}

// rawObjectErrors runs the checks that need the request's JSON, which the typed object has lost.
func rawObjectErrors(ctx context.Context) field.ErrorList {
	req, err := admission.RequestFromContext(ctx)
	if err != nil {
		return nil // called outside an admission request (e.g. a unit test): no raw object to check
	}
	return validation.SidecarUnknownFields(req.Object.Raw)
}
