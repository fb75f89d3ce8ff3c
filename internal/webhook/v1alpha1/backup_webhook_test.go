package v1alpha1

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
)

var _ = Describe("AerospikeBackup and AerospikeRestore webhooks", func() {
	It("refuse what names nothing, a namespace the cluster lacks and a schedule that does not parse, and store nothing", func() {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "bk-"}}
		Expect(k8s.Create(ctx, ns)).To(Succeed())
		cluster := &ackov1alpha1.AerospikeCluster{ObjectMeta: metav1.ObjectMeta{Name: "prod", Namespace: ns.Name},
			Spec: ackov1alpha1.AerospikeClusterSpec{Size: 1, Image: "aerospike:ce-8.1.1.1",
				AerospikeConfig: &ackov1alpha1.AerospikeConfig{Value: map[string]any{"namespaces": []any{map[string]any{
					"name": "test", "replication-factor": int64(1), "storage-engine": map[string]any{"type": "memory"}}}}}}}
		Expect(k8s.Create(ctx, cluster)).To(Succeed())
		backupOf := func(name, clusterName, schedule string, namespaces ...string) *ackov1alpha1.AerospikeBackup {
			return &ackov1alpha1.AerospikeBackup{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns.Name},
				Spec: ackov1alpha1.AerospikeBackupSpec{Cluster: clusterName, Schedule: schedule, Namespaces: namespaces,
					Destination: ackov1alpha1.BackupDestination{Volume: &ackov1alpha1.VolumeDestination{ClaimName: "b"}}}}
		}
		refused := func(err error, message string) {
			GinkgoHelper()
			Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%v", err)
			Expect(err.Error()).To(ContainSubstring(message))
		}
		refused(k8s.Create(ctx, backupOf("a", "nope", "")),
			`spec.cluster: Invalid value: "nope": AerospikeCluster "nope" not found in namespace "`+ns.Name+`"`)
		refused(k8s.Create(ctx, backupOf("a", "prod", "", "test", "users")),
			`spec.namespaces[1]: Unsupported value: "users": supported values: "test"`)
		refused(k8s.Create(ctx, backupOf("a", "prod", "every night")),
			`spec.schedule: Invalid value: "every night": schedule "every night" does not parse`)
		refused(k8s.Create(ctx, backupOf("a-name-that-is-far-too-long-for-the-jobs-it-names", "prod", "")),
			"metadata.name: Too long")
		list := &ackov1alpha1.AerospikeBackupList{}
		Expect(k8s.List(ctx, list)).To(Succeed())
		Expect(list.Items).To(BeEmpty(), "nothing stored")

		good := backupOf("nightly", "prod", "0 2 * * *", "test")
		Expect(k8s.Create(ctx, good)).To(Succeed())

		restoreOf := func(clusterName, backupName string, mapping map[string]string) *ackov1alpha1.AerospikeRestore {
			return &ackov1alpha1.AerospikeRestore{ObjectMeta: metav1.ObjectMeta{Name: "back", Namespace: ns.Name},
				Spec: ackov1alpha1.AerospikeRestoreSpec{Cluster: clusterName, Namespaces: mapping,
					Backup: &ackov1alpha1.BackupReference{Name: backupName}}}
		}
		refused(k8s.Create(ctx, restoreOf("prod", "weekly", nil)),
			`spec.backup.name: Invalid value: "weekly": AerospikeBackup "weekly" not found in namespace "`+ns.Name+`"`)
		refused(k8s.Create(ctx, restoreOf("staging", "nightly", nil)), `AerospikeCluster "staging" not found`)
		refused(k8s.Create(ctx, restoreOf("prod", "nightly", map[string]string{"test": "copy"})),
			`spec.namespaces[test]: Unsupported value: "copy": supported values: "test"`)
		Expect(k8s.Create(ctx, restoreOf("prod", "nightly", nil))).To(Succeed())

		files := restoreOf("prod", "", nil)
		files.Name, files.Spec.Backup = "files", nil
		files.Spec.Source = &ackov1alpha1.RestoreSource{Namespaces: []string{"test"},
			Volume: &ackov1alpha1.VolumeDestination{ClaimName: "copied", Path: "nightly/one"}}
		both := files.DeepCopy()
		both.Spec.Backup = &ackov1alpha1.BackupReference{Name: "nightly"}
		err := k8s.Create(ctx, both)
		Expect(err).To(MatchError(ContainSubstring("name exactly one of spec.backup and spec.source")))
		Expect(k8s.Create(ctx, files)).To(Succeed(), "files named by where they are: no AerospikeBackup looked for")
	})
})
