package backup_test

import (
	"context"
	"fmt"
	"slices"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
	"github.com/acko-io/acko/internal/backup"
)

// restoreLines are asrestore's closing lines (counter_thread_func of src/restore.c).
func restoreLines(records, inserted int) []string {
	return []string{
		fmt.Sprintf("2026-12-04 10:00:09 UTC [INF] [   42] 0 UDF file(s), 0 secondary index(es), %d record(s) "+
			"(10 rec/s, 1 KiB/s, 100 B/rec, retries: 0)", records),
		fmt.Sprintf("2026-12-04 10:00:09 UTC [INF] [   42] Expired 0 : skipped 0 : err_ignored 0 : inserted %d: "+
			"failed %d (existed 0 , fresher %d)", inserted, records-inserted, records-inserted),
	}
}

// addRun adds an on-demand run to a backup's spec, on a fresh read (the operator writes its status).
func addRun(ns, name string, run ackov1alpha1.BackupRunSpec) {
	Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
		bk := backupIn(ns, name)()
		bk.Spec.Runs = append(bk.Spec.Runs, run)
		return k8s.Update(context.Background(), bk)
	})).To(Succeed())
}

// jobOf reads a Job that exists.
func jobOf(ns, name string) *batchv1.Job {
	job := &batchv1.Job{}
	Expect(k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, job)).To(Succeed())
	return job
}

func backedUp(records int) string {
	return fmt.Sprintf("2026-12-04 10:00:01 UTC [INF] [   42] Backed up %d record(s), 0 secondary index(es), "+
		"0 UDF file(s), %d byte(s) in total (~100 B/rec)", records, records*100)
}

var _ = Describe("Incremental backups", func() {
	It("wait for a full backup, build on the newest run, restore as a chain in order, and refuse a broken chain", func() {
		ctx := context.Background()
		ns, logs := backupTestbed("db")
		backupOf := backupIn(ns, "inc")
		restoreOf := func(name string) func() ackov1alpha1.AerospikeRestoreStatus {
			return func() ackov1alpha1.AerospikeRestoreStatus {
				rs := &ackov1alpha1.AerospikeRestore{}
				Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, rs)).To(Succeed())
				return rs.Status
			}
		}

		By("an incremental with no successful full run waits, and says so in a condition and an event")
		bk := &ackov1alpha1.AerospikeBackup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "inc"},
			Spec: ackov1alpha1.AerospikeBackupSpec{Cluster: "db", Runs: []ackov1alpha1.BackupRunSpec{{ID: "i1", Incremental: true}},
				Destination: ackov1alpha1.BackupDestination{Volume: &ackov1alpha1.VolumeDestination{ClaimName: "backups"}}}}
		Expect(k8s.Create(ctx, bk)).To(Succeed())
		eventuallyTool(func() *metav1.Condition {
			return meta.FindStatusCondition(backupOf().Status.Conditions, ackov1alpha1.ConditionReconciling)
		}).Should(And(Not(BeNil()), HaveField("Reason", ackov1alpha1.ReasonWaitingForFullBackup)))
		Expect(runOf(backupOf(), "i1")).To(And(HaveField("Phase", ackov1alpha1.BackupPending),
			HaveField("Message", ContainSubstring("no full backup has succeeded yet"))))
		eventuallyTool(func() []string {
			return eventMessages(types.NamespacedName{Namespace: ns, Name: "inc"}, ackov1alpha1.EventBackupWaiting)
		}).Should(ContainElement(ContainSubstring("incremental backup i1 is waiting")))
		Expect(jobNames(ns)).To(BeEmpty())

		By("a full run goes past it; once it succeeded, the incremental builds on it")
		addRun(ns, "inc", ackov1alpha1.BackupRunSpec{ID: "f"})
		endJob(ns, "inc-f-test", true, logs, backedUp(300))
		eventuallyTool(func() ackov1alpha1.BackupRunStatus { return runOf(backupOf(), "i1") }).Should(And(
			HaveField("Phase", ackov1alpha1.BackupRunning), HaveField("Base", "f"), HaveField("After", "f")))
		full, i1 := runOf(backupOf(), "f"), runOf(backupOf(), "i1")
		Expect(i1.ModifiedAfter.Time).To(Equal(full.StartTime.Time))
		job := jobOf(ns, "inc-i1-test")
		Expect(job.Spec.Template.Spec.Containers[0].Args).To(ContainElements("--modified-after",
			backup.ModifiedAfterArg(full.StartTime.Time)))
		Expect(job.Spec.Template.Spec.Containers[0].Env).To(ContainElement(corev1.EnvVar{Name: "TZ", Value: "UTC"}))
		endJob(ns, "inc-i1-test", true, logs, backedUp(7))

		By("the next incremental follows the newest run, with the same base")
		addRun(ns, "inc", ackov1alpha1.BackupRunSpec{ID: "i2", Incremental: true})
		endJob(ns, "inc-i2-test", true, logs, backedUp(5))
		eventuallyTool(func() ackov1alpha1.BackupRunStatus { return runOf(backupOf(), "i2") }).Should(And(
			HaveField("Phase", ackov1alpha1.BackupSucceeded), HaveField("Base", "f"), HaveField("After", "i1"),
			HaveField("Records", int64(5))))

		By("a restore of i2 restores f, then i1, then i2, one step after the other, and sums what asrestore said")
		Expect(k8s.Create(ctx, &ackov1alpha1.AerospikeRestore{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "chain"},
			Spec: ackov1alpha1.AerospikeRestoreSpec{Cluster: "db",
				Backup: &ackov1alpha1.BackupReference{Name: "inc", ID: "i2"}}})).To(Succeed())
		// The Jobs are created before the status says so: wait for the status.
		eventuallyTool(func() []ackov1alpha1.RestoreStep { return restoreOf("chain")().Chain }).Should(HaveLen(3))
		Expect(jobNames(ns)).To(ContainElement("chain-restore-test"))
		Consistently(func() []string { return jobNames(ns) }).ShouldNot(ContainElement("chain-restore-1-test"),
			"the incremental waits for its base to be restored")
		endJob(ns, "chain-restore-test", true, logs, restoreLines(300, 300)...)
		eventuallyTool(restoreOf("chain")).Should(And(HaveField("Phase", ackov1alpha1.BackupRunning),
			HaveField("Chain", HaveExactElements(
				And(HaveField("ID", "f"), HaveField("Phase", ackov1alpha1.BackupSucceeded), HaveField("Restored", int64(300))),
				And(HaveField("ID", "i1"), HaveField("Phase", ackov1alpha1.BackupRunning)),
				And(HaveField("ID", "i2"), HaveField("Phase", ackov1alpha1.BackupPending))))))
		Expect(jobOf(ns, "chain-restore-1-test").Spec.Template.Spec.Containers[0].Args).To(
			ContainElements("--directory", "/backup/inc/i1/test"))
		endJob(ns, "chain-restore-1-test", true, logs, restoreLines(7, 7)...)
		endJob(ns, "chain-restore-2-test", true, logs, restoreLines(5, 4)...)
		eventuallyTool(restoreOf("chain")).Should(And(HaveField("Phase", ackov1alpha1.BackupSucceeded),
			HaveField("BackupID", "i2"), HaveField("Records", int64(312)), HaveField("Restored", int64(311)),
			HaveField("Fresher", int64(1)), HaveField("Conditions", ContainElement(And(
				HaveField("Type", ackov1alpha1.ConditionReady),
				HaveField("Message", ContainSubstring("full backup f, then incrementals i1, i2")))))))

		By("a step that fails fails the restore: the steps after it never run, nothing is Succeeded")
		Expect(k8s.Create(ctx, &ackov1alpha1.AerospikeRestore{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "half"},
			Spec: ackov1alpha1.AerospikeRestoreSpec{Cluster: "db",
				Backup: &ackov1alpha1.BackupReference{Name: "inc", ID: "i2"}}})).To(Succeed())
		endJob(ns, "half-restore-test", true, logs, restoreLines(300, 300)...)
		endJob(ns, "half-restore-1-test", false, logs, "2026-12-04 10:00:09 UTC [ERR] [   42] Error while storing record")
		eventuallyTool(restoreOf("half")).Should(And(HaveField("Phase", ackov1alpha1.BackupFailed),
			HaveField("Message", HavePrefix("step 2 of 3 (backup i1): job half-restore-1-test failed: Error while storing record"))))
		Consistently(func() []string { return jobNames(ns) }).ShouldNot(ContainElement("half-restore-2-test"))

		By("a restore of a chain with a run missing is refused before any Job, naming the run")
		Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
			current := backupOf()
			current.Status.Backups = slices.DeleteFunc(current.Status.Backups,
				func(r ackov1alpha1.BackupRunStatus) bool { return r.ID == "i1" })
			return k8s.Status().Update(ctx, current)
		})).To(Succeed())
		Expect(k8s.Create(ctx, &ackov1alpha1.AerospikeRestore{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "broken"},
			Spec: ackov1alpha1.AerospikeRestoreSpec{Cluster: "db",
				Backup: &ackov1alpha1.BackupReference{Name: "inc"}}})).To(Succeed())
		eventuallyTool(func() *metav1.Condition {
			return meta.FindStatusCondition(restoreOf("broken")().Conditions, ackov1alpha1.ConditionStalled)
		}).Should(And(Not(BeNil()), HaveField("Reason", ackov1alpha1.ReasonIncompleteChain),
			HaveField("Message", ContainSubstring("backup i1 of its chain"))))
		Expect(jobNames(ns)).NotTo(ContainElement(HavePrefix("broken-")))

		By("a run whose encryption key Secret does not exist fails at once with the kubelet's reason")
		Expect(k8s.Create(ctx, &ackov1alpha1.AerospikeBackup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "sealed"},
			Spec: ackov1alpha1.AerospikeBackupSpec{Cluster: "db", Runs: []ackov1alpha1.BackupRunSpec{{ID: "x"}},
				Files:       ackov1alpha1.BackupFiles{Encryption: &ackov1alpha1.BackupEncryption{KeySecret: "no-key"}},
				Destination: ackov1alpha1.BackupDestination{Volume: &ackov1alpha1.VolumeDestination{ClaimName: "backups"}}}})).
			To(Succeed())
		eventuallyTool(func() []string { return jobNames(ns) }).Should(ContainElement("sealed-x-test"))
		cannotStartPod(ns, "sealed-x-test", `secret "no-key" not found`)
		eventuallyTool(func() ackov1alpha1.BackupRunStatus { return runOf(backupIn(ns, "sealed")(), "x") }).Should(And(
			HaveField("Phase", ackov1alpha1.BackupFailed),
			HaveField("Message", `job sealed-x-test cannot start: CreateContainerConfigError: secret "no-key" not found`)))
	})
})
