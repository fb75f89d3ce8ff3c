package kubectlacko

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
)

// nightly is an AerospikeBackup of aerospike-3node with one scheduled and two on-demand runs that
// ended, one dropped by the retention, and an on-demand run waiting in the spec.
func nightly() *ackov1alpha1.AerospikeBackup {
	return &ackov1alpha1.AerospikeBackup{
		ObjectMeta: metav1.ObjectMeta{Namespace: "aerospike", Name: "nightly", ResourceVersion: "7"},
		Spec: ackov1alpha1.AerospikeBackupSpec{
			Cluster: "aerospike-3node", Schedule: "@daily",
			Destination: ackov1alpha1.BackupDestination{Volume: &ackov1alpha1.VolumeDestination{ClaimName: "backups"}},
			Runs:        []ackov1alpha1.BackupRunSpec{{ID: "first"}, {ID: "broken"}, {ID: "queued"}},
		},
		Status: ackov1alpha1.AerospikeBackupStatus{
			Backups: []ackov1alpha1.BackupRunStatus{
				succeededRun("20261124-0000", ackov1alpha1.TriggerSchedule),
				succeededRun("first", ackov1alpha1.TriggerOnDemand),
				{ID: "broken", Trigger: ackov1alpha1.TriggerOnDemand, Phase: ackov1alpha1.BackupFailed,
					Message: "job nightly-broken-test failed: Error while connecting"},
			},
			FinishedRuns: []string{"dropped"},
		},
	}
}

func succeededRun(id string, trigger ackov1alpha1.BackupTrigger) ackov1alpha1.BackupRunStatus {
	return ackov1alpha1.BackupRunStatus{ID: id, Trigger: trigger, Phase: ackov1alpha1.BackupSucceeded,
		Namespaces: []string{"test"}, Path: "backups:/nightly/" + id, StartTime: agoPtr(time.Hour),
		CompletionTime: agoPtr(59 * time.Minute), Records: 1000, Bytes: 65536, ClusterStable: ptr(true)}
}

func TestBackupIDsFollowTheAPIPattern(t *testing.T) {
	for _, id := range []string{"a", "first", "before-upgrade", "261125-104512-x7k2pq", "20261203-1015"} {
		if err := checkBackupID(id); err != nil {
			t.Errorf("%q refused: %v", id, err)
		}
	}
	for _, id := range []string{"", "-a", "a-", "Upper", "a_b", "abcdefghijklmnopqrstu", "a/b"} {
		err := checkBackupID(id)
		if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("backup run id %q is not valid: 1 to 20 lowercase", id)) {
			t.Errorf("%q: error %v", id, err)
		}
	}
	id, err := unusedBackupID(nightly(), "", false, func() time.Time { return fixedNow })
	if err != nil || !strings.HasPrefix(id, "261125-100000-") || checkBackupID(id) != nil {
		t.Errorf("a generated id: %q, %v", id, err)
	}
}

func TestUsedBackupIDsAreRefused(t *testing.T) {
	bk := nightly()
	// In spec.runs, in the status (scheduled ones too), and dropped by the retention.
	for _, id := range []string{"queued", "first", "broken", "20261124-0000", "dropped"} {
		_, err := unusedBackupID(bk, id, true, time.Now)
		want := fmt.Sprintf("backup run id %q was already used on aerospike/nightly and would never run again", id)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("id %s: error %v, want %q", id, err, want)
		}
	}
	if id, err := unusedBackupID(bk, "second", true, time.Now); err != nil || id != "second" {
		t.Errorf("an unused id: %q, %v", id, err)
	}
}

func TestRunsWithAppendsAndMakesRoomOnlyFromEndedRuns(t *testing.T) {
	bk := nightly()
	runs, err := runsWith(bk, "second")
	if err != nil || ids(runs) != "first,broken,queued,second" {
		t.Fatalf("runs %v, %v", ids(runs), err)
	}

	// Full: the oldest ended runs make room, the one that has not run stays.
	bk.Spec.Runs = []ackov1alpha1.BackupRunSpec{{ID: "queued"}, {ID: "first"}, {ID: "dropped"}, {ID: "broken"}}
	for i := len(bk.Spec.Runs); i < maxRuns; i++ {
		bk.Spec.Runs = append(bk.Spec.Runs, ackov1alpha1.BackupRunSpec{ID: fmt.Sprintf("w%d", i)})
	}
	runs, err = runsWith(bk, "second")
	if err != nil || len(runs) != maxRuns || !strings.HasPrefix(ids(runs), "queued,dropped,broken,w4,") ||
		runs[maxRuns-1].ID != "second" {
		t.Fatalf("full list: %v, %v", ids(runs), err)
	}
	if ids(bk.Spec.Runs) == ids(runs) {
		t.Error("the object's spec was changed")
	}

	// Full of runs that have not ended: refused.
	bk.Spec.Runs = nil
	for i := range maxRuns {
		bk.Spec.Runs = append(bk.Spec.Runs, ackov1alpha1.BackupRunSpec{ID: fmt.Sprintf("w%d", i)})
	}
	bk.Status.Backups = append(bk.Status.Backups, ackov1alpha1.BackupRunStatus{ID: "w0",
		Trigger: ackov1alpha1.TriggerOnDemand, Phase: ackov1alpha1.BackupRunning})
	_, err = runsWith(bk, "second")
	if err == nil || !strings.Contains(err.Error(), "spec.runs of aerospike/nightly holds 16 runs, the most the API "+
		"allows, and none of them has ended") {
		t.Errorf("error %v", err)
	}
}

func ids(runs []ackov1alpha1.BackupRunSpec) string {
	var out []string
	for _, r := range runs {
		out = append(out, r.ID)
	}
	return strings.Join(out, ",")
}

func TestRunsPatchCarriesTheResourceVersion(t *testing.T) {
	data, err := runsPatch("42", []ackov1alpha1.BackupRunSpec{{ID: "first"}, {ID: "second"}})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"metadata":{"resourceVersion":"42"},"spec":{"runs":[{"id":"first"},{"id":"second"}]}}`
	if string(data) != want {
		t.Errorf("patch %s, want %s", data, want)
	}
}

func TestWhyRunWaits(t *testing.T) {
	bk, c := nightly(), runningCluster()
	if why := whyRunWaits(bk, "new", c, nil); why != "" {
		t.Errorf("a Ready cluster, no run before: %q", why)
	}
	bk.Status.Backups = append(bk.Status.Backups, ackov1alpha1.BackupRunStatus{ID: "queued",
		Trigger: ackov1alpha1.TriggerOnDemand, Phase: ackov1alpha1.BackupRunning})
	if why := whyRunWaits(bk, "new", c, nil); why != "backup run queued is Running: one run at a time" {
		t.Errorf("a run before: %q", why)
	}
	c.Generation = 5 // Ready was written for generation 4: the cluster changes
	c.Status.Phase = ackov1alpha1.PhaseReconciling
	want := "the run starts when cluster aerospike-3node is Ready (phase Reconciling; spec.whileChanging lets runs " +
		"start during changes)"
	if why := whyRunWaits(bk, "new", c, nil); why != want {
		t.Errorf("not Ready: %q", why)
	}
	bk.Spec.WhileChanging = true
	if why := whyRunWaits(bk, "new", c, nil); !strings.HasPrefix(why, "backup run queued") {
		t.Errorf("whileChanging: %q", why)
	}
	c.Spec.Paused = true
	if why := whyRunWaits(bk, "new", c, nil); !strings.HasPrefix(why, "cluster aerospike-3node is paused") {
		t.Errorf("paused, whileChanging or not: %q", why)
	}
}

// TestBackupFollowerPrintsEachChangeOnce feeds the follower the states a watch delivers: the run not
// taken up yet, waiting for the cluster, behind another run, running on an unstable cluster, Succeeded.
func TestBackupFollowerPrintsEachChangeOnce(t *testing.T) {
	var out bytes.Buffer
	f := newBackupFollower(&out, "new")
	bk := nightly()
	var run *ackov1alpha1.BackupRunStatus
	states := []func(){
		func() {},
		func() {
			bk.Status.Backups = append(bk.Status.Backups, ackov1alpha1.BackupRunStatus{ID: "new",
				Trigger: ackov1alpha1.TriggerOnDemand, Phase: ackov1alpha1.BackupPending,
				Message: "waiting for cluster aerospike-3node to be Ready (it is Reconciling)"})
			run = &bk.Status.Backups[len(bk.Status.Backups)-1]
		},
		func() {}, // the same state again prints nothing
		func() {
			bk.Status.Backups = append([]ackov1alpha1.BackupRunStatus{{ID: "20261125-0000",
				Trigger: ackov1alpha1.TriggerSchedule, Phase: ackov1alpha1.BackupRunning}}, bk.Status.Backups...)
			run = &bk.Status.Backups[len(bk.Status.Backups)-1]
		},
		func() {
			bk.Status.Backups[0].Phase = ackov1alpha1.BackupSucceeded
			run.Phase, run.Message, run.Namespaces, run.Path = ackov1alpha1.BackupRunning, "", []string{"test", "bar"},
				"backups:/nightly/new"
			run.StartTime, run.ClusterStable = agoPtr(2*time.Minute), ptr(true)
		},
		func() { run.ClusterStable = ptr(false) },
		func() {
			run.Phase, run.CompletionTime, run.Records, run.Bytes = ackov1alpha1.BackupSucceeded, agoPtr(25*time.Second),
				123456, 5*1024*1024+512*1024
			run.Message = "cluster aerospike-3node was not stable (not Ready, or migrating) during the backup"
		},
	}
	for i, change := range states {
		change()
		done, err := f.observe(bk)
		if err != nil || done != (i == len(states)-1) {
			t.Fatalf("state %d: done %t, %v", i, done, err)
		}
	}
	want := "pending: waiting for cluster aerospike-3node to be Ready (it is Reconciling)\n" +
		"pending: after backup run 20261125-0000, which is Running (one run at a time)\n" +
		"running: namespaces test, bar to backups:/nightly/new\n" +
		"  the cluster is not stable (not Ready, or migrating): the backup goes on\n" +
		"Succeeded in 1m35s: 123456 records, 5.5 MiB (5767168 bytes) in backups:/nightly/new\n" +
		"Note: cluster aerospike-3node was not stable (not Ready, or migrating) during the backup\n"
	if out.String() != want {
		t.Errorf("printed\n%s\nwant\n%s", out.String(), want)
	}
}

func TestBackupFollowerFailsOnAFailedRun(t *testing.T) {
	var out bytes.Buffer
	bk := nightly()
	bk.Status.Backups[2].StartTime, bk.Status.Backups[2].CompletionTime = agoPtr(time.Minute), agoPtr(50*time.Second)
	done, err := newBackupFollower(&out, "broken").observe(bk)
	if !done || err == nil || err.Error() != "backup run broken of aerospike/nightly failed: "+
		"job nightly-broken-test failed: Error while connecting" {
		t.Errorf("done %t, error %v", done, err)
	}
	if want := "Failed after 10s: job nightly-broken-test failed: Error while connecting\n"; out.String() != want {
		t.Errorf("printed %q, want %q", out.String(), want)
	}
	done, err = newBackupFollower(&out, "dropped").observe(bk)
	if !done || err == nil || !strings.Contains(err.Error(), "backup run dropped ended and the retention has "+
		"dropped it already") {
		t.Errorf("a dropped run: done %t, error %v", done, err)
	}
}

func TestFormatBytes(t *testing.T) {
	for n, want := range map[int64]string{0: "0 bytes", 1023: "1023 bytes", 1024: "1.0 KiB (1024 bytes)",
		3 << 30: "3.0 GiB (3221225472 bytes)", 5 << 40: "5.0 TiB (5497558138880 bytes)",
		5 << 50: "5120.0 TiB (5629499534213120 bytes)"} {
		if got := formatBytes(n); got != want {
			t.Errorf("%d: %q, want %q", n, got, want)
		}
	}
}

func TestRestoreRequestIsCheckedBeforeAnythingIsSent(t *testing.T) {
	ok := restoreRequest{cluster: "c", from: "nightly/first", conflictPolicy: "Unique",
		namespaces: map[string]string{"test": "copy"}}
	if err := ok.check(); err != nil {
		t.Errorf("valid request refused: %v", err)
	}
	if b, id := ok.source(); b != "nightly" || id != "first" {
		t.Errorf("source %q %q", b, id)
	}
	for _, tc := range []struct {
		change func(*restoreRequest)
		want   string
	}{
		{func(r *restoreRequest) { r.from = "" }, `--from "": want BACKUP or BACKUP/ID`},
		{func(r *restoreRequest) { r.from = "nightly/" }, `--from "nightly/": want BACKUP or BACKUP/ID`},
		{func(r *restoreRequest) { r.from = "/first" }, `--from "/first": want BACKUP or BACKUP/ID`},
		{func(r *restoreRequest) { r.from = "a/b/c" }, `--from "a/b/c": want BACKUP or BACKUP/ID`},
		{func(r *restoreRequest) { r.from = "nightly/Bad" }, `--from: backup run id "Bad" is not valid`},
		{func(r *restoreRequest) { r.conflictPolicy = "unique" },
			`--conflict-policy "unique": want one of Generation, Unique, Replace, NoGeneration`},
		{func(r *restoreRequest) { r.namespaces = map[string]string{"test": ""} }, `--namespace-map test=: want SOURCE=TARGET`},
	} {
		r := ok
		tc.change(&r)
		if err := r.check(); err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("error %v, want %q", err, tc.want)
		}
	}
}

func TestRestorableRun(t *testing.T) {
	bk := nightly()
	if run, err := restorableRun(bk, ""); err != nil || run.ID != "first" {
		t.Errorf("newest successful: %v, %v", run, err)
	}
	if run, err := restorableRun(bk, "20261124-0000"); err != nil || run.ID != "20261124-0000" {
		t.Errorf("by id: %v, %v", run, err)
	}
	for id, want := range map[string]string{
		"broken":  "backup run broken of aerospike/nightly is Failed: only a run that Succeeded can be restored (successful runs: 20261124-0000, first)",
		"dropped": "backup run dropped of aerospike/nightly was dropped by the retention: its files are deleted",
		"nope":    "AerospikeBackup aerospike/nightly has no backup run nope (successful runs: 20261124-0000, first)",
	} {
		if _, err := restorableRun(bk, id); err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%s: error %v, want %q", id, err, want)
		}
	}
	bk.Status.Backups = bk.Status.Backups[2:]
	if _, err := restorableRun(bk, ""); err == nil || !strings.HasPrefix(err.Error(),
		"AerospikeBackup aerospike/nightly has no successful backup yet") {
		t.Errorf("none: %v", err)
	}
}

func TestRestoreNamespacesAreChecked(t *testing.T) {
	run, c := succeededRun("first", ackov1alpha1.TriggerOnDemand), runningCluster() // both have namespace test
	if err := checkNamespaces(&run, c, nil); err != nil {
		t.Errorf("same names: %v", err)
	}
	err := checkNamespaces(&run, c, map[string]string{"other": "test"})
	if err == nil || err.Error() != "--namespace-map other=test: backup run first holds no Aerospike namespace other (it holds test)" {
		t.Errorf("a source the run lacks: %v", err)
	}
	err = checkNamespaces(&run, c, map[string]string{"test": "copy"})
	if err == nil || !strings.HasPrefix(err.Error(), "cluster aerospike-3node has no Aerospike namespace copy to restore test into (it has test;") {
		t.Errorf("a target the cluster lacks: %v", err)
	}
}

// TestRestoreFollowerPrintsEachChangeOnce: a restore that waits for its cluster, runs and Succeeded,
// and one that Failed.
func TestRestoreFollowerPrintsEachChangeOnce(t *testing.T) {
	var out bytes.Buffer
	f := newRestoreFollower(&out)
	rs := &ackov1alpha1.AerospikeRestore{ObjectMeta: metav1.ObjectMeta{Namespace: "aerospike", Name: "r1"},
		Spec: ackov1alpha1.AerospikeRestoreSpec{Cluster: "copy", Backup: &ackov1alpha1.BackupReference{Name: "nightly"}}}
	st := &rs.Status
	states := []func(){
		func() {},
		func() { st.Phase, st.Message = ackov1alpha1.BackupPending, "waiting: cluster copy is paused" },
		func() {},
		func() {
			st.Phase, st.Message, st.BackupID, st.Path = ackov1alpha1.BackupRunning, "", "first", "backups:/nightly/first"
			st.StartTime = agoPtr(time.Minute)
		},
		func() {
			st.Phase, st.CompletionTime = ackov1alpha1.BackupSucceeded, agoPtr(0)
			st.Records, st.Restored, st.Existed, st.Fresher, st.Expired = 1000, 990, 6, 2, 2
		},
	}
	for i, change := range states {
		change()
		done, err := f.observe(rs)
		if err != nil || done != (i == len(states)-1) {
			t.Fatalf("state %d: done %t, %v", i, done, err)
		}
	}
	want := "pending: cluster copy is paused\n" +
		"running: restoring backup run first from backups:/nightly/first into cluster copy\n" +
		"Succeeded in 1m0s: restored 990 of 1000 records (6 existed, 2 fresher, 2 expired)\n"
	if out.String() != want {
		t.Errorf("printed\n%s\nwant\n%s", out.String(), want)
	}

	out.Reset()
	st.Phase, st.Message = ackov1alpha1.BackupFailed, "job r1-restore-test failed: Error while connecting"
	done, err := newRestoreFollower(&out).observe(rs)
	if !done || err == nil || err.Error() != "restore aerospike/r1 failed: job r1-restore-test failed: Error while connecting" {
		t.Errorf("done %t, error %v", done, err)
	}
	if want := "Failed after 1m0s: job r1-restore-test failed: Error while connecting\n"; out.String() != want {
		t.Errorf("printed %q", out.String())
	}
}
