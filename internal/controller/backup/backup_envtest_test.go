package backup_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
	"github.com/acko-io/acko/internal/backup"
	backupcontroller "github.com/acko-io/acko/internal/controller/backup"
	restorecontroller "github.com/acko-io/acko/internal/controller/restore"
	"github.com/acko-io/acko/internal/pods"
)

// toolWait bounds the waits of these specs: they share 2 cores with the e2e suite in CI.
const toolWait = 20 * time.Second

// eventuallyTool is Eventually with toolWait.
func eventuallyTool(actual any) AsyncAssertion {
	return Eventually(actual).WithTimeout(toolWait)
}

// toolLogs stands in for the kubelet's logs: the envtest runs no pod, so the test says what each tool
// pod printed.
type toolLogs struct {
	mu    sync.Mutex
	lines map[string][]string // pod name to its log
}

func (l *toolLogs) Tail(_ context.Context, pod *corev1.Pod, _ string, _ int64) ([]string, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lines[pod.Name], nil
}

func (l *toolLogs) set(pod string, lines ...string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines[pod] = lines
}

// startBackupOperator runs the backup and restore reconcilers alone, on namespace ns; wrap, if any,
// wraps the client they write with.
func startBackupOperator(ns string, logs pods.LogReader, wrap ...func(client.WithWatch) client.Client) {
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0", Cache: cacheFor(ns), Controller: config.Controller{SkipNameValidation: ptr.To(true)}})
	Expect(err).NotTo(HaveOccurred())
	c := mgr.GetClient()
	for _, w := range wrap {
		direct, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme, Cache: &client.CacheOptions{Reader: mgr.GetCache()}})
		Expect(err).NotTo(HaveOccurred())
		c = w(direct)
	}
	recorder := mgr.GetEventRecorder("acko")
	Expect((&backupcontroller.AerospikeBackupReconciler{Client: c, Recorder: recorder, Logs: logs}).SetupWithManager(mgr)).To(Succeed())
	Expect((&restorecontroller.AerospikeRestoreReconciler{Client: c, Recorder: recorder, Logs: logs}).SetupWithManager(mgr)).To(Succeed())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = mgr.Start(ctx)
	}()
	DeferCleanup(func() { cancel(); <-done })
}

// readyCluster creates a cluster and says it is Ready, as the cluster's reconciler would.
func readyCluster(ns, name string) {
	c := &ackov1alpha1.AerospikeCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: ackov1alpha1.AerospikeClusterSpec{Size: 1, Image: "aerospike:ce-8.1.1.1",
			AerospikeConfig: &ackov1alpha1.AerospikeConfig{Value: map[string]any{"namespaces": []any{
				map[string]any{"name": "test", "replication-factor": 1, "storage-engine": map[string]any{"type": "memory"}}}}}}}
	Expect(k8s.Create(context.Background(), c)).To(Succeed())
	markReady(c)
}

// markReady says the cluster is Ready at its generation, as the cluster's reconciler would.
func markReady(c *ackov1alpha1.AerospikeCluster) {
	meta.SetStatusCondition(&c.Status.Conditions, metav1.Condition{Type: ackov1alpha1.ConditionReady,
		Status: metav1.ConditionTrue, Reason: ackov1alpha1.ReasonClusterReady, ObservedGeneration: c.Generation})
	c.Status.Phase = ackov1alpha1.PhaseRunning
	Expect(k8s.Status().Update(context.Background(), c)).To(Succeed())
}

// endJob ends a tool Job as the Job controller would once its pod ended, with a pod whose log says logs.
func endJob(ns, name string, ok bool, logs *toolLogs, lines ...string) {
	ctx := context.Background()
	job := &batchv1.Job{}
	eventuallyTool(func() error { return k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, job) }).Should(Succeed())
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-abcde",
		Labels: map[string]string{batchv1.JobNameLabel: name, ackov1alpha1.LabelManagedBy: ackov1alpha1.ManagedBy}},
		Spec: job.Spec.Template.Spec}
	Expect(k8s.Create(ctx, pod)).To(Succeed())
	logs.set(pod.Name, lines...)
	now := metav1.Now()
	job.Status.StartTime = &now
	if ok {
		job.Status.CompletionTime, job.Status.Succeeded = &now, 1
		job.Status.Conditions = []batchv1.JobCondition{
			{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue, LastTransitionTime: now},
			{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, LastTransitionTime: now}}
	} else {
		job.Status.Failed = 1
		job.Status.Conditions = []batchv1.JobCondition{
			{Type: batchv1.JobFailureTarget, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded", LastTransitionTime: now},
			{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded",
				Message: "Job has reached the specified backoff limit", LastTransitionTime: now}}
	}
	Expect(k8s.Status().Update(ctx, job)).To(Succeed())
}

// backupTestbed is a namespace with a Ready cluster and the backup and restore reconcilers, whose tool
// pods say what logs holds.
func backupTestbed(cluster string) (string, *toolLogs) {
	ns := newNamespace()
	logs := &toolLogs{lines: map[string][]string{}}
	startBackupOperator(ns, logs)
	readyCluster(ns, cluster)
	return ns, logs
}

// backupIn reads a backup, for Eventually.
func backupIn(ns, name string) func() *ackov1alpha1.AerospikeBackup {
	return func() *ackov1alpha1.AerospikeBackup {
		bk := &ackov1alpha1.AerospikeBackup{}
		Expect(k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, bk)).To(Succeed())
		return bk
	}
}

// runOf is the run id of a backup's status (zero when it has none).
func runOf(bk *ackov1alpha1.AerospikeBackup, id string) ackov1alpha1.BackupRunStatus {
	for _, r := range bk.Status.Backups {
		if r.ID == id {
			return r
		}
	}
	return ackov1alpha1.BackupRunStatus{}
}

// cannotStartPod is the pod of a tool Job as the kubelet reports it when a Secret the container takes
// is missing: waiting with CreateContainerConfigError.
func cannotStartPod(ns, job, message string) {
	ctx := context.Background()
	stuck := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: job + "-abcde",
		Labels: map[string]string{batchv1.JobNameLabel: job, ackov1alpha1.LabelManagedBy: ackov1alpha1.ManagedBy}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: backup.BackupTool, Image: backup.DefaultImage}}}}
	Expect(k8s.Create(ctx, stuck)).To(Succeed())
	stuck.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: backup.BackupTool, Image: backup.DefaultImage,
		State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CreateContainerConfigError",
			Message: message}}}}
	Expect(k8s.Status().Update(ctx, stuck)).To(Succeed())
}

func jobNames(ns string) []string {
	list := &batchv1.JobList{}
	Expect(k8s.List(context.Background(), list, client.InNamespace(ns))).To(Succeed())
	var out []string
	for _, j := range list.Items {
		out = append(out, j.Name)
	}
	return out
}

var _ = Describe("Backups and restores", func() {
	It("run as Jobs, report what the tools say, wait for a paused cluster, and refuse what names nothing", func() {
		ctx := context.Background()
		ns, logs := backupTestbed("prod")
		backupOf := func(name string) func() *ackov1alpha1.AerospikeBackup { return backupIn(ns, name) }

		By("an on-demand run: a Job per namespace, as the tools' ServiceAccount, then Succeeded with the tool's figures")
		bk := &ackov1alpha1.AerospikeBackup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "nightly"},
			Spec: ackov1alpha1.AerospikeBackupSpec{Cluster: "prod", Parallel: 1, Runs: []ackov1alpha1.BackupRunSpec{{ID: "one"}},
				Destination: ackov1alpha1.BackupDestination{Volume: &ackov1alpha1.VolumeDestination{ClaimName: "backups"}}}}
		Expect(k8s.Create(ctx, bk)).To(Succeed())
		eventuallyTool(func() ackov1alpha1.BackupPhase { return runOf(backupOf("nightly")(), "one").Phase }).
			Should(Equal(ackov1alpha1.BackupRunning))
		Expect(jobNames(ns)).To(ConsistOf("nightly-one-test"))
		sa := &corev1.ServiceAccount{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: backup.ServiceAccountName}, sa)).To(Succeed())
		Expect(sa.AutomountServiceAccountToken).To(Equal(ptr.To(false)))
		Expect(meta.IsStatusConditionTrue(backupOf("nightly")().Status.Conditions, ackov1alpha1.ConditionReconciling)).To(BeTrue())
		endJob(ns, "nightly-one-test", true, logs,
			"2026-12-04 10:00:01 UTC [INF] [   42] Backed up 42 record(s), 0 secondary index(es), 0 UDF file(s), 4200 byte(s) in total (~100 B/rec)")
		eventuallyTool(func() ackov1alpha1.BackupRunStatus { return runOf(backupOf("nightly")(), "one") }).Should(And(
			HaveField("Phase", ackov1alpha1.BackupSucceeded), HaveField("Records", int64(42)), HaveField("Bytes", int64(4200)),
			HaveField("Path", "backups:/nightly/one"), HaveField("ClusterStable", ptr.To(true))))
		done := backupOf("nightly")()
		Expect(meta.IsStatusConditionTrue(done.Status.Conditions, ackov1alpha1.ConditionReady)).To(BeTrue())
		Expect(meta.FindStatusCondition(done.Status.Conditions, ackov1alpha1.ConditionReconciling)).To(BeNil())
		Expect(done.Status.LastSuccessTime).NotTo(BeNil())

		By("a restore whose tool fails: Failed and Stalled, with the tool's last words")
		rs := &ackov1alpha1.AerospikeRestore{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "back"},
			Spec: ackov1alpha1.AerospikeRestoreSpec{Cluster: "prod", Backup: &ackov1alpha1.BackupReference{Name: "nightly"},
				ConflictPolicy: ackov1alpha1.ConflictUnique, Parallel: 1}}
		Expect(k8s.Create(ctx, rs)).To(Succeed())
		endJob(ns, "back-restore-test", false, logs,
			"2026-12-04 10:00:00 UTC [INF] [   42] Opened backup file /backup/nightly/one/test/test_00000.asb",
			"2026-12-04 10:00:00 UTC [ERR] [   42] Error while storing record - code 8: Server memory error",
			"2026-12-04 10:00:01 UTC [INF] [   42] 0 UDF file(s), 0 secondary index(es), 3 record(s) (3 rec/s, 0 KiB/s, 90 B/rec, retries: 0)",
			"2026-12-04 10:00:01 UTC [INF] [   42] Expired 0 : skipped 0 : err_ignored 0 : inserted 2: failed 0 (existed 0 , fresher 0)")
		restore := &ackov1alpha1.AerospikeRestore{}
		eventuallyTool(func() ackov1alpha1.BackupPhase {
			Expect(k8s.Get(ctx, client.ObjectKeyFromObject(rs), restore)).To(Succeed())
			return restore.Status.Phase
		}).Should(Equal(ackov1alpha1.BackupFailed))
		Expect(restore.Status.BackupID).To(Equal("one"), "the newest successful run")
		Expect(restore.Status.Message).To(Equal("job back-restore-test failed: Error while storing record - code 8: Server memory error"),
			"the tool's last error line, not its closing counts")
		Expect(meta.FindStatusCondition(restore.Status.Conditions, ackov1alpha1.ConditionStalled)).To(
			HaveField("Reason", ackov1alpha1.ReasonRestoreFailed))

		By("a restore of files named by where they are (no AerospikeBackup): the directory on the claim, per namespace")
		Expect(k8s.Create(ctx, &ackov1alpha1.AerospikeRestore{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "files"},
			Spec: ackov1alpha1.AerospikeRestoreSpec{Cluster: "prod", Parallel: 1, Source: &ackov1alpha1.RestoreSource{
				Volume: &ackov1alpha1.VolumeDestination{ClaimName: "backups", Path: "nightly/one"}, Namespaces: []string{"test"}}}})).
			To(Succeed())
		endJob(ns, "files-restore-test", true, logs,
			"2026-12-04 10:00:01 UTC [INF] [   42] 0 UDF file(s), 0 secondary index(es), 42 record(s) (42 rec/s, 4 KiB/s, 100 B/rec, retries: 0)",
			"2026-12-04 10:00:01 UTC [INF] [   42] Expired 1 : skipped 0 : err_ignored 0 : inserted 38: failed 3 (existed 2 , fresher 1)")
		fromFiles := &ackov1alpha1.AerospikeRestore{}
		eventuallyTool(func() ackov1alpha1.AerospikeRestoreStatus {
			Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "files"}, fromFiles)).To(Succeed())
			return fromFiles.Status
		}).Should(And(HaveField("Phase", ackov1alpha1.BackupSucceeded), HaveField("Records", int64(42)),
			HaveField("Restored", int64(38)), HaveField("Existed", int64(2)), HaveField("Fresher", int64(1)),
			HaveField("Expired", int64(1)), HaveField("Failures", int64(3)), HaveField("Skipped", int64(3)), HaveField("BackupID", ""),
			HaveField("Path", "backups:/nightly/one"), HaveField("Namespaces", []string{"test"})))
		job := &batchv1.Job{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "files-restore-test"}, job)).To(Succeed())
		Expect(job.Spec.Template.Spec.Containers[0].Args).To(ContainElements("--directory", "/backup/nightly/one/test"))

		By("a run whose credentials Secret does not exist fails with the kubelet's reason, and its Job is deleted")
		Expect(k8s.Create(ctx, &ackov1alpha1.AerospikeBackup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "offsite"},
			Spec: ackov1alpha1.AerospikeBackupSpec{Cluster: "prod", Runs: []ackov1alpha1.BackupRunSpec{{ID: "x"}},
				Destination: ackov1alpha1.BackupDestination{S3: &ackov1alpha1.S3Destination{
					Bucket: "b", CredentialsSecret: "s3-creds"}}}})).To(Succeed())
		eventuallyTool(func() []string { return jobNames(ns) }).Should(ContainElement("offsite-x-test"))
		cannotStartPod(ns, "offsite-x-test", `secret "s3-creds" not found`)
		// Pods are not watched: the run's poll sees it.
		eventuallyTool(func() ackov1alpha1.BackupRunStatus { return runOf(backupOf("offsite")(), "x") }).Should(And(
			HaveField("Phase", ackov1alpha1.BackupFailed),
			HaveField("Message", `job offsite-x-test cannot start: CreateContainerConfigError: secret "s3-creds" not found`)))
		eventuallyTool(func() []string { return jobNames(ns) }).ShouldNot(ContainElement("offsite-x-test"))

		By("a run asked while the cluster is paused waits, and starts nothing")
		c := &ackov1alpha1.AerospikeCluster{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "prod"}, c)).To(Succeed())
		c.Spec.Paused = true
		Expect(k8s.Update(ctx, c)).To(Succeed())
		current := backupOf("nightly")()
		current.Spec.Runs = append(current.Spec.Runs, ackov1alpha1.BackupRunSpec{ID: "two"})
		Expect(k8s.Update(ctx, current)).To(Succeed())
		eventuallyTool(func() string { return runOf(backupOf("nightly")(), "two").Message }).
			Should(Equal("waiting: cluster prod is paused"))
		Consistently(func() []string { return jobNames(ns) }).WithTimeout(2 * time.Second).
			Should(ConsistOf("nightly-one-test", "back-restore-test", "files-restore-test"))

		By("a backup of a cluster that does not exist: Stalled, and nothing started")
		Expect(k8s.Create(ctx, &ackov1alpha1.AerospikeBackup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "orphan"},
			Spec: ackov1alpha1.AerospikeBackupSpec{Cluster: "nope", Runs: []ackov1alpha1.BackupRunSpec{{ID: "x"}},
				Destination: ackov1alpha1.BackupDestination{Volume: &ackov1alpha1.VolumeDestination{ClaimName: "backups"}}}})).To(Succeed())
		eventuallyTool(func() *metav1.Condition {
			return meta.FindStatusCondition(backupOf("orphan")().Status.Conditions, ackov1alpha1.ConditionStalled)
		}).Should(And(Not(BeNil()), HaveField("Reason", ackov1alpha1.ReasonClusterNotFound),
			HaveField("Message", `AerospikeCluster "nope" not found in namespace "`+ns+`"`)))
		Consistently(func() []string { return jobNames(ns) }).WithTimeout(time.Second).
			Should(ConsistOf("nightly-one-test", "back-restore-test", "files-restore-test"))

		By("resumed, the waiting run goes; with keepLast 1 its success drops the first: Job deleted, files removed, id never again")
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "prod"}, c)).To(Succeed())
		c.Spec.Paused = false
		Expect(k8s.Update(ctx, c)).To(Succeed())
		markReady(c)                  // as the cluster's reconciler does once it has acted on the resume
		eventuallyTool(func() error { // the operator writes the status meanwhile
			current := backupOf("nightly")()
			current.Spec.Retention = &ackov1alpha1.BackupRetention{KeepLast: ptr.To[int32](1)}
			return k8s.Update(ctx, current)
		}).Should(Succeed())
		endJob(ns, "nightly-two-test", true, logs, "Backed up 7 record(s), 0 secondary index(es), 0 UDF file(s), 700 byte(s) in total")
		eventuallyTool(func() []ackov1alpha1.BackupRunStatus { return backupOf("nightly")().Status.Backups }).Should(ConsistOf(
			And(HaveField("ID", "two"), HaveField("Phase", ackov1alpha1.BackupSucceeded), HaveField("Records", int64(7)))))
		Expect(backupOf("nightly")().Status.FinishedRuns).To(Equal([]string{"one"}))
		eventuallyTool(func() []string { return jobNames(ns) }).Should(ConsistOf(
			"nightly-two-test", "nightly-one-rm-test", "back-restore-test", "files-restore-test"))
		cleanup := &batchv1.Job{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "nightly-one-rm-test"}, cleanup)).To(Succeed())
		Expect(cleanup.Spec.Template.Spec.Containers[0].Args).To(Equal([]string{
			"--remove-artifacts", "--namespace", "test", "--directory", "/backup/nightly/one/test"}))
		Consistently(func() []ackov1alpha1.BackupRunStatus { return backupOf("nightly")().Status.Backups }).
			WithTimeout(time.Second).Should(HaveLen(1), "the dropped id stays listed in spec.runs and never runs again")
	})
})

// errCrash is the error of a write that was made and then "crashed after": the reconcile ends there, as
// a killed operator's would, and the backup reconciler keeps nothing in memory, so the next reconcile
// is a restarted operator's.
var errCrash = errors.New("crashed after the write")

// crashAfter makes the write numbered k (from 1) of the client's life, then ends the reconcile.
func crashAfter(k int64, crashed *atomic.Bool) func(client.WithWatch) client.Client {
	return func(c client.WithWatch) client.Client {
		var n atomic.Int64
		after := func(write func() error) error {
			if err := write(); err != nil {
				return err
			}
			if n.Add(1) == k {
				crashed.Store(true)
				return errCrash
			}
			return nil
		}
		return interceptor.NewClient(c, interceptor.Funcs{
			Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
				return after(func() error { return c.Create(ctx, obj, opts...) })
			},
			Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
				return after(func() error { return c.Delete(ctx, obj, opts...) })
			},
			SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object,
				opts ...client.SubResourceUpdateOption) error {
				return after(func() error { return c.SubResource(sub).Update(ctx, obj, opts...) })
			},
		})
	}
}

// A run's writes: the ServiceAccount, the Job, the status Running, the status Succeeded. Killed after
// any of them, the operator finishes the run without a second Job and with the tool's figures.
var _ = Describe("A backup run killed after each write", func() {
	for k := int64(1); k <= 4; k++ {
		It(fmt.Sprintf("finishes the run once, killed after write %d", k), func() {
			ns := newNamespace()
			logs := &toolLogs{lines: map[string][]string{}}
			crashed := &atomic.Bool{}
			startBackupOperator(ns, logs, crashAfter(k, crashed))
			readyCluster(ns, "prod")
			Expect(k8s.Create(context.Background(), &ackov1alpha1.AerospikeBackup{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "nightly"},
				Spec: ackov1alpha1.AerospikeBackupSpec{Cluster: "prod", Parallel: 1, Runs: []ackov1alpha1.BackupRunSpec{{ID: "one"}},
					Destination: ackov1alpha1.BackupDestination{Volume: &ackov1alpha1.VolumeDestination{ClaimName: "b"}}}})).To(Succeed())
			runs := func() []ackov1alpha1.BackupRunStatus {
				bk := &ackov1alpha1.AerospikeBackup{}
				Expect(k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "nightly"}, bk)).To(Succeed())
				return bk.Status.Backups
			}
			// The Job ends once the run is Running: a Job that ended before would make the status go to
			// Succeeded at once, with no write 4 to be killed after (a flake of a loaded machine).
			eventuallyTool(runs).Should(ConsistOf(HaveField("Phase", ackov1alpha1.BackupRunning)))
			endJob(ns, "nightly-one-test", true, logs, "2026-12-04 10:00:01 UTC [INF] [   42] Backed up 42 record(s), 0 secondary index(es), 0 UDF file(s), 4200 byte(s) in total (~100 B/rec)")
			eventuallyTool(runs).Should(ConsistOf(And(HaveField("Phase", ackov1alpha1.BackupSucceeded),
				HaveField("Records", int64(42)))))
			Expect(crashed.Load()).To(BeTrue(), "write %d was made and the reconcile ended there", k)
			Expect(jobNames(ns)).To(ConsistOf("nightly-one-test"))
		})
	}
})

// Settled in issue 27: a backup of a migrating cluster runs, and says the cluster was not stable; one
// asked mid-roll waits.
var _ = Describe("A backup of a cluster that is not stable", func() {
	It("runs while Aerospike only migrates, saying so, and waits while the cluster rolls", func() {
		ctx := context.Background()
		ns := newNamespace()
		logs := &toolLogs{lines: map[string][]string{}}
		startBackupOperator(ns, logs)
		readyCluster(ns, "prod")
		c := &ackov1alpha1.AerospikeCluster{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "prod"}, c)).To(Succeed())
		state := func(readyReason, reconcilingReason string) {
			meta.SetStatusCondition(&c.Status.Conditions, metav1.Condition{Type: ackov1alpha1.ConditionReady,
				Status: metav1.ConditionFalse, Reason: readyReason, ObservedGeneration: c.Generation})
			meta.SetStatusCondition(&c.Status.Conditions, metav1.Condition{Type: ackov1alpha1.ConditionReconciling,
				Status: metav1.ConditionTrue, Reason: reconcilingReason, ObservedGeneration: c.Generation})
			c.Status.Phase = ackov1alpha1.PhaseReconciling
			Expect(k8s.Status().Update(ctx, c)).To(Succeed())
		}
		backupWith := func(name string) func() ackov1alpha1.BackupRunStatus {
			Expect(k8s.Create(ctx, &ackov1alpha1.AerospikeBackup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
				Spec: ackov1alpha1.AerospikeBackupSpec{Cluster: "prod", Runs: []ackov1alpha1.BackupRunSpec{{ID: "one"}},
					Destination: ackov1alpha1.BackupDestination{Volume: &ackov1alpha1.VolumeDestination{ClaimName: "b"}}}})).To(Succeed())
			return func() ackov1alpha1.BackupRunStatus {
				bk := &ackov1alpha1.AerospikeBackup{}
				Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, bk)).To(Succeed())
				if len(bk.Status.Backups) == 0 {
					return ackov1alpha1.BackupRunStatus{}
				}
				return bk.Status.Backups[0]
			}
		}

		state(ackov1alpha1.ReasonPodsNotReady, ackov1alpha1.ReasonRollingRestart)
		rolling := backupWith("rolling")
		eventuallyTool(rolling).Should(HaveField("Message", "waiting for cluster prod to be Ready (it is Reconciling)"))
		Consistently(func() []string { return jobNames(ns) }).WithTimeout(time.Second).Should(BeEmpty())

		state(ackov1alpha1.ReasonAerospikeNotStable, ackov1alpha1.ReasonApplying)
		migrating := backupWith("migrating")
		endJob(ns, "migrating-one-test", true, logs, "Backed up 5 record(s), 0 secondary index(es), 0 UDF file(s), 50 byte(s) in total")
		eventuallyTool(migrating).Should(And(HaveField("Phase", ackov1alpha1.BackupSucceeded),
			HaveField("ClusterStable", ptr.To(false)),
			HaveField("Message", "cluster prod was not stable (not Ready, or migrating) during the backup")))
		eventuallyTool(rolling).Should(HaveField("Phase", ackov1alpha1.BackupRunning), "the roll is over: it goes too")

		By("the cluster deleted while a run runs: the run is still followed to its end")
		Expect(k8s.Delete(ctx, c)).To(Succeed())
		endJob(ns, "rolling-one-test", true, logs, "Backed up 3 record(s), 0 secondary index(es), 0 UDF file(s), 30 byte(s) in total")
		eventuallyTool(rolling).Should(And(HaveField("Phase", ackov1alpha1.BackupSucceeded), HaveField("Records", int64(3)),
			HaveField("ClusterStable", ptr.To(false))))
	})
})
