// Package backup builds what runs Aerospike's own backup tools (asbackup, asrestore) for an
// AerospikeBackup or AerospikeRestore: the Jobs, their arguments and ServiceAccount, the schedule, the
// retention, and the reading of the tools' summaries. Pure functions: the controllers compare and apply.
package backup

import (
	"cmp"
	"fmt"
	"hash/fnv"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
	"github.com/acko-io/acko/internal/config"
)

// DefaultImage is the aerospike-tools image the Jobs run unless the spec names another.
const DefaultImage = "aerospike/aerospike-tools:11.2.2"

// MountPath is where a volume destination is mounted in the tool's container.
const MountPath = "/backup"

// JobDeadline bounds every Job: a tool that hangs fails its run instead of holding the next ones.
const JobDeadline = 24 * time.Hour

// Tool container names: the container is named after the tool it runs, which the log reads name.
const (
	BackupTool  = "asbackup"
	RestoreTool = "asrestore"
)

// Labels put on the Jobs and their pods (never the cluster's selector labels: they are not its nodes).
const (
	LabelBackup    = "acko.io/backup"
	LabelRestore   = "acko.io/restore"
	LabelRun       = "acko.io/backup-run"
	LabelNamespace = "acko.io/aerospike-namespace"
	LabelComponent = "app.kubernetes.io/component"
)

// The tools' flags the Jobs pass.
const (
	flagHost      = "--host"
	flagNamespace = "--namespace"
	flagDirectory = "--directory"
	flagParallel  = "--parallel"
)

// volumeName is the destination's volume in the tool's pod.
const volumeName = "backup"

// MaxNameLength bounds the names of AerospikeBackups and AerospikeRestores: with a run id and a
// namespace they name Jobs, whose pods' names must stay within 63 characters.
const MaxNameLength = 40

// ParseSchedule reads a cron expression as CronJobs do: five fields, or a descriptor (@daily...).
func ParseSchedule(expr string) (cron.Schedule, error) {
	s, err := cron.ParseStandard(expr)
	if err != nil {
		return nil, fmt.Errorf("schedule %q does not parse: %v", expr, err)
	}
	return s, nil
}

// Due is the newest scheduled time in (last, now], if any, and the scheduled time after now. Missed
// times before the newest are skipped, as a CronJob skips them: one backup makes up for all.
func Due(s cron.Schedule, last, now time.Time) (due *time.Time, next time.Time) {
	for t := s.Next(last); !t.After(now); t = s.Next(t) {
		due = ptr.To(t)
	}
	return due, s.Next(now)
}

// Interval is the schedule's period as seen at t: the time between its next two runs.
func Interval(s cron.Schedule, t time.Time) time.Duration {
	first := s.Next(t)
	return s.Next(first).Sub(first)
}

// ScheduledID names a scheduled run by its time (UTC, to the minute).
func ScheduledID(t time.Time) string { return t.UTC().Format("20060102-1504") }

// ScheduledIncrementalID names a scheduled incremental run: apart from a full run due at the same minute.
func ScheduledIncrementalID(t time.Time) string { return ScheduledID(t) + "-incr" }

// ModifiedAfterFormat is asbackup's --modified-after format, YYYY-MM-DD_HH:MM:SS (parse_date_time of
// aerospike-tools-backup's src/utils.c), read in the tool's local time zone: the Jobs run with TZ=UTC.
const ModifiedAfterFormat = "2006-01-02_15:04:05"

// ModifiedAfterArg is t as --modified-after takes it: UTC, to the second (truncated, so that the records
// changed in t's second are in; the tool keeps those with a last-update time at or after it).
func ModifiedAfterArg(t time.Time) string { return t.UTC().Format(ModifiedAfterFormat) }

// IncrementalStart is what an incremental run builds on: after, the newest successful run (by start),
// whose start the run backs up from, and base, the full run of after's chain. Both nil: no full backup
// has succeeded yet, and the incremental waits.
func IncrementalStart(runs []ackov1alpha1.BackupRunStatus) (base, after *ackov1alpha1.BackupRunStatus) {
	for i := range runs {
		r := &runs[i]
		if r.Phase == ackov1alpha1.BackupSucceeded && r.StartTime != nil &&
			(after == nil || !r.StartTime.Before(after.StartTime)) {
			after = r
		}
	}
	if after == nil || !after.Incremental {
		return after, after
	}
	if i := slices.IndexFunc(runs, func(r ackov1alpha1.BackupRunStatus) bool { return r.ID == after.Base }); i >= 0 {
		return &runs[i], after
	}
	return nil, nil
}

// Chain is what a restore of run id restores, in order: its full base, then every incremental after it
// up to id (each run's After). missing names a run the chain needs that is not a successful run of runs.
func Chain(runs []ackov1alpha1.BackupRunStatus, id string) (chain []ackov1alpha1.BackupRunStatus, missing string) {
	for id != "" {
		i := slices.IndexFunc(runs, func(r ackov1alpha1.BackupRunStatus) bool {
			return r.ID == id && r.Phase == ackov1alpha1.BackupSucceeded
		})
		if i < 0 || len(chain) > len(runs) {
			return nil, id
		}
		chain = append(chain, runs[i])
		if !runs[i].Incremental {
			slices.Reverse(chain)
			return chain, ""
		}
		id = runs[i].After
	}
	return nil, chain[len(chain)-1].ID // an incremental that names no run before it
}

// Files is where a backup's files are: a destination and, relative to its root, the backup's directory,
// which holds a directory of .asb files per Aerospike namespace.
type Files struct {
	Destination ackov1alpha1.BackupDestination
	Dir         string
	// Written is how they were written (compressed, encrypted).
	Written ackov1alpha1.BackupFiles
}

// RunFiles are a run's files: <path>/<backup>/<id> on the backup's destination.
func RunFiles(bk *ackov1alpha1.AerospikeBackup, id string) Files {
	d := bk.Spec.Destination
	prefix := ""
	if d.Volume != nil {
		prefix = d.Volume.Path
	} else if d.S3 != nil {
		prefix = d.S3.Path
	}
	return Files{Destination: d, Dir: path.Join(strings.Trim(prefix, "/"), bk.Name, id), Written: bk.Spec.Files}
}

// SourceFiles are the files a restore's source names: its path is the backup's directory.
func SourceFiles(src *ackov1alpha1.RestoreSource) Files {
	dir := ""
	if src.Volume != nil {
		dir = src.Volume.Path
	} else if src.S3 != nil {
		dir = src.S3.Path
	}
	return Files{Destination: src.Destination(), Dir: strings.Trim(dir, "/")}
}

// String is where the files are, as the status says it: claim:/dir or s3://bucket/dir.
func (f Files) String() string {
	if s3 := f.Destination.S3; s3 != nil {
		return "s3://" + s3.Bucket + "/" + f.Dir
	}
	return f.Destination.Volume.ClaimName + ":/" + f.Dir
}

// toolDir is the directory of one namespace's files, as the tool names it.
func (f Files) toolDir(namespace string) string {
	if s3 := f.Destination.S3; s3 != nil {
		return "s3://" + s3.Bucket + "/" + path.Join(f.Dir, namespace)
	}
	return path.Join(MountPath, f.Dir, namespace)
}

// Namespaces are the Aerospike namespaces a run of bk covers: the spec's, or every namespace of the
// cluster's config.
func Namespaces(bk *ackov1alpha1.AerospikeBackup, c *ackov1alpha1.AerospikeCluster) []string {
	if len(bk.Spec.Namespaces) > 0 {
		return slices.Clone(bk.Spec.Namespaces)
	}
	return config.NamespaceNames(c)
}

// JobName names the Job of one namespace of a run: <owner>-<id>-<namespace>, shortened with a hash
// when that is too long for its pods' names.
func JobName(owner, id, namespace string) string {
	name := strings.ToLower(owner + "-" + id + "-" + namespace)
	name = strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' {
			return r
		}
		return '-'
	}, name)
	if len(name) <= 52 {
		return name
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(name))
	return fmt.Sprintf("%s-%08x", strings.TrimRight(name[:43], "-"), h.Sum32())
}

// ServiceAccountName is the tools' ServiceAccount in a namespace: it may do nothing on the API server.
const ServiceAccountName = "acko-backup-tools"

// ServiceAccount is the tools' least-privilege identity: bound to no role, its token never mounted.
func ServiceAccount(namespace string) *corev1.ServiceAccount {
	return &corev1.ServiceAccount{
		ObjectMeta: metav1.ObjectMeta{Name: ServiceAccountName, Namespace: namespace,
			Labels: map[string]string{ackov1alpha1.LabelManagedBy: ackov1alpha1.ManagedBy}},
		AutomountServiceAccountToken: ptr.To(false),
	}
}

// seeds is the cluster's headless Service as the tools' --host: every node, Ready or not, as seeds.
func seeds(c *ackov1alpha1.AerospikeCluster, clusterDomain string) string {
	return fmt.Sprintf("%s.%s.svc.%s:3000", c.HeadlessServiceName(), c.Namespace, clusterDomain)
}

// Job is the Job that backs up one namespace for a run of bk; an incremental run backs up the records
// changed since its ModifiedAfter.
func Job(bk *ackov1alpha1.AerospikeBackup, c *ackov1alpha1.AerospikeCluster, run ackov1alpha1.BackupRunStatus,
	namespace, clusterDomain string) *batchv1.Job {
	id := run.ID
	files := RunFiles(bk, id)
	dir := files.toolDir(namespace)
	var subPath string
	if bk.Spec.Destination.Volume != nil {
		// asbackup makes only the last level of --directory (one mkdir): the run's directory is the
		// mount's subPath, which the kubelet makes with its parents, and the namespace's is made in it.
		subPath, dir = files.Dir, path.Join(MountPath, namespace)
	}
	args := []string{flagHost, seeds(c, clusterDomain), flagNamespace, namespace,
		flagDirectory, dir, flagParallel, strconv.Itoa(int(max(1, bk.Spec.Parallel))),
		// A Job's pod that runs again finds the files of the one before: start them afresh.
		"--remove-files"}
	if len(bk.Spec.Sets) > 0 {
		args = append(args, "--set", strings.Join(bk.Spec.Sets, ","))
	}
	if bk.Spec.RecordsPerSecond > 0 {
		args = append(args, "--records-per-second", strconv.Itoa(int(bk.Spec.RecordsPerSecond)))
	}
	if run.Incremental && run.ModifiedAfter != nil {
		args = append(args, "--modified-after", ModifiedAfterArg(run.ModifiedAfter.Time))
	}
	labels := map[string]string{LabelBackup: bk.Name, LabelRun: id, LabelNamespace: namespace, LabelComponent: volumeName}
	job := toolJob(bk, JobName(bk.Name, id, namespace), BackupTool, image(bk.Spec.Image), labels,
		withS3(args, bk.Spec.Destination.S3), bk.Spec.Destination, subPath)
	if run.Incremental {
		// The tool reads --modified-after in its local time zone (mktime): make it UTC, as the argument is.
		c := &job.Spec.Template.Spec.Containers[0]
		c.Env = append(c.Env, corev1.EnvVar{Name: "TZ", Value: "UTC"})
	}
	return withIdentity(withFiles(job, bk.Spec.Files), bk.Spec.ServiceAccountName)
}

// RestoreStepName is the part of a restore's Job names that says its step: "restore" for the first (a
// full backup, or an incremental's base), "restore-<n>" for the incremental at step n.
func RestoreStepName(step int) string {
	if step == 0 {
		return "restore"
	}
	return fmt.Sprintf("restore-%d", step)
}

// RestoreJob is the Job that restores one namespace of the backup's files into c, under the name the
// restore maps it to, at a step of its chain.
func RestoreJob(rs *ackov1alpha1.AerospikeRestore, c *ackov1alpha1.AerospikeCluster, files Files, step int,
	namespace, clusterDomain string) *batchv1.Job {
	target := namespace
	if to, ok := rs.Spec.Namespaces[namespace]; ok {
		target = to
	}
	nsArg := namespace
	if target != namespace {
		nsArg = namespace + "," + target
	}
	args := []string{flagHost, seeds(c, clusterDomain), flagNamespace, nsArg,
		flagDirectory, files.toolDir(namespace), flagParallel, strconv.Itoa(int(max(1, rs.Spec.Parallel)))}
	switch rs.Spec.ConflictPolicy {
	case ackov1alpha1.ConflictUnique:
		args = append(args, "--unique")
	case ackov1alpha1.ConflictReplace:
		args = append(args, "--replace")
	case ackov1alpha1.ConflictNoGeneration:
		args = append(args, "--no-generation")
	}
	labels := map[string]string{LabelRestore: rs.Name, LabelNamespace: namespace, LabelComponent: "restore"}
	job := toolJob(rs, JobName(rs.Name, RestoreStepName(step), namespace), RestoreTool, image(rs.Spec.Image), labels,
		withS3(args, files.Destination.S3), files.Destination, "")
	written := files.Written
	if rs.Spec.Files != nil {
		written = *rs.Spec.Files
	}
	return withIdentity(withFiles(job, written), rs.Spec.ServiceAccountName)
}

// CleanupJob removes the files of one namespace of a run the retention dropped (asbackup
// --remove-artifacts: no backup, no connection). Its failure is not followed: the files stay (logged by
// the tool), the run is gone from the status either way.
func CleanupJob(bk *ackov1alpha1.AerospikeBackup, id, namespace string) *batchv1.Job {
	labels := map[string]string{LabelBackup: bk.Name, LabelRun: id, LabelNamespace: namespace, LabelComponent: "cleanup"}
	args := []string{"--remove-artifacts", flagNamespace, namespace, flagDirectory, RunFiles(bk, id).toolDir(namespace)}
	job := withIdentity(toolJob(bk, JobName(bk.Name, id+"-rm", namespace), BackupTool, image(bk.Spec.Image), labels,
		withS3(args, bk.Spec.Destination.S3), bk.Spec.Destination, ""), bk.Spec.ServiceAccountName)
	// Nothing reads its outcome: the Job controller removes it an hour after it ends.
	job.Spec.TTLSecondsAfterFinished = ptr.To(int32(CleanupTTL / time.Second))
	return job
}

// CleanupTTL is how long an ended cleanup Job stays, for `kubectl logs`.
const CleanupTTL = time.Hour

func image(spec string) string {
	if spec != "" {
		return spec
	}
	return DefaultImage
}

// withS3 adds the tools' own S3 flags.
func withS3(args []string, s3 *ackov1alpha1.S3Destination) []string {
	if s3 == nil {
		return args
	}
	if s3.Region != "" {
		args = append(args, "--s3-region", s3.Region)
	}
	if s3.Endpoint != "" {
		args = append(args, "--s3-endpoint-override", s3.Endpoint)
	}
	return args
}

// toolJob is a Job that runs one tool once, as the tools' ServiceAccount, owned by owner: no retry (the
// run reports the failure, the next run starts afresh), a deadline, the destination mounted (its
// subPath at MountPath, if any) or its S3 credentials in the environment from their Secret.
func toolJob(owner metav1.Object, name, tool, img string, labels map[string]string, args []string,
	dest ackov1alpha1.BackupDestination, subPath string) *batchv1.Job {
	labels[ackov1alpha1.LabelManagedBy] = ackov1alpha1.ManagedBy
	container := corev1.Container{
		Name: tool, Image: img, Command: []string{tool}, Args: args,
		SecurityContext: &corev1.SecurityContext{
			AllowPrivilegeEscalation: ptr.To(false),
			Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		},
	}
	var volumes []corev1.Volume
	if v := dest.Volume; v != nil {
		volumes = []corev1.Volume{{Name: volumeName, VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: v.ClaimName}}}}
		container.VolumeMounts = []corev1.VolumeMount{{Name: volumeName, MountPath: MountPath, SubPath: subPath}}
	}
	if s3 := dest.S3; s3 != nil && s3.CredentialsSecret != "" {
		for _, key := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"} {
			container.Env = append(container.Env, corev1.EnvVar{Name: key, ValueFrom: &corev1.EnvVarSource{
				SecretKeyRef: &corev1.SecretKeySelector{
					LocalObjectReference: corev1.LocalObjectReference{Name: s3.CredentialsSecret}, Key: key}}})
		}
	}
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: owner.GetNamespace(), Labels: labels},
		Spec: batchv1.JobSpec{
			BackoffLimit:          ptr.To[int32](0),
			ActiveDeadlineSeconds: ptr.To(int64(JobDeadline / time.Second)),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					RestartPolicy:                corev1.RestartPolicyNever,
					ServiceAccountName:           ServiceAccountName,
					AutomountServiceAccountToken: ptr.To(false),
					Containers:                   []corev1.Container{container},
					Volumes:                      volumes,
				},
			},
		},
	}
}

// EncryptionKeyEnv is the tool's environment variable that holds the encryption key, from its Secret.
const EncryptionKeyEnv = "ACKO_ENCRYPTION_KEY"

// withFiles adds the tool's options of how the files are written (--compress, --encrypt and
// --encryption-key-env, both tools take them) and the key from its Secret: a Secret or key that is
// missing stops the pod before the tool runs (CreateContainerConfigError), which fails the run at once.
func withFiles(job *batchv1.Job, files ackov1alpha1.BackupFiles) *batchv1.Job {
	c := &job.Spec.Template.Spec.Containers[0]
	if files.Compression == ackov1alpha1.BackupCompressionZSTD {
		c.Args = append(c.Args, "--compress", "zstd")
	}
	if e := files.Encryption; e != nil {
		c.Args = append(c.Args, "--encrypt", strings.ToLower(string(cmp.Or(e.Algorithm, ackov1alpha1.EncryptionAES256))),
			"--encryption-key-env", EncryptionKeyEnv)
		c.Env = append(c.Env, corev1.EnvVar{Name: EncryptionKeyEnv, ValueFrom: &corev1.EnvVarSource{
			SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: e.KeySecret},
				Key: cmp.Or(e.KeySecretKey, "key")}}})
	}
	return job
}

// withIdentity runs the tool as the ServiceAccount the spec names, with its token (a cloud identity:
// IRSA, Workload Identity); none named: the tools' own, which has no token.
func withIdentity(job *batchv1.Job, serviceAccount string) *batchv1.Job {
	if serviceAccount != "" {
		pod := &job.Spec.Template.Spec
		pod.ServiceAccountName, pod.AutomountServiceAccountToken = serviceAccount, ptr.To(true)
	}
	return job
}

// Summary is what asbackup says it wrote.
type Summary struct{ Records, Bytes int64 }

var backedUp = regexp.MustCompile(`Backed up (\d+) record\(s\).*?(\d+) byte\(s\) in total`)

// ParseBackupLog finds asbackup's closing summary in its log.
func ParseBackupLog(lines []string) (Summary, bool) {
	for _, l := range slices.Backward(lines) {
		if m := backedUp.FindStringSubmatch(l); m != nil {
			records, _ := strconv.ParseInt(m[1], 10, 64)
			bytes, _ := strconv.ParseInt(m[2], 10, 64)
			return Summary{Records: records, Bytes: bytes}, true
		}
	}
	return Summary{}, false
}

// RestoreSummary is what asrestore says became of the records it read, in its closing lines
// (counter_thread_func of aerospike-tools-backup's src/restore.c):
//
//	0 UDF file(s), 0 secondary index(es), 300 record(s) (12 rec/s, 3 KiB/s, 250 B/rec, retries: 0)
//	Expired 0 : skipped 0 : err_ignored 0 : inserted 290: failed 10 (existed 10 , fresher 0)
//
// Failed is the tool's "failed": the records it left alone because they existed or were fresher (a
// write that fails otherwise stops the tool).
type RestoreSummary struct{ Records, Inserted, Existed, Fresher, Expired, Skipped, Failed int64 }

var (
	restoreRecords = regexp.MustCompile(`\d+ UDF file\(s\), \d+ secondary index\(es\), (\d+) record\(s\) \(`)
	restoreCounts  = regexp.MustCompile(`Expired (\d+) : skipped (\d+) : err_ignored \d+ : inserted (\d+): ` +
		`failed (\d+) \(existed (\d+) , fresher (\d+)\)`)
)

// ParseRestoreLog finds asrestore's closing lines in its log: the last of each (it prints them every ten
// seconds while it runs, and once more at its end).
func ParseRestoreLog(lines []string) (RestoreSummary, bool) {
	var s RestoreSummary
	records := lastMatch(lines, restoreRecords)
	counts := lastMatch(lines, restoreCounts)
	if records == nil || counts == nil {
		return s, false
	}
	s.Records = records[0]
	s.Expired, s.Skipped, s.Inserted, s.Failed, s.Existed, s.Fresher = counts[0], counts[1], counts[2], counts[3],
		counts[4], counts[5]
	return s, true
}

// lastMatch is the numbers of the last line re matches, or nil.
func lastMatch(lines []string, re *regexp.Regexp) []int64 {
	for _, l := range slices.Backward(lines) {
		if m := re.FindStringSubmatch(l); m != nil {
			n := make([]int64, len(m)-1)
			for i := range n {
				n[i], _ = strconv.ParseInt(m[i+1], 10, 64)
			}
			return n
		}
	}
	return nil
}

// Add adds another Job's counts.
func (s *RestoreSummary) Add(o RestoreSummary) {
	s.Records += o.Records
	s.Inserted += o.Inserted
	s.Existed += o.Existed
	s.Fresher += o.Fresher
	s.Expired += o.Expired
	s.Skipped += o.Skipped
	s.Failed += o.Failed
}

// ChainNote says what a restore of an incremental restored, in order ("" for a single backup).
func ChainNote(chain []ackov1alpha1.RestoreStep) string {
	if len(chain) < 2 {
		return ""
	}
	ids := make([]string, 0, len(chain)-1)
	for _, s := range chain[1:] {
		ids = append(ids, s.ID)
	}
	return fmt.Sprintf(": full backup %s, then incrementals %s", chain[0].ID, strings.Join(ids, ", "))
}

// MissingLink is why a restore of run id of a backup cannot start: a run of its chain is missing.
func MissingLink(backupName, id, missing string) string {
	return fmt.Sprintf("AerospikeBackup %q cannot restore %s: backup %s of its chain (its full base and the "+
		"incrementals after it) is missing; nothing was restored", backupName, id, missing)
}

// RestoreCounts says what a restore left alone, as its status and events say it.
func RestoreCounts(st *ackov1alpha1.AerospikeRestoreStatus) string {
	return fmt.Sprintf("%d existed, %d fresher, %d expired", st.Existed, st.Fresher, st.Expired)
}

// logLine is the tools' log line (log_line of aerospike-tools-backup's src/utils.c):
// "2026-12-04 16:26:03 UTC [ERR] [12345] message".
var logLine = regexp.MustCompile(`^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d \S+ \[(\w+)\] \[ *\d+\] (.*)$`)

// LastError is the message of the tool's last error line ([ERR]), which says why it failed; else its
// last line that is not one of its log lines (getopt's words), else def.
func LastError(lines []string, def string) string {
	other := ""
	for _, l := range slices.Backward(lines) {
		l = strings.TrimSpace(l)
		m := logLine.FindStringSubmatch(l)
		switch {
		case m != nil && m[1] == "ERR" && strings.TrimSpace(m[2]) != "":
			return strings.TrimSpace(m[2])
		case m == nil && l != "" && other == "":
			other = l
		}
	}
	return cmp.Or(other, def)
}

// keptFailures is how many failed runs the status keeps, for their messages.
const keptFailures = 5

// Prune splits the ended runs into those the retention keeps and those it drops (oldest first, as
// given). The newest successful run is always kept, and so is every run a kept incremental needs (its
// chain: a restore of it restores them all); runs that have not ended are never dropped.
func Prune(runs []ackov1alpha1.BackupRunStatus, r *ackov1alpha1.BackupRetention, now time.Time) (
	keep, drop []ackov1alpha1.BackupRunStatus) {
	kept, _ := prune(runs, r, now)
	needed := map[string]bool{}
	for _, run := range kept {
		needed[run.ID] = true
		if run.Incremental && run.Phase == ackov1alpha1.BackupSucceeded {
			chain, _ := Chain(runs, run.ID)
			for _, link := range chain {
				needed[link.ID] = true
			}
		}
	}
	for _, run := range runs {
		if needed[run.ID] {
			keep = append(keep, run)
		} else {
			drop = append(drop, run)
		}
	}
	return keep, drop
}

func prune(runs []ackov1alpha1.BackupRunStatus, r *ackov1alpha1.BackupRetention, now time.Time) (
	keep, drop []ackov1alpha1.BackupRunStatus) {
	successes, failures := 0, 0
	for i := len(runs) - 1; i >= 0; i-- {
		run := runs[i]
		switch run.Phase {
		case ackov1alpha1.BackupSucceeded:
			successes++
			if successes > 1 && r != nil && (r.KeepLast != nil && successes > int(*r.KeepLast) ||
				r.KeepFor != nil && run.CompletionTime != nil && now.Sub(run.CompletionTime.Time) > r.KeepFor.Duration) {
				drop = append(drop, run)
				continue
			}
		case ackov1alpha1.BackupFailed:
			failures++
			if failures > keptFailures {
				drop = append(drop, run)
				continue
			}
		}
		keep = append(keep, run)
	}
	slices.Reverse(keep)
	slices.Reverse(drop)
	return keep, drop
}
