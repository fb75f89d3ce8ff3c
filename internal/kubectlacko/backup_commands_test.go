package kubectlacko

import (
	"context"
	"slices"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
)

// backupSpecs are the specs of backup and restore on the real API server, with the backup CRDs and no
// operator: the tests play the operator's part. They run inside the ordered container of
// commands_test.go, before its last spec deletes the AerospikeCluster CRD.
func backupSpecs() {
	It("backup: refuses what cannot run, and adds a run with a generated id", func(ctx SpecContext) {
		r := acko("backup", "nope", "-n", "default")
		Expect(r.code).To(Equal(1))
		Expect(r.stderr).To(Equal(`Error: AerospikeBackup "nope" not found in namespace "default" ` +
			"(kubectl get asbk -n default lists them)\n"))

		createCluster(ctx, "backup", "demo")
		bk := createBackup(ctx, "backup")

		By("an id the API does not accept: refused before anything is sent")
		r = acko("backup", "nightly", "-n", "backup", "--id", "Before_Upgrade")
		Expect(r.code).To(Equal(1))
		Expect(r.stderr).To(ContainSubstring(`backup run id "Before_Upgrade" is not valid`))

		By("a generated id, added to spec.runs; the cluster is not Ready yet, which the command says")
		r = acko("backup", "nightly", "-n", "backup")
		Expect(r.code).To(BeZero(), r.stderr)
		runs := getBackup(ctx, bk).Spec.Runs
		Expect(runs).To(HaveLen(1))
		id := runs[0].ID
		Expect(id).To(MatchRegexp(`^\d{6}-\d{6}-[0-9a-z]{6}$`))
		Expect(r.stdout).To(Equal("Backup run " + id + " of backup/nightly requested (cluster demo)\n" +
			"It waits: the run starts when cluster demo is Ready (phase -; spec.whileChanging lets runs start during changes)\n" +
			"Follow it with: kubectl get asbk nightly -n backup -o jsonpath='{.status.backups[?(@.id==\"" + id + "\")]}'\n"))

		By("a second run is added after the first, which is kept")
		r = acko("backup", "nightly", "-n", "backup", "--id", "second")
		Expect(r.code).To(BeZero(), r.stderr)
		Expect(getBackup(ctx, bk).Spec.Runs).To(Equal([]ackov1alpha1.BackupRunSpec{{ID: id}, {ID: "second"}}))

		By("ids the backup has seen: in spec.runs, in its status, dropped by the retention")
		writeBackupStatus(ctx, bk, func(bk *ackov1alpha1.AerospikeBackup) {
			bk.Status.Backups = []ackov1alpha1.BackupRunStatus{{ID: "20261124-0000",
				Trigger: ackov1alpha1.TriggerSchedule, Phase: ackov1alpha1.BackupSucceeded}}
			bk.Status.FinishedRuns = []string{"old"}
		})
		for _, used := range []string{id, "20261124-0000", "old"} {
			r = acko("backup", "nightly", "-n", "backup", "--id", used)
			Expect(r.code).To(Equal(1))
			Expect(r.stderr).To(Equal(`Error: backup run id "` + used + `" was already used on backup/nightly and ` +
				"would never run again: choose another id, or leave out --id to get a new one\n"))
		}
		Expect(getBackup(ctx, bk).Spec.Runs).To(HaveLen(2), "refusals change nothing")
	})

	It("backup: writes spec.runs only at the resourceVersion it was decided on", func(ctx SpecContext) {
		createCluster(ctx, "backup-precondition", "demo")
		bk := createBackup(ctx, "backup-precondition")
		stale := bk.ResourceVersion
		writeBackupStatus(ctx, bk, func(bk *ackov1alpha1.AerospikeBackup) { bk.Status.FinishedRuns = []string{"x"} })
		patch, err := runsPatch(stale, []ackov1alpha1.BackupRunSpec{{ID: "x"}})
		Expect(err).NotTo(HaveOccurred())
		err = k8s.Patch(ctx, getBackup(ctx, bk), client.RawPatch(types.MergePatchType, patch))
		Expect(apierrors.IsConflict(err)).To(BeTrue(), "%v", err)
		Expect(getBackup(ctx, bk).Spec.Runs).To(BeEmpty())
	})

	It("backup --wait follows the run until Succeeded, and fails on Failed with the operator's message", func(ctx SpecContext) {
		c := createCluster(ctx, "backup-follow", "demo")
		writeStatus(ctx, c, func(c *ackov1alpha1.AerospikeCluster) {
			c.Status.Phase = ackov1alpha1.PhaseRunning
			meta.SetStatusCondition(&c.Status.Conditions, metav1.Condition{Type: ackov1alpha1.ConditionReady,
				Status: metav1.ConditionTrue, Reason: ackov1alpha1.ReasonClusterReady, Message: "ready",
				ObservedGeneration: c.Generation})
		})
		bk := createBackup(ctx, "backup-follow")

		done := runBackup(ctx, bk, ackov1alpha1.BackupSucceeded)
		r := acko("backup", "nightly", "-n", "backup-follow", "--id", "first", "--wait")
		Eventually(done).Should(BeClosed())
		Expect(r.code).To(BeZero(), r.stderr)
		Expect(r.stdout).To(MatchRegexp(`^Backup run first of backup-follow/nightly requested \(cluster demo\)\n` +
			`(pending: waiting for cluster demo to be Ready \(it is Running\)\n)?` +
			`running: namespaces test to backups:/nightly/first\n` +
			`Succeeded in \d+s: 1000 records, 64\.0 KiB \(65536 bytes\) in backups:/nightly/first\n$`))

		done = runBackup(ctx, bk, ackov1alpha1.BackupFailed)
		r = acko("backup", "nightly", "-n", "backup-follow", "--id", "second", "--wait")
		Eventually(done).Should(BeClosed())
		Expect(r.code).To(Equal(1))
		Expect(r.stdout).To(MatchRegexp(`\nFailed after \d+s: job nightly-second-test failed: Error while connecting\n$`))
		Expect(r.stderr).To(Equal("Error: backup run second of backup-follow/nightly failed: " +
			"job nightly-second-test failed: Error while connecting\n"))

		By("a wait that outlives its deadline says the run goes on")
		r = acko("backup", "nightly", "-n", "backup-follow", "--wait", "--timeout=1s")
		Expect(r.code).To(Equal(1))
		Expect(r.stderr).To(MatchRegexp(`timed out after 1s \(--timeout\) waiting for backup run \S+ to end; it goes on`))
	})

	It("restore: checks the backup, its run and the cluster, then creates the AerospikeRestore", func(ctx SpecContext) {
		const ns = "restore"
		createCluster(ctx, ns, "demo")
		Expect(acko("restore", "r1", "-n", ns).stderr).To(Equal(`Error: required flag(s) "cluster", "from" not set` + "\n"))
		Expect(acko("restore", "r1", "-n", ns, "--cluster", "demo", "--from", "nightly", "--conflict-policy", "unique").stderr).
			To(ContainSubstring(`--conflict-policy "unique": want one of Generation, Unique, Replace, NoGeneration`))
		Expect(acko("restore", "r1", "-n", ns, "--cluster", "demo", "--from", "nightly").stderr).
			To(Equal(`Error: AerospikeBackup "nightly" not found in namespace "restore" (kubectl get asbk -n restore lists them)` + "\n"))

		bk := createBackup(ctx, ns)
		Expect(acko("restore", "r1", "-n", ns, "--cluster", "demo", "--from", "nightly").stderr).
			To(ContainSubstring("AerospikeBackup restore/nightly has no successful backup yet"))
		writeBackupStatus(ctx, bk, func(bk *ackov1alpha1.AerospikeBackup) {
			bk.Status.Backups = []ackov1alpha1.BackupRunStatus{
				{ID: "first", Trigger: ackov1alpha1.TriggerOnDemand, Phase: ackov1alpha1.BackupSucceeded,
					Namespaces: []string{"test"}, Path: "backups:/nightly/first", Records: 1000},
				{ID: "broken", Trigger: ackov1alpha1.TriggerOnDemand, Phase: ackov1alpha1.BackupFailed, Message: "x"},
			}
		})
		Expect(acko("restore", "r1", "-n", ns, "--cluster", "demo", "--from", "nightly/broken").stderr).
			To(ContainSubstring("backup run broken of restore/nightly is Failed: only a run that Succeeded can be restored " +
				"(successful runs: first)"))
		Expect(acko("restore", "r1", "-n", ns, "--cluster", "missing", "--from", "nightly").stderr).
			To(ContainSubstring(`AerospikeCluster "missing" not found in namespace "restore"`))
		Expect(acko("restore", "r1", "-n", ns, "--cluster", "demo", "--from", "nightly", "--namespace-map", "test=nope").stderr).
			To(ContainSubstring("cluster demo has no Aerospike namespace nope to restore test into"))
		list := &ackov1alpha1.AerospikeRestoreList{}
		Expect(k8s.List(ctx, list, client.InNamespace(ns))).To(Succeed())
		Expect(list.Items).To(BeEmpty(), "refusals create nothing")

		r := acko("restore", "r1", "-n", ns, "--cluster", "demo", "--from", "nightly", "--conflict-policy", "Unique")
		Expect(r.code).To(BeZero(), r.stderr)
		Expect(r.stdout).To(Equal("Restore restore/r1 created: backup nightly (its newest successful run, now first, " +
			"backups:/nightly/first) into cluster demo, conflict policy Unique\n" +
			"Follow it with: kubectl get asrs r1 -n restore -w\n"))
		rs := &ackov1alpha1.AerospikeRestore{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "r1"}, rs)).To(Succeed())
		Expect(rs.Spec).To(Equal(ackov1alpha1.AerospikeRestoreSpec{Cluster: "demo",
			Backup: &ackov1alpha1.BackupReference{Name: "nightly"}, ConflictPolicy: ackov1alpha1.ConflictUnique, Parallel: 1}))

		r = acko("restore", "r1", "-n", ns, "--cluster", "demo", "--from", "nightly/first")
		Expect(r.code).To(Equal(1))
		Expect(r.stderr).To(HavePrefix(`Error: AerospikeRestore "r1" already exists in namespace "restore": a restore runs once`))
	})

	It("restore --wait follows the restore until Succeeded, and fails on Failed", func(ctx SpecContext) {
		const ns = "restore-follow"
		createCluster(ctx, ns, "demo")
		bk := createBackup(ctx, ns)
		writeBackupStatus(ctx, bk, func(bk *ackov1alpha1.AerospikeBackup) {
			bk.Status.Backups = []ackov1alpha1.BackupRunStatus{{ID: "first", Trigger: ackov1alpha1.TriggerOnDemand,
				Phase: ackov1alpha1.BackupSucceeded, Namespaces: []string{"test"}, Path: "backups:/nightly/first"}}
		})

		done := runRestore(ctx, ns, "r1", ackov1alpha1.BackupSucceeded)
		r := acko("restore", "r1", "-n", ns, "--cluster", "demo", "--from", "nightly/first", "--wait")
		Eventually(done).Should(BeClosed())
		Expect(r.code).To(BeZero(), r.stderr)
		Expect(r.stdout).To(MatchRegexp(`^Restore restore-follow/r1 created: backup nightly \(run first, backups:/nightly/first\) ` +
			`into cluster demo, conflict policy Generation\n` +
			`(pending: cluster demo is paused\n)?` +
			`running: restoring backup run first from backups:/nightly/first into cluster demo\n` +
			`Succeeded in \d+s: restored 990 of 1000 records \(10 existed, 0 fresher, 0 expired\)\n$`))

		done = runRestore(ctx, ns, "r2", ackov1alpha1.BackupFailed)
		r = acko("restore", "r2", "-n", ns, "--cluster", "demo", "--from", "nightly", "--wait")
		Eventually(done).Should(BeClosed())
		Expect(r.code).To(Equal(1))
		Expect(r.stderr).To(Equal("Error: restore restore-follow/r2 failed: job r2-restore-test failed: Error while connecting\n"))
	})

	It("completes backup names, runs and conflict policies", func(ctx SpecContext) {
		const ns = "complete-backup"
		createCluster(ctx, ns, "demo")
		bk := createBackup(ctx, ns)
		writeBackupStatus(ctx, bk, func(bk *ackov1alpha1.AerospikeBackup) {
			bk.Status.Backups = []ackov1alpha1.BackupRunStatus{
				{ID: "first", Trigger: ackov1alpha1.TriggerOnDemand, Phase: ackov1alpha1.BackupSucceeded},
				{ID: "broken", Trigger: ackov1alpha1.TriggerOnDemand, Phase: ackov1alpha1.BackupFailed},
			}
		})
		Expect(acko("__complete", "backup", "-n", ns, "").stdout).To(Equal("nightly\n:4\n"))
		Expect(acko("__complete", "restore", "r", "-n", ns, "--from", "ni").stdout).To(Equal("nightly\n:4\n"))
		Expect(acko("__complete", "restore", "r", "-n", ns, "--from", "nightly/").stdout).To(Equal("nightly/first\n:4\n"))
		Expect(acko("__complete", "restore", "r", "-n", ns, "--cluster", "").stdout).To(Equal("demo\n:4\n"))
		Expect(acko("__complete", "restore", "r", "--conflict-policy", "").stdout).
			To(Equal("Generation\nUnique\nReplace\nNoGeneration\n:4\n"))
	})
}

// createBackup creates the AerospikeBackup "nightly" of the cluster "demo" onto the claim "backups".
func createBackup(ctx context.Context, namespace string) *ackov1alpha1.AerospikeBackup {
	GinkgoHelper()
	bk := &ackov1alpha1.AerospikeBackup{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "nightly"},
		Spec: ackov1alpha1.AerospikeBackupSpec{Cluster: "demo",
			Destination: ackov1alpha1.BackupDestination{Volume: &ackov1alpha1.VolumeDestination{ClaimName: "backups"}}},
	}
	Expect(k8s.Create(ctx, bk)).To(Succeed())
	return bk
}

func getBackup(ctx context.Context, bk *ackov1alpha1.AerospikeBackup) *ackov1alpha1.AerospikeBackup {
	GinkgoHelper()
	cur := &ackov1alpha1.AerospikeBackup{}
	Expect(k8s.Get(ctx, client.ObjectKeyFromObject(bk), cur)).To(Succeed())
	return cur
}

// writeBackupStatus changes the status as the operator would, on a fresh read.
func writeBackupStatus(ctx context.Context, bk *ackov1alpha1.AerospikeBackup, change func(*ackov1alpha1.AerospikeBackup)) {
	GinkgoHelper()
	Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur := &ackov1alpha1.AerospikeBackup{}
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(bk), cur); err != nil {
			return err
		}
		change(cur)
		return k8s.Status().Update(ctx, cur)
	})).To(Succeed())
}

// standIn runs play in the background and returns a channel closed when it is done: a spec waits for
// it, so that no write of its is cut off by the end of the spec.
func standIn(play func()) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer GinkgoRecover()
		defer close(done)
		play()
	}()
	return done
}

// runBackup plays the backup controller for the next on-demand run of the spec: Pending, Running, then
// phase (Failed with a Job's failure).
func runBackup(ctx context.Context, bk *ackov1alpha1.AerospikeBackup, phase ackov1alpha1.BackupPhase) <-chan struct{} {
	return standIn(func() { playBackup(ctx, bk, phase) })
}

func playBackup(ctx context.Context, bk *ackov1alpha1.AerospikeBackup, phase ackov1alpha1.BackupPhase) {
	var id string
	Eventually(func() string {
		cur := getBackup(ctx, bk)
		for _, r := range cur.Spec.Runs {
			if findRun(cur, r.ID) == nil {
				id = r.ID
			}
		}
		return id
	}).WithContext(ctx).ShouldNot(BeEmpty())
	step := func(change func(run *ackov1alpha1.BackupRunStatus)) {
		writeBackupStatus(ctx, bk, func(bk *ackov1alpha1.AerospikeBackup) {
			i := slices.IndexFunc(bk.Status.Backups, func(r ackov1alpha1.BackupRunStatus) bool { return r.ID == id })
			if i < 0 {
				bk.Status.Backups = append(bk.Status.Backups, ackov1alpha1.BackupRunStatus{ID: id,
					Trigger: ackov1alpha1.TriggerOnDemand})
				i = len(bk.Status.Backups) - 1
			}
			change(&bk.Status.Backups[i])
		})
		time.Sleep(100 * time.Millisecond) // one watch event per step
	}
	step(func(run *ackov1alpha1.BackupRunStatus) {
		run.Phase, run.Message = ackov1alpha1.BackupPending, "waiting for cluster demo to be Ready (it is Running)"
	})
	step(func(run *ackov1alpha1.BackupRunStatus) {
		run.Phase, run.Message, run.Namespaces, run.Path = ackov1alpha1.BackupRunning, "", []string{"test"},
			"backups:/nightly/"+id
		run.StartTime, run.ClusterStable = &metav1.Time{Time: time.Now()}, ptr(true)
	})
	step(func(run *ackov1alpha1.BackupRunStatus) {
		run.Phase, run.CompletionTime = phase, &metav1.Time{Time: time.Now()}
		if phase == ackov1alpha1.BackupFailed {
			run.Message = "job nightly-" + id + "-test failed: Error while connecting"
			return
		}
		run.Records, run.Bytes = 1000, 65536
	})
}

// runRestore plays the restore controller for the AerospikeRestore name once it exists: Pending on a
// paused cluster, Running, then phase.
func runRestore(ctx context.Context, namespace, name string, phase ackov1alpha1.BackupPhase) <-chan struct{} {
	return standIn(func() { playRestore(ctx, namespace, name, phase) })
}

func playRestore(ctx context.Context, namespace, name string, phase ackov1alpha1.BackupPhase) {
	key := client.ObjectKey{Namespace: namespace, Name: name}
	Eventually(func() error { return k8s.Get(ctx, key, &ackov1alpha1.AerospikeRestore{}) }).WithContext(ctx).Should(Succeed())
	step := func(change func(rs *ackov1alpha1.AerospikeRestore)) {
		Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
			rs := &ackov1alpha1.AerospikeRestore{}
			if err := k8s.Get(ctx, key, rs); err != nil {
				return err
			}
			change(rs)
			return k8s.Status().Update(ctx, rs)
		})).To(Succeed())
		time.Sleep(100 * time.Millisecond)
	}
	step(func(rs *ackov1alpha1.AerospikeRestore) {
		rs.Status.Phase, rs.Status.Message = ackov1alpha1.BackupPending, "waiting: cluster demo is paused"
	})
	step(func(rs *ackov1alpha1.AerospikeRestore) {
		rs.Status.Phase, rs.Status.Message, rs.Status.BackupID, rs.Status.Path = ackov1alpha1.BackupRunning, "", "first",
			"backups:/nightly/first"
		rs.Status.StartTime = &metav1.Time{Time: time.Now()}
	})
	step(func(rs *ackov1alpha1.AerospikeRestore) {
		rs.Status.Phase, rs.Status.CompletionTime = phase, &metav1.Time{Time: time.Now()}
		if phase == ackov1alpha1.BackupFailed {
			rs.Status.Message = "job " + name + "-restore-test failed: Error while connecting"
			return
		}
		rs.Status.Records, rs.Status.Restored, rs.Status.Existed = 1000, 990, 10
	})
}
