package backup

import (
	"fmt"
	"maps"
	"slices"

	"k8s.io/apimachinery/pkg/util/validation/field"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
	"github.com/acko-io/acko/internal/config"
)

// ValidateBackup checks an AerospikeBackup against the cluster it names (nil: there is none). A cluster
// is only looked for when the backup is new or names another one: a backup of a deleted cluster can
// still be changed (its runs listed, its retention shortened).
func ValidateBackup(bk *ackov1alpha1.AerospikeBackup, cluster *ackov1alpha1.AerospikeCluster, checkCluster bool) field.ErrorList {
	errs := nameErrors(bk.Name)
	spec := field.NewPath("spec")
	if checkCluster && cluster == nil {
		errs = append(errs, clusterNotFound(spec, bk.Spec.Cluster, bk.Namespace))
	}
	if cluster != nil {
		have := config.NamespaceNames(cluster)
		for i, ns := range bk.Spec.Namespaces {
			if !slices.Contains(have, ns) {
				errs = append(errs, field.NotSupported(spec.Child("namespaces").Index(i), ns, have))
			}
		}
	}
	if bk.Spec.Schedule != "" {
		if _, err := ParseSchedule(bk.Spec.Schedule); err != nil {
			errs = append(errs, field.Invalid(spec.Child("schedule"), bk.Spec.Schedule, err.Error()))
		}
	}
	if inc := bk.Spec.Incremental; inc != nil {
		if _, err := ParseSchedule(inc.Schedule); err != nil {
			errs = append(errs, field.Invalid(spec.Child("incremental", "schedule"), inc.Schedule, err.Error()))
		}
	}
	return errs
}

// ValidateRestore checks a new AerospikeRestore against the cluster and the backup it names (nil:
// there is none, or it names files instead).
func ValidateRestore(rs *ackov1alpha1.AerospikeRestore, cluster *ackov1alpha1.AerospikeCluster,
	bk *ackov1alpha1.AerospikeBackup) field.ErrorList {
	errs := nameErrors(rs.Name)
	spec := field.NewPath("spec")
	if cluster == nil {
		errs = append(errs, clusterNotFound(spec, rs.Spec.Cluster, rs.Namespace))
	} else {
		have := config.NamespaceNames(cluster)
		for _, from := range slices.Sorted(maps.Keys(rs.Spec.Namespaces)) {
			if to := rs.Spec.Namespaces[from]; !slices.Contains(have, to) {
				errs = append(errs, field.NotSupported(spec.Child("namespaces").Key(from), to, have))
			}
		}
	}
	if ref := rs.Spec.Backup; ref != nil && bk == nil {
		errs = append(errs, field.Invalid(spec.Child("backup", "name"), ref.Name,
			fmt.Sprintf("AerospikeBackup %q not found in namespace %q", ref.Name, rs.Namespace)))
	} else if ref != nil {
		errs = append(errs, chainErrors(spec.Child("backup", "id"), bk, ref.ID)...)
	}
	return errs
}

// chainErrors refuses a restore of a successful run whose chain (an incremental's full base and the
// incrementals before it) misses a run: it could only be half restored.
func chainErrors(path *field.Path, bk *ackov1alpha1.AerospikeBackup, id string) field.ErrorList {
	run := RestorableRun(bk.Status.Backups, id)
	if run == nil {
		return nil // not run yet: the restore waits, and says so
	}
	if _, missing := Chain(bk.Status.Backups, run.ID); missing != "" {
		return field.ErrorList{field.Invalid(path, id, MissingLink(bk.Name, run.ID, missing))}
	}
	return nil
}

// RestorableRun is the successful run named id, or the newest successful one when id is empty.
func RestorableRun(runs []ackov1alpha1.BackupRunStatus, id string) *ackov1alpha1.BackupRunStatus {
	for i := len(runs) - 1; i >= 0; i-- {
		if run := &runs[i]; run.Phase == ackov1alpha1.BackupSucceeded && (id == "" || run.ID == id) {
			return run
		}
	}
	return nil
}

func nameErrors(name string) field.ErrorList {
	if len(name) > MaxNameLength {
		return field.ErrorList{field.TooLong(field.NewPath("metadata", "name"), name, MaxNameLength)}
	}
	return nil
}

func clusterNotFound(spec *field.Path, name, namespace string) *field.Error {
	return field.Invalid(spec.Child("cluster"), name, fmt.Sprintf("AerospikeCluster %q not found in namespace %q", name, namespace))
}
