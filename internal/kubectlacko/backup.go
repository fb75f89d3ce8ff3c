package kubectlacko

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
)

// backupIDPattern is the API's pattern of a backup run id (BackupRunSpec.ID).
var backupIDPattern = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,18}[a-z0-9])?$`)

// maxRuns is the most on-demand runs spec.runs holds (the API's MaxItems).
const maxRuns = 16

// checkBackupID refuses an id the API would refuse, before anything is sent.
func checkBackupID(id string) error {
	if !backupIDPattern.MatchString(id) {
		return fmt.Errorf("backup run id %q is not valid: 1 to 20 lowercase letters, digits and dashes, "+
			"starting and ending with a letter or digit", id)
	}
	return nil
}

// backupRequest is what `kubectl acko backup` was asked.
type backupRequest struct {
	id      string
	wait    bool
	timeout time.Duration
}

func (o *options) newBackupCommand() *cobra.Command {
	req := backupRequest{timeout: backupTimeout}
	cmd := &cobra.Command{
		Use:   "backup NAME [--id ID] [--wait]",
		Short: "Run an on-demand backup of an AerospikeBackup now (adds an id to its spec.runs)",
		Long: "Adds a run to spec.runs of the AerospikeBackup NAME: the operator backs up its cluster with " +
			"asbackup, one Job per Aerospike namespace, once. The id is generated unless --id gives one; an id " +
			"runs once, so an id the backup has seen is refused. With --wait it follows the run until it " +
			"Succeeded (exit 0: records, bytes, path) or Failed (exit 1, with the operator's message). " +
			"See docs/backup.md.",
		Example: "  kubectl acko backup nightly -n aerospike --wait\n" +
			"  kubectl acko backup nightly -n aerospike --id before-upgrade",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: o.completeBackupNames,
		PreRunE: func(*cobra.Command, []string) error {
			if req.id != "" {
				return checkBackupID(req.id)
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.backup(cmd.Context(), args[0], req)
		},
	}
	f := cmd.Flags()
	f.StringVar(&req.id, "id", "", "the run id, 1 to 20 lowercase letters, digits and dashes, never used before "+
		"on this backup (default: generated from the time)")
	f.BoolVar(&req.wait, "wait", false, "follow the run until it Succeeded or Failed")
	f.DurationVar(&req.timeout, "timeout", req.timeout, "how long to wait for the API server and, with --wait, "+
		"for the run")
	return cmd
}

func (o *options) backup(ctx context.Context, name string, req backupRequest) error {
	ctx, cancel := context.WithTimeout(ctx, req.timeout)
	defer cancel()
	s, err := o.connect()
	if err != nil {
		return err
	}
	bk, id, err := s.writeRun(ctx, name, req.id, o.now)
	if err != nil {
		return timedOut(err, req.timeout, "the API server")
	}
	ref := bk.Namespace + "/" + bk.Name
	_, _ = fmt.Fprintf(o.streams.Out, "Backup run %s of %s requested (cluster %s)\n", id, ref, bk.Spec.Cluster)
	if !req.wait {
		cluster := &ackov1alpha1.AerospikeCluster{}
		clusterErr := s.client.Get(ctx, client.ObjectKey{Namespace: bk.Namespace, Name: bk.Spec.Cluster}, cluster)
		if why := whyRunWaits(bk, id, cluster, clusterErr); why != "" {
			_, _ = fmt.Fprintf(o.streams.Out, "It waits: %s\n", why)
		}
		_, err = fmt.Fprintf(o.streams.Out, "Follow it with: kubectl get asbk %s -n %s -o jsonpath="+
			"'{.status.backups[?(@.id==\"%s\")]}'\n", bk.Name, bk.Namespace, id)
		return err
	}
	follower := newBackupFollower(o.streams.Out, id)
	err = watchNamed(ctx, s, "AerospikeBackup", name, &ackov1alpha1.AerospikeBackup{},
		func() client.ObjectList { return &ackov1alpha1.AerospikeBackupList{} }, follower.observe)
	return timedOut(err, req.timeout, fmt.Sprintf("backup run %s to end; it goes on (is the ACKO manager running?): "+
		"kubectl get asbk %s -n %s -o yaml", id, bk.Name, bk.Namespace))
}

// errNoBackupCRD says that the server does not serve AerospikeBackups or AerospikeRestores.
var errNoBackupCRD = errors.New("this server does not serve AerospikeBackups and AerospikeRestores " +
	"(acko.io/v1alpha1): is an ACKO with backups installed? (kubectl get crd aerospikebackups.acko.io; " +
	"see docs/install.md)")

// getBackup reads one AerospikeBackup, with the errors a user can act on.
func (s *session) getBackup(ctx context.Context, name string) (*ackov1alpha1.AerospikeBackup, error) {
	bk := &ackov1alpha1.AerospikeBackup{}
	err := s.client.Get(ctx, client.ObjectKey{Namespace: s.namespace, Name: name}, bk)
	return bk, explainBackup(err, s.namespace, name)
}

// explainBackup turns the errors of reading an AerospikeBackup into messages that say what to do.
func explainBackup(err error, namespace, name string) error {
	switch {
	case err == nil:
		return nil
	case meta.IsNoMatchError(err):
		return errNoBackupCRD
	case apierrors.IsNotFound(err):
		return fmt.Errorf("AerospikeBackup %q not found in namespace %q (kubectl get asbk -n %s lists them)",
			name, namespace, namespace)
	}
	return err
}

// findRun returns the run id of the status, or nil.
func findRun(bk *ackov1alpha1.AerospikeBackup, id string) *ackov1alpha1.BackupRunStatus {
	for i := range bk.Status.Backups {
		if bk.Status.Backups[i].ID == id {
			return &bk.Status.Backups[i]
		}
	}
	return nil
}

// backupIDUsed reports whether the backup has seen id: in spec.runs, among the runs of its status
// (scheduled ones included), or among the on-demand ids the retention dropped. Such an id never runs
// again.
func backupIDUsed(bk *ackov1alpha1.AerospikeBackup, id string) bool {
	return findRun(bk, id) != nil || slices.Contains(bk.Status.FinishedRuns, id) ||
		slices.ContainsFunc(bk.Spec.Runs, func(r ackov1alpha1.BackupRunSpec) bool { return r.ID == id })
}

// unusedBackupID returns the id to write: the given one if the backup has not seen it, else a new one
// (the operation ids' format, which the run id pattern accepts).
func unusedBackupID(bk *ackov1alpha1.AerospikeBackup, id string, given bool, now func() time.Time) (string, error) {
	if given {
		if backupIDUsed(bk, id) {
			return "", fmt.Errorf("backup run id %q was already used on %s/%s and would never run again: "+
				"choose another id, or leave out --id to get a new one", id, bk.Namespace, bk.Name)
		}
		return id, nil
	}
	for range maxIDDraws {
		id, err := generateOperationID(now())
		if err != nil || !backupIDUsed(bk, id) {
			return id, err
		}
	}
	return "", fmt.Errorf("no unused backup run id after %d draws", maxIDDraws)
}

// runEnded reports whether the operator is done with the on-demand id: its run Succeeded or Failed, or
// the retention dropped it. Such an id can leave spec.runs: it never runs again either way.
func runEnded(bk *ackov1alpha1.AerospikeBackup, id string) bool {
	if run := findRun(bk, id); run != nil {
		return run.Phase == ackov1alpha1.BackupSucceeded || run.Phase == ackov1alpha1.BackupFailed
	}
	return slices.Contains(bk.Status.FinishedRuns, id)
}

// runsWith is the spec.runs to write for a new run: the runs there, and id last. When the list is full
// the oldest runs that ended make room, and only those: a run the operator has not finished is never
// dropped.
func runsWith(bk *ackov1alpha1.AerospikeBackup, id string) ([]ackov1alpha1.BackupRunSpec, error) {
	runs := slices.Clone(bk.Spec.Runs)
	for len(runs) >= maxRuns {
		i := slices.IndexFunc(runs, func(r ackov1alpha1.BackupRunSpec) bool { return runEnded(bk, r.ID) })
		if i < 0 {
			return nil, fmt.Errorf("spec.runs of %s/%s holds %d runs, the most the API allows, and none of them "+
				"has ended: wait until one ends (kubectl get asbk %s -n %s -o yaml)", bk.Namespace, bk.Name,
				len(runs), bk.Name, bk.Namespace)
		}
		runs = slices.Delete(runs, i, i+1)
	}
	return append(runs, ackov1alpha1.BackupRunSpec{ID: id}), nil
}

// runsPatch is the merge patch that writes spec.runs only if the object is still at the
// resourceVersion it was decided on (see operationPatch): a concurrent change of spec.runs is never
// overwritten, the server answers 409 Conflict instead.
func runsPatch(resourceVersion string, runs []ackov1alpha1.BackupRunSpec) ([]byte, error) {
	return json.Marshal(map[string]any{
		"metadata": map[string]any{"resourceVersion": resourceVersion},
		"spec":     map[string]any{"runs": runs},
	})
}

// writeRun adds a run to spec.runs with a resourceVersion precondition, so that what was checked (the
// id is unused, which runs stay) still holds when it lands; a conflict re-reads and decides again. A
// generated id is drawn for each attempt.
func (s *session) writeRun(ctx context.Context, name, id string, now func() time.Time) (
	*ackov1alpha1.AerospikeBackup, string, error) {
	var bk *ackov1alpha1.AerospikeBackup
	given := id != ""
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var err error
		if bk, err = s.getBackup(ctx, name); err != nil {
			return err
		}
		if id, err = unusedBackupID(bk, id, given, now); err != nil {
			return err
		}
		runs, err := runsWith(bk, id)
		if err != nil {
			return err
		}
		patch, err := runsPatch(bk.ResourceVersion, runs)
		if err != nil {
			return err
		}
		if err := s.client.Patch(ctx, bk, client.RawPatch(types.MergePatchType, patch)); err != nil {
			if apierrors.IsConflict(err) || ctx.Err() != nil {
				return err
			}
			return fmt.Errorf("the server refused backup run %s: %w", id, explainBackup(err, s.namespace, name))
		}
		return nil
	})
	if apierrors.IsConflict(err) {
		err = fmt.Errorf("%s/%s kept changing while backup run %s was being written; try again: %w",
			s.namespace, name, id, err)
	}
	return bk, id, err
}

// clusterIsReady is the operator's test before a backup: the Ready condition True at the cluster's
// current generation.
func clusterIsReady(c *ackov1alpha1.AerospikeCluster) bool {
	ready := meta.FindStatusCondition(c.Status.Conditions, ackov1alpha1.ConditionReady)
	return ready != nil && ready.Status == metav1.ConditionTrue && ready.ObservedGeneration == c.Generation
}

// whyRunWaits says why a run just written does not start at once, or "": the cluster is missing,
// paused or (without whileChanging) not Ready, or another run goes first.
func whyRunWaits(bk *ackov1alpha1.AerospikeBackup, id string, c *ackov1alpha1.AerospikeCluster, clusterErr error) string {
	switch {
	case apierrors.IsNotFound(clusterErr):
		return fmt.Sprintf("AerospikeCluster %q does not exist in namespace %q", bk.Spec.Cluster, bk.Namespace)
	case clusterErr != nil:
		return ""
	case c.Spec.Paused:
		return fmt.Sprintf("cluster %s is paused; the operator backs it up once it is resumed "+
			"(kubectl acko resume %s -n %s)", c.Name, c.Name, c.Namespace)
	case !bk.Spec.WhileChanging && !clusterIsReady(c):
		return fmt.Sprintf("the run starts when cluster %s is Ready (phase %s; spec.whileChanging lets runs start "+
			"during changes)", c.Name, orDash(string(c.Status.Phase)))
	}
	if other := runBefore(bk, id); other != nil {
		return fmt.Sprintf("backup run %s is %s: one run at a time", other.ID, other.Phase)
	}
	return ""
}

// runBefore is a run of the status, other than id, that is running or waits (the operator takes runs
// one at a time, oldest first), or nil.
func runBefore(bk *ackov1alpha1.AerospikeBackup, id string) *ackov1alpha1.BackupRunStatus {
	for i := range bk.Status.Backups {
		run := &bk.Status.Backups[i]
		if run.ID == id {
			return nil
		}
		if run.Phase == ackov1alpha1.BackupPending || run.Phase == ackov1alpha1.BackupRunning {
			return run
		}
	}
	return nil
}

// backupFollower prints a backup run's progress from successive states of its AerospikeBackup.
type backupFollower struct {
	out      io.Writer
	id       string
	waiting  string
	running  bool
	unstable bool
}

func newBackupFollower(out io.Writer, id string) *backupFollower {
	return &backupFollower{out: out, id: id}
}

// observe prints what changed since the last state and reports whether the run ended; a run that
// Failed is an error with the operator's message.
func (f *backupFollower) observe(bk *ackov1alpha1.AerospikeBackup) (bool, error) {
	run := findRun(bk, f.id)
	if run == nil {
		if slices.Contains(bk.Status.FinishedRuns, f.id) {
			return true, fmt.Errorf("backup run %s ended and the retention has dropped it already: its outcome is "+
				"no longer in the status (kubectl get events -n %s --field-selector involvedObject.name=%s)",
				f.id, bk.Namespace, bk.Name)
		}
		return false, nil // the operator has not taken it up yet
	}
	switch run.Phase {
	case ackov1alpha1.BackupPending:
		why := strings.TrimPrefix(run.Message, "waiting: ")
		if other := runBefore(bk, f.id); other != nil && (why == "" || other.Phase == ackov1alpha1.BackupRunning) {
			why = fmt.Sprintf("after backup run %s, which is %s (one run at a time)", other.ID, other.Phase)
		}
		f.wait(why)
	case ackov1alpha1.BackupRunning:
		f.start(run)
	case ackov1alpha1.BackupSucceeded:
		f.start(run)
		f.printf("Succeeded%s: %d records, %s in %s\n", took(run.StartTime, run.CompletionTime, "in"), run.Records,
			formatBytes(run.Bytes), run.Path)
		if run.Message != "" {
			f.printf("Note: %s\n", run.Message)
		}
		return true, nil
	case ackov1alpha1.BackupFailed:
		f.printf("Failed%s: %s\n", took(run.StartTime, run.CompletionTime, "after"), run.Message)
		return true, fmt.Errorf("backup run %s of %s/%s failed: %s", f.id, bk.Namespace, bk.Name, run.Message)
	}
	return false, nil
}

func (f *backupFollower) wait(why string) {
	if why == "" {
		why = "queued"
	}
	if why != f.waiting {
		f.waiting = why
		f.printf("pending: %s\n", why)
	}
}

// start prints once that the run started, and once that the cluster was seen unstable during it.
func (f *backupFollower) start(run *ackov1alpha1.BackupRunStatus) {
	if !f.running {
		f.running = true
		f.printf("running: namespaces %s to %s\n", strings.Join(run.Namespaces, ", "), run.Path)
	}
	if run.ClusterStable != nil && !*run.ClusterStable && !f.unstable && run.Phase == ackov1alpha1.BackupRunning {
		f.unstable = true
		f.printf("  the cluster is not stable (not Ready, or migrating): the backup goes on\n")
	}
}

func (f *backupFollower) printf(format string, args ...any) {
	_, _ = fmt.Fprintf(f.out, format, args...)
}

// took is " in 1m5s" (or " after 1m5s") from start to end, or "" when either is unknown.
func took(start, end *metav1.Time, word string) string {
	if start == nil || end == nil {
		return ""
	}
	return " " + word + " " + end.Sub(start.Time).Round(time.Second).String()
}

// formatBytes is n in bytes, KiB, MiB, GiB or TiB, with one decimal.
func formatBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d bytes", n)
	}
	v, i := float64(n)/unit, 0
	for v >= unit && i < 3 {
		v /= unit
		i++
	}
	return fmt.Sprintf("%.1f %ciB (%d bytes)", v, "KMGT"[i], n)
}
