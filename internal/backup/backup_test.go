package backup

import (
	"slices"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
)

func sample() (*ackov1alpha1.AerospikeBackup, *ackov1alpha1.AerospikeCluster) {
	bk := &ackov1alpha1.AerospikeBackup{
		ObjectMeta: metav1.ObjectMeta{Name: "nightly", Namespace: "db"},
		Spec: ackov1alpha1.AerospikeBackupSpec{Cluster: "prod", Parallel: 4, Sets: []string{"a", "b"},
			RecordsPerSecond: 5000,
			Destination: ackov1alpha1.BackupDestination{Volume: &ackov1alpha1.VolumeDestination{
				ClaimName: "backups", Path: "/aerospike/"}}},
	}
	c := &ackov1alpha1.AerospikeCluster{ObjectMeta: metav1.ObjectMeta{Name: "prod", Namespace: "db"}}
	return bk, c
}

func TestJob(t *testing.T) {
	bk, c := sample()
	job := Job(bk, c, ackov1alpha1.BackupRunStatus{ID: "first"}, "test", "cluster.local")
	if job.Name != "nightly-first-test" || job.Namespace != "db" {
		t.Fatalf("job %s/%s", job.Namespace, job.Name)
	}
	pod := job.Spec.Template.Spec
	tool := pod.Containers[0]
	want := []string{"--host", "prod-headless.db.svc.cluster.local:3000", "--namespace", "test",
		"--directory", "/backup/test", "--parallel", "4", "--remove-files",
		"--set", "a,b", "--records-per-second", "5000"}
	if tool.Name != BackupTool || !slices.Equal(tool.Command, []string{"asbackup"}) || !slices.Equal(tool.Args, want) {
		t.Fatalf("container %s %v %v,\nwant args %v", tool.Name, tool.Command, tool.Args, want)
	}
	// asbackup makes one level of --directory: the kubelet makes the run's directory (the subPath).
	if tool.Image != DefaultImage || pod.Volumes[0].PersistentVolumeClaim.ClaimName != "backups" ||
		tool.VolumeMounts[0].MountPath != MountPath || tool.VolumeMounts[0].SubPath != "aerospike/nightly/first" {
		t.Fatalf("image %s, volumes %+v, mounts %+v", tool.Image, pod.Volumes, tool.VolumeMounts)
	}
	if pod.ServiceAccountName != ServiceAccountName || *pod.AutomountServiceAccountToken ||
		*job.Spec.BackoffLimit != 0 || job.Spec.ActiveDeadlineSeconds == nil || pod.RestartPolicy != "Never" {
		t.Fatalf("pod runs as %s (token %v), backoff %d, deadline %v", pod.ServiceAccountName,
			*pod.AutomountServiceAccountToken, *job.Spec.BackoffLimit, job.Spec.ActiveDeadlineSeconds)
	}
}

// The tools' pods are not the cluster's nodes, and the status names where the files are.
func TestJobIsNoNodeAndSaysWhere(t *testing.T) {
	bk, c := sample()
	job := Job(bk, c, ackov1alpha1.BackupRunStatus{ID: "first"}, "test", "cluster.local")
	if _, own := job.Spec.Template.Labels[ackov1alpha1.LabelInstance]; own {
		t.Fatal("a tool pod carries the cluster's instance label: the cluster would take it for a node")
	}
	if got := RunFiles(bk, "first").String(); got != "backups:/aerospike/nightly/first" {
		t.Fatalf("path %s", got)
	}
}

// S3: the tools' own flags, credentials from the Secret by reference only.
func TestBackupJobS3(t *testing.T) {
	bk, c := sample()
	bk.Spec.Destination = ackov1alpha1.BackupDestination{S3: &ackov1alpha1.S3Destination{Bucket: "b", Path: "p",
		Region: "eu-west-1", Endpoint: "https://minio:9000", CredentialsSecret: "s3-creds"}}
	tool := Job(bk, c, ackov1alpha1.BackupRunStatus{ID: "first"}, "test", "cluster.local").Spec.Template.Spec.Containers[0]
	args := strings.Join(tool.Args, " ")
	for _, want := range []string{"--directory s3://b/p/nightly/first/test", "--s3-region eu-west-1",
		"--s3-endpoint-override https://minio:9000"} {
		if !strings.Contains(args, want) {
			t.Errorf("args %q lack %q", args, want)
		}
	}
	if len(tool.VolumeMounts) != 0 || len(tool.Env) != 2 {
		t.Fatalf("mounts %v env %v", tool.VolumeMounts, tool.Env)
	}
	for _, e := range tool.Env {
		if e.Value != "" || e.ValueFrom.SecretKeyRef.Name != "s3-creds" || e.ValueFrom.SecretKeyRef.Key != e.Name {
			t.Errorf("env %+v: want the Secret's key of the same name, no value", e)
		}
	}
}

func TestRestoreJob(t *testing.T) {
	bk, c := sample()
	for policy, flag := range map[ackov1alpha1.ConflictPolicy]string{
		ackov1alpha1.ConflictGeneration: "", ackov1alpha1.ConflictUnique: "--unique",
		ackov1alpha1.ConflictReplace: "--replace", ackov1alpha1.ConflictNoGeneration: "--no-generation",
	} {
		rs := &ackov1alpha1.AerospikeRestore{ObjectMeta: metav1.ObjectMeta{Name: "back", Namespace: "db"},
			Spec: ackov1alpha1.AerospikeRestoreSpec{Cluster: "prod", ConflictPolicy: policy,
				Namespaces: map[string]string{"test": "copy"}}}
		job := RestoreJob(rs, c, RunFiles(bk, "first"), 0, "test", "cluster.local")
		args := strings.Join(job.Spec.Template.Spec.Containers[0].Args, " ")
		want := "--host prod-headless.db.svc.cluster.local:3000 --namespace test,copy --directory /backup/aerospike/nightly/first/test --parallel 1"
		if flag != "" {
			want += " " + flag
		}
		if args != want || job.Name != "back-restore-test" {
			t.Errorf("%s: job %s args %q, want %q", policy, job.Name, args, want)
		}
	}
}

// A restore's source names the backup's own directory, on a claim or in S3 (with its credentials).
func TestRestoreJobFromSource(t *testing.T) {
	_, c := sample()
	rs := &ackov1alpha1.AerospikeRestore{ObjectMeta: metav1.ObjectMeta{Name: "back", Namespace: "db"},
		Spec: ackov1alpha1.AerospikeRestoreSpec{Cluster: "prod", Source: &ackov1alpha1.RestoreSource{
			S3:         &ackov1alpha1.S3Destination{Bucket: "b", Path: "/elsewhere/nightly/first/", CredentialsSecret: "creds"},
			Namespaces: []string{"test"}}}}
	files := SourceFiles(rs.Spec.Source)
	tool := RestoreJob(rs, c, files, 0, "test", "cluster.local").Spec.Template.Spec.Containers[0]
	if args := strings.Join(tool.Args, " "); !strings.Contains(args, "--directory s3://b/elsewhere/nightly/first/test") ||
		len(tool.Env) != 2 || files.String() != "s3://b/elsewhere/nightly/first" {
		t.Fatalf("args %q, env %v, files %s", args, tool.Env, files)
	}
	rs.Spec.Source = &ackov1alpha1.RestoreSource{Volume: &ackov1alpha1.VolumeDestination{ClaimName: "old", Path: "a/b"},
		Namespaces: []string{"test"}}
	tool = RestoreJob(rs, c, SourceFiles(rs.Spec.Source), 0, "test", "cluster.local").Spec.Template.Spec.Containers[0]
	if args := strings.Join(tool.Args, " "); !strings.Contains(args, "--directory /backup/a/b/test") ||
		tool.VolumeMounts[0].MountPath != MountPath {
		t.Fatalf("args %q, mounts %v", args, tool.VolumeMounts)
	}
}

// A dropped run's files are removed by asbackup itself, and the cleanup Job does not stay.
func TestCleanupJob(t *testing.T) {
	bk, _ := sample()
	job := CleanupJob(bk, "first", "test")
	args := strings.Join(job.Spec.Template.Spec.Containers[0].Args, " ")
	if job.Name != "nightly-first-rm-test" || args != "--remove-artifacts --namespace test --directory /backup/aerospike/nightly/first/test" ||
		job.Spec.TTLSecondsAfterFinished == nil || *job.Spec.TTLSecondsAfterFinished != 3600 {
		t.Fatalf("job %s args %q ttl %v", job.Name, args, job.Spec.TTLSecondsAfterFinished)
	}
}

func TestJobNameFitsPodNames(t *testing.T) {
	long := JobName(strings.Repeat("b", 40), "20261203-1015", "a-very-long-namespace-name-x")
	if len(long) > 52 || JobName(strings.Repeat("b", 40), "20261203-1015", "a-very-long-namespace-name-y") == long {
		t.Fatalf("%s (%d): too long, or not distinct", long, len(long))
	}
	if got := JobName("n", "id", "Test_NS"); got != "n-id-test-ns" {
		t.Fatalf("%s", got)
	}
}

func TestDue(t *testing.T) {
	s, err := ParseSchedule("0 * * * *")
	if err != nil {
		t.Fatal(err)
	}
	at := func(h, m int) time.Time { return time.Date(2026, 12, 3, h, m, 0, 0, time.UTC) }
	due, next := Due(s, at(10, 30), at(10, 59))
	if due != nil || !next.Equal(at(11, 0)) {
		t.Fatalf("nothing due before 11:00: due %v next %v", due, next)
	}
	due, next = Due(s, at(10, 30), at(13, 5))
	if due == nil || !due.Equal(at(13, 0)) || !next.Equal(at(14, 0)) {
		t.Fatalf("missed 11:00 and 12:00, due 13:00: due %v next %v", due, next)
	}
	if Interval(s, at(10, 30)) != time.Hour || ScheduledID(at(13, 0)) != "20261203-1300" {
		t.Fatal("interval or id")
	}
	if _, err := ParseSchedule("every night"); err == nil || !strings.Contains(err.Error(), `schedule "every night" does not parse`) {
		t.Fatalf("error %v", err)
	}
}

// The real tools' closing lines (aerospike-tools-backup 4.5.8: src/backup.c start_backup,
// src/restore.c counter_thread_func), the last of them read; the last [ERR] line is why a run failed.
func TestParseLogs(t *testing.T) {
	b, ok := ParseBackupLog([]string{"2026-12-04 16:26:03 UTC [INF] [   42] Processing 3 node(s)",
		"2026-12-04 16:26:09 UTC [INF] [   42] Backed up 1200 record(s), 0 secondary index(es), 0 UDF file(s), 98765 byte(s) in total (~82 B/rec)", ""})
	if !ok || b != (Summary{Records: 1200, Bytes: 98765}) {
		t.Fatalf("%+v %v", b, ok)
	}
	r, ok := ParseRestoreLog([]string{
		"2026-12-04 16:26:03 UTC [INF] [   42] 0 UDF file(s), 0 secondary index(es), 4 record(s) (4 rec/s, 1 KiB/s, 99 B/rec, retries: 0)",
		"2026-12-04 16:26:03 UTC [INF] [   42] Expired 0 : skipped 0 : err_ignored 0 : inserted 4: failed 0 (existed 0 , fresher 0)",
		"2026-12-04 16:26:05 UTC [INF] [   42] 0 UDF file(s), 0 secondary index(es), 10 record(s) (3 rec/s, 0 KiB/s, 99 B/rec, retries: 2)",
		"2026-12-04 16:26:05 UTC [INF] [   42] Expired 1 : skipped 1 : err_ignored 0 : inserted 5: failed 3 (existed 2 , fresher 1)",
	})
	if !ok || r != (RestoreSummary{Records: 10, Inserted: 5, Existed: 2, Fresher: 1, Expired: 1, Skipped: 1, Failed: 3}) {
		t.Fatalf("%+v %v", r, ok)
	}
	// What the stand-in printed before it followed the real tool: not the real lines.
	if _, ok := ParseRestoreLog([]string{"Processed 10 record(s): 7 inserted, 1 existed, 1 fresher, 0 expired, 1 failed"}); ok {
		t.Fatal("a summary found in a log without the real lines")
	}
	if _, ok := ParseBackupLog([]string{"error: connect"}); ok {
		t.Fatal("a summary found in a log without one")
	}
	for want, lines := range map[string][]string{
		"Error while creating directory /backup/test (error 2: No such file or directory)": {
			"2026-12-04 16:26:03 UTC [INF] [   42] Directory /backup/test does not exist, creating",
			"2026-12-04 16:26:03 UTC [ERR] [   42] Error while creating directory /backup/test (error 2: No such file or directory)",
			"2026-12-04 16:26:03 UTC [INF] [   42] Backed up 0 record(s), 0 secondary index(es), 0 UDF file(s), 0 byte(s) in total (~0 B/rec)"},
		"Run with --help for usage information and flag options": {"asbackup: unrecognized option '--bogus'",
			"Run with --help for usage information and flag options"},
		"DeadlineExceeded": {"2026-12-04 16:26:03 UTC [INF] [   42] Restoring records", ""},
	} {
		if got := LastError(lines, "DeadlineExceeded"); got != want {
			t.Errorf("LastError %q, want %q", got, want)
		}
	}
}

func TestPrune(t *testing.T) {
	now := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	run := func(id string, phase ackov1alpha1.BackupPhase, age time.Duration) ackov1alpha1.BackupRunStatus {
		return ackov1alpha1.BackupRunStatus{ID: id, Phase: phase, CompletionTime: &metav1.Time{Time: now.Add(-age)}}
	}
	runs := []ackov1alpha1.BackupRunStatus{
		run("a", ackov1alpha1.BackupSucceeded, 72*time.Hour), run("b", ackov1alpha1.BackupSucceeded, 48*time.Hour),
		run("c", ackov1alpha1.BackupFailed, 30*time.Hour), run("d", ackov1alpha1.BackupSucceeded, 24*time.Hour),
		{ID: "e", Phase: ackov1alpha1.BackupRunning},
	}
	ids := func(rs []ackov1alpha1.BackupRunStatus) (out []string) {
		for _, r := range rs {
			out = append(out, r.ID)
		}
		return out
	}
	keep, drop := Prune(runs, &ackov1alpha1.BackupRetention{KeepLast: ptr.To[int32](2)}, now)
	if !slices.Equal(ids(keep), []string{"b", "c", "d", "e"}) || !slices.Equal(ids(drop), []string{"a"}) {
		t.Fatalf("keepLast 2: keep %v drop %v", ids(keep), ids(drop))
	}
	keep, drop = Prune(runs, &ackov1alpha1.BackupRetention{KeepFor: &metav1.Duration{Duration: time.Hour}}, now)
	if !slices.Equal(ids(keep), []string{"c", "d", "e"}) || !slices.Equal(ids(drop), []string{"a", "b"}) {
		t.Fatalf("keepFor 1h: keep %v drop %v (the newest success stays)", ids(keep), ids(drop))
	}
	if keep, drop = Prune(runs, nil, now); len(keep) != len(runs) || len(drop) != 0 {
		t.Fatalf("no retention: keep %v drop %v", ids(keep), ids(drop))
	}
}

// Compressed, encrypted files: both tools get the same options, the key from its Secret by reference
// only; a restore takes its backup's unless it says otherwise.
func TestJobsCompressedAndEncrypted(t *testing.T) {
	bk, c := sample()
	bk.Spec.Files = ackov1alpha1.BackupFiles{Compression: ackov1alpha1.BackupCompressionZSTD,
		Encryption: &ackov1alpha1.BackupEncryption{Algorithm: ackov1alpha1.EncryptionAES128, KeySecret: "backup-key"}}
	rs := &ackov1alpha1.AerospikeRestore{ObjectMeta: metav1.ObjectMeta{Name: "back", Namespace: "db"},
		Spec: ackov1alpha1.AerospikeRestoreSpec{Cluster: "prod"}}
	want := "--compress zstd --encrypt aes128 --encryption-key-env " + EncryptionKeyEnv
	for name, job := range map[string]*batchv1.Job{"backup": Job(bk, c, ackov1alpha1.BackupRunStatus{ID: "first"}, "test", "cluster.local"),
		"restore": RestoreJob(rs, c, RunFiles(bk, "first"), 0, "test", "cluster.local")} {
		tool := job.Spec.Template.Spec.Containers[0]
		if args := strings.Join(tool.Args, " "); !strings.HasSuffix(args, want) {
			t.Errorf("%s args %q, want them to end with %q", name, args, want)
		}
		if len(tool.Env) != 1 || tool.Env[0].Name != EncryptionKeyEnv || tool.Env[0].Value != "" ||
			*tool.Env[0].ValueFrom.SecretKeyRef != (corev1.SecretKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: "backup-key"}, Key: "key"}) {
			t.Errorf("%s env %+v", name, tool.Env)
		}
	}
	rs.Spec.Files = &ackov1alpha1.BackupFiles{}
	if args := strings.Join(RestoreJob(rs, c, RunFiles(bk, "first"), 0, "test", "cluster.local").Spec.Template.Spec.
		Containers[0].Args, " "); strings.Contains(args, "--compress") || strings.Contains(args, "--encrypt") {
		t.Errorf("the restore's own files: args %q", args)
	}
}

// A named ServiceAccount runs the Jobs with its token (a cloud identity), S3 then without a Secret; by
// default the tools' own, without a token.
func TestJobsIdentity(t *testing.T) {
	bk, c := sample()
	bk.Spec.Destination = ackov1alpha1.BackupDestination{S3: &ackov1alpha1.S3Destination{Bucket: "b"}}
	pod := Job(bk, c, ackov1alpha1.BackupRunStatus{ID: "first"}, "test", "cluster.local").Spec.Template.Spec
	if pod.ServiceAccountName != ServiceAccountName || *pod.AutomountServiceAccountToken || len(pod.Containers[0].Env) != 0 {
		t.Fatalf("default: %s token %v env %v", pod.ServiceAccountName, *pod.AutomountServiceAccountToken, pod.Containers[0].Env)
	}
	bk.Spec.ServiceAccountName = "backup-irsa"
	rs := &ackov1alpha1.AerospikeRestore{ObjectMeta: metav1.ObjectMeta{Name: "back", Namespace: "db"},
		Spec: ackov1alpha1.AerospikeRestoreSpec{Cluster: "prod", ServiceAccountName: "restore-wi"}}
	for sa, job := range map[string]*batchv1.Job{"backup-irsa": Job(bk, c, ackov1alpha1.BackupRunStatus{ID: "first"}, "test", "cluster.local"),
		"restore-wi": RestoreJob(rs, c, RunFiles(bk, "first"), 0, "test", "cluster.local")} {
		pod := job.Spec.Template.Spec
		if pod.ServiceAccountName != sa || !*pod.AutomountServiceAccountToken {
			t.Errorf("%s: runs as %s, token %v", sa, pod.ServiceAccountName, *pod.AutomountServiceAccountToken)
		}
	}
	if pod := CleanupJob(bk, "first", "test").Spec.Template.Spec; pod.ServiceAccountName != "backup-irsa" {
		t.Errorf("cleanup runs as %s", pod.ServiceAccountName)
	}
}
