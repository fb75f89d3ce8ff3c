package v1alpha1

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
	"github.com/acko-io/acko/internal/backup"
)

// Paths and names of the backup and restore webhooks, as in the markers below.
const (
	BackupPath  = "/validate-acko-io-v1alpha1-aerospikebackup"
	BackupName  = "vaerospikebackup-v1alpha1.kb.io"
	RestorePath = "/validate-acko-io-v1alpha1-aerospikerestore"
	RestoreName = "vaerospikerestore-v1alpha1.kb.io"
)

// +kubebuilder:webhook:path=/validate-acko-io-v1alpha1-aerospikebackup,mutating=false,failurePolicy=fail,sideEffects=None,groups=acko.io,resources=aerospikebackups,verbs=create;update,versions=v1alpha1,name=vaerospikebackup-v1alpha1.kb.io,admissionReviewVersions=v1
// +kubebuilder:webhook:path=/validate-acko-io-v1alpha1-aerospikerestore,mutating=false,failurePolicy=fail,sideEffects=None,groups=acko.io,resources=aerospikerestores,verbs=create;update,versions=v1alpha1,name=vaerospikerestore-v1alpha1.kb.io,admissionReviewVersions=v1

// SetupBackupWebhooksWithManager registers the AerospikeBackup and AerospikeRestore webhooks; they read
// the clusters and backups they name through the API reader (never the cache: a cluster created a moment
// ago must be found).
func SetupBackupWebhooksWithManager(mgr ctrl.Manager) error {
	objects := mgr.GetAPIReader()
	if err := ctrl.NewWebhookManagedBy(mgr, &ackov1alpha1.AerospikeBackup{}).
		WithValidator(&AerospikeBackupValidator{Objects: objects}).WithValidatorCustomPath(BackupPath).
		RecoverPanic(true).Complete(); err != nil {
		return err
	}
	return ctrl.NewWebhookManagedBy(mgr, &ackov1alpha1.AerospikeRestore{}).
		WithValidator(&AerospikeRestoreValidator{Objects: objects}).WithValidatorCustomPath(RestorePath).
		RecoverPanic(true).Complete()
}

// AerospikeBackupValidator refuses a backup that names a cluster or namespace that does not exist, or a
// schedule that does not parse.
type AerospikeBackupValidator struct {
	Objects client.Reader
}

var _ admission.Validator[*ackov1alpha1.AerospikeBackup] = &AerospikeBackupValidator{}

// ValidateCreate checks a new backup.
func (v *AerospikeBackupValidator) ValidateCreate(ctx context.Context, bk *ackov1alpha1.AerospikeBackup) (
	admission.Warnings, error) {
	return v.validate(ctx, bk, true)
}

// ValidateUpdate checks a changed backup; its cluster is looked for again only when it names another.
func (v *AerospikeBackupValidator) ValidateUpdate(ctx context.Context, old, bk *ackov1alpha1.AerospikeBackup) (
	admission.Warnings, error) {
	return v.validate(ctx, bk, old.Spec.Cluster != bk.Spec.Cluster)
}

// ValidateDelete allows every deletion; the webhook is not registered for it.
func (v *AerospikeBackupValidator) ValidateDelete(context.Context, *ackov1alpha1.AerospikeBackup) (
	admission.Warnings, error) {
	return nil, nil
}

func (v *AerospikeBackupValidator) validate(ctx context.Context, bk *ackov1alpha1.AerospikeBackup, checkCluster bool) (
	admission.Warnings, error) {
	cluster, err := lookup(ctx, v.Objects, bk.Namespace, bk.Spec.Cluster, &ackov1alpha1.AerospikeCluster{})
	if err != nil {
		return nil, err
	}
	return nil, invalid("AerospikeBackup", bk.Name, backup.ValidateBackup(bk, cluster, checkCluster))
}

// AerospikeRestoreValidator refuses a restore that names a cluster, a namespace or a backup that does not
// exist. Its spec cannot change (the CRD says so), so only a new one is checked.
type AerospikeRestoreValidator struct {
	Objects client.Reader
}

var _ admission.Validator[*ackov1alpha1.AerospikeRestore] = &AerospikeRestoreValidator{}

// ValidateCreate checks a new restore.
func (v *AerospikeRestoreValidator) ValidateCreate(ctx context.Context, rs *ackov1alpha1.AerospikeRestore) (
	admission.Warnings, error) {
	cluster, err := lookup(ctx, v.Objects, rs.Namespace, rs.Spec.Cluster, &ackov1alpha1.AerospikeCluster{})
	if err != nil {
		return nil, err
	}
	var bk *ackov1alpha1.AerospikeBackup
	if ref := rs.Spec.Backup; ref != nil {
		if bk, err = lookup(ctx, v.Objects, rs.Namespace, ref.Name, &ackov1alpha1.AerospikeBackup{}); err != nil {
			return nil, err
		}
	}
	return nil, invalid("AerospikeRestore", rs.Name, backup.ValidateRestore(rs, cluster, bk))
}

// ValidateUpdate allows what the CRD allows (status and metadata).
func (v *AerospikeRestoreValidator) ValidateUpdate(context.Context, *ackov1alpha1.AerospikeRestore,
	*ackov1alpha1.AerospikeRestore) (admission.Warnings, error) {
	return nil, nil
}

// ValidateDelete allows every deletion; the webhook is not registered for it.
func (v *AerospikeRestoreValidator) ValidateDelete(context.Context, *ackov1alpha1.AerospikeRestore) (
	admission.Warnings, error) {
	return nil, nil
}

// lookup reads an object named by a spec; nil when it does not exist.
func lookup[T client.Object](ctx context.Context, r client.Reader, namespace, name string, obj T) (T, error) {
	var none T
	if err := r.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, obj); err != nil {
		if apierrors.IsNotFound(err) {
			return none, nil
		}
		return none, err
	}
	return obj, nil
}

func invalid(kind, name string, errs field.ErrorList) error {
	if len(errs) == 0 {
		return nil
	}
	return apierrors.NewInvalid(ackov1alpha1.GroupVersion.WithKind(kind).GroupKind(), name, errs)
}
