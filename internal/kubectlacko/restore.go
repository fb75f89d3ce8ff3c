package kubectlacko

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
	"github.com/acko-io/acko/internal/backup"
	"github.com/acko-io/acko/internal/config"
)

// conflictPolicies are the API's conflict policies, the default first.
var conflictPolicies = []string{string(ackov1alpha1.ConflictGeneration), string(ackov1alpha1.ConflictUnique),
	string(ackov1alpha1.ConflictReplace), string(ackov1alpha1.ConflictNoGeneration)}

// restoreRequest is what `kubectl acko restore` was asked.
type restoreRequest struct {
	cluster        string
	from           string
	conflictPolicy string
	namespaces     map[string]string
	wait           bool
	timeout        time.Duration
}

// source is the backup and run of --from BACKUP[/ID]; an empty id is the newest successful run.
func (r restoreRequest) source() (backup, id string) {
	backup, id, _ = strings.Cut(r.from, "/")
	return backup, id
}

// check refuses what the API would refuse, before anything is sent.
func (r restoreRequest) check() error {
	backup, id := r.source()
	if backup == "" || strings.Count(r.from, "/") > 1 || strings.HasSuffix(r.from, "/") {
		return fmt.Errorf("--from %q: want BACKUP or BACKUP/ID (an AerospikeBackup of this namespace, and one "+
			"of its runs; without ID its newest successful run)", r.from)
	}
	if id != "" {
		if err := checkBackupID(id); err != nil {
			return fmt.Errorf("--from: %w", err)
		}
	}
	if !slices.Contains(conflictPolicies, r.conflictPolicy) {
		return fmt.Errorf("--conflict-policy %q: want one of %s", r.conflictPolicy, strings.Join(conflictPolicies, ", "))
	}
	for from, to := range r.namespaces {
		if from == "" || to == "" {
			return fmt.Errorf("--namespace-map %s=%s: want SOURCE=TARGET, two Aerospike namespace names", from, to)
		}
	}
	return nil
}

func (o *options) newRestoreCommand() *cobra.Command {
	req := restoreRequest{conflictPolicy: string(ackov1alpha1.ConflictGeneration), timeout: backupTimeout}
	cmd := &cobra.Command{
		Use:   "restore NAME --cluster CLUSTER --from BACKUP[/ID] [--conflict-policy P] [--wait]",
		Short: "Restore a backup into an AerospikeCluster (creates an AerospikeRestore)",
		Long: "Creates the AerospikeRestore NAME: the operator restores the backup run BACKUP/ID (without ID the " +
			"newest successful run of the AerospikeBackup BACKUP) into the AerospikeCluster CLUSTER of the same " +
			"namespace with asrestore, once. The backup, the run and the cluster are checked first. " +
			"--conflict-policy says what happens to records the cluster has: Generation (the default: written " +
			"unless the cluster's copy is newer), Unique (only records it lacks), Replace (whole records, unless " +
			"newer) or NoGeneration (every record). With --wait it follows the restore until it Succeeded " +
			"(exit 0: records restored, existed, fresher, expired) or Failed (exit 1). See docs/backup.md.",
		Example: "  kubectl acko restore restore-1 -n aerospike --cluster aerospike-3node --from nightly --wait\n" +
			"  kubectl acko restore restore-2 -n aerospike --cluster copy --from nightly/before-upgrade " +
			"--conflict-policy Unique --namespace-map test=test-copy",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: cobra.NoFileCompletions,
		// Checked in RunE: cobra checks the required flags after PreRunE.
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := req.check(); err != nil {
				return err
			}
			return o.restore(cmd.Context(), args[0], req)
		},
	}
	f := cmd.Flags()
	// It shadows kubectl's --cluster (the kubeconfig cluster) on this command: --context selects one.
	f.StringVar(&req.cluster, "cluster", "", "the AerospikeCluster to restore into, in this namespace (not the "+
		"kubeconfig cluster: use --context for that)")
	f.StringVar(&req.from, "from", "", "the AerospikeBackup of this namespace and its run: BACKUP/ID, or BACKUP for "+
		"its newest successful run")
	f.StringVar(&req.conflictPolicy, "conflict-policy", req.conflictPolicy, "what happens to records the cluster "+
		"has: "+strings.Join(conflictPolicies, ", "))
	f.StringToStringVar(&req.namespaces, "namespace-map", nil, "restore Aerospike namespace SOURCE of the backup "+
		"into TARGET of the cluster: SOURCE=TARGET, comma-separated or repeated; a namespace not named keeps its name")
	f.BoolVar(&req.wait, "wait", false, "follow the restore until it Succeeded or Failed")
	f.DurationVar(&req.timeout, "timeout", req.timeout, "how long to wait for the API server and, with --wait, "+
		"for the restore")
	_ = cmd.MarkFlagRequired("cluster")
	_ = cmd.MarkFlagRequired("from")
	_ = cmd.RegisterFlagCompletionFunc("cluster", o.completeClusterFlag)
	_ = cmd.RegisterFlagCompletionFunc("from", o.completeBackupRuns)
	_ = cmd.RegisterFlagCompletionFunc("conflict-policy", cobra.FixedCompletions(conflictPolicies,
		cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

func (o *options) restore(ctx context.Context, name string, req restoreRequest) error {
	ctx, cancel := context.WithTimeout(ctx, req.timeout)
	defer cancel()
	s, err := o.connect()
	if err != nil {
		return err
	}
	rs, run, err := s.createRestore(ctx, name, req)
	if err != nil {
		return timedOut(err, req.timeout, "the API server")
	}
	which := "run " + run.ID
	if rs.Spec.Backup.ID == "" {
		which = "its newest successful run, now " + run.ID
	}
	_, _ = fmt.Fprintf(o.streams.Out, "Restore %s/%s created: backup %s (%s, %s) into cluster %s, conflict policy %s%s\n",
		rs.Namespace, rs.Name, rs.Spec.Backup.Name, which, run.Path, rs.Spec.Cluster, rs.Spec.ConflictPolicy,
		describeMapping(rs.Spec.Namespaces))
	if !req.wait {
		_, err = fmt.Fprintf(o.streams.Out, "Follow it with: kubectl get asrs %s -n %s -w\n", rs.Name, rs.Namespace)
		return err
	}
	follower := newRestoreFollower(o.streams.Out)
	err = watchNamed(ctx, s, "AerospikeRestore", name, &ackov1alpha1.AerospikeRestore{},
		func() client.ObjectList { return &ackov1alpha1.AerospikeRestoreList{} }, follower.observe)
	return timedOut(err, req.timeout, fmt.Sprintf("restore %s/%s to end; it goes on (is the ACKO manager running?): "+
		"kubectl get asrs %s -n %s -o yaml", rs.Namespace, rs.Name, rs.Name, rs.Namespace))
}

func describeMapping(m map[string]string) string {
	if len(m) == 0 {
		return ""
	}
	var pairs []string
	for _, from := range slices.Sorted(maps.Keys(m)) {
		pairs = append(pairs, from+" -> "+m[from])
	}
	return ", namespaces " + strings.Join(pairs, ", ")
}

// createRestore checks that the backup has the run and that the cluster exists (and has the target
// namespaces), then creates the AerospikeRestore. It returns the run the restore reads as of now.
func (s *session) createRestore(ctx context.Context, name string, req restoreRequest) (
	*ackov1alpha1.AerospikeRestore, *ackov1alpha1.BackupRunStatus, error) {
	backupName, id := req.source()
	bk, err := s.getBackup(ctx, backupName)
	if err != nil {
		return nil, nil, err
	}
	run, err := restorableRun(bk, id)
	if err != nil {
		return nil, nil, err
	}
	c, err := s.getCluster(ctx, req.cluster)
	if err != nil {
		return nil, nil, err
	}
	if err := checkNamespaces(run, c, req.namespaces); err != nil {
		return nil, nil, err
	}
	rs := &ackov1alpha1.AerospikeRestore{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: s.namespace},
		Spec: ackov1alpha1.AerospikeRestoreSpec{
			Cluster:        req.cluster,
			Backup:         &ackov1alpha1.BackupReference{Name: backupName, ID: id},
			Namespaces:     req.namespaces,
			ConflictPolicy: ackov1alpha1.ConflictPolicy(req.conflictPolicy),
		},
	}
	if err := s.client.Create(ctx, rs); err != nil {
		switch {
		case apierrors.IsAlreadyExists(err):
			return nil, nil, fmt.Errorf("AerospikeRestore %q already exists in namespace %q: a restore runs once; "+
				"choose another name (kubectl get asrs %s -n %s -o yaml shows how it went)", name, s.namespace,
				name, s.namespace)
		case ctx.Err() != nil:
			return nil, nil, err
		}
		return nil, nil, fmt.Errorf("the server refused AerospikeRestore %s: %w", name, explainBackup(err, s.namespace, name))
	}
	return rs, run, nil
}

// restorableRun is the successful run id of the backup, or its newest successful one when id is empty;
// otherwise an error that says what the backup has.
func restorableRun(bk *ackov1alpha1.AerospikeBackup, id string) (*ackov1alpha1.BackupRunStatus, error) {
	var succeeded []string
	var newest *ackov1alpha1.BackupRunStatus
	for i := range bk.Status.Backups {
		if run := &bk.Status.Backups[i]; run.Phase == ackov1alpha1.BackupSucceeded {
			succeeded = append(succeeded, run.ID)
			newest = run
		}
	}
	ref := bk.Namespace + "/" + bk.Name
	if id == "" {
		if newest == nil {
			return nil, fmt.Errorf("AerospikeBackup %s has no successful backup yet (kubectl acko backup %s -n %s "+
				"--wait makes one)", ref, bk.Name, bk.Namespace)
		}
		return newest, nil
	}
	run := findRun(bk, id)
	switch {
	case run == nil && slices.Contains(bk.Status.FinishedRuns, id):
		return nil, fmt.Errorf("backup run %s of %s was dropped by the retention: its files are deleted "+
			"(successful runs: %s)", id, ref, orNone(succeeded))
	case run == nil:
		return nil, fmt.Errorf("AerospikeBackup %s has no backup run %s (successful runs: %s)", ref, id, orNone(succeeded))
	case run.Phase != ackov1alpha1.BackupSucceeded:
		return nil, fmt.Errorf("backup run %s of %s is %s: only a run that Succeeded can be restored "+
			"(successful runs: %s)", id, ref, run.Phase, orNone(succeeded))
	}
	return run, nil
}

func orNone(ids []string) string {
	if len(ids) == 0 {
		return "none"
	}
	return strings.Join(ids, ", ")
}

// checkNamespaces refuses a mapping of a namespace the run does not hold, and a target namespace the
// cluster's config does not have (asrestore would fail on it).
func checkNamespaces(run *ackov1alpha1.BackupRunStatus, c *ackov1alpha1.AerospikeCluster, mapping map[string]string) error {
	for _, from := range slices.Sorted(maps.Keys(mapping)) {
		if !slices.Contains(run.Namespaces, from) {
			return fmt.Errorf("--namespace-map %s=%s: backup run %s holds no Aerospike namespace %s (it holds %s)",
				from, mapping[from], run.ID, from, orNone(run.Namespaces))
		}
	}
	have := config.NamespaceNames(c)
	if len(have) == 0 {
		return nil
	}
	for _, from := range run.Namespaces {
		to := from
		if m, ok := mapping[from]; ok {
			to = m
		}
		if !slices.Contains(have, to) {
			return fmt.Errorf("cluster %s has no Aerospike namespace %s to restore %s into (it has %s; "+
				"--namespace-map %s=OTHER restores it into another)", c.Name, to, from, strings.Join(have, ", "), from)
		}
	}
	return nil
}

// restoreFollower prints a restore's progress from successive states of its AerospikeRestore.
type restoreFollower struct {
	out     io.Writer
	waiting string
	running bool
}

func newRestoreFollower(out io.Writer) *restoreFollower { return &restoreFollower{out: out} }

// observe prints what changed since the last state and reports whether the restore ended; a restore
// that Failed is an error with the operator's message.
func (f *restoreFollower) observe(rs *ackov1alpha1.AerospikeRestore) (bool, error) {
	st := &rs.Status
	switch st.Phase {
	case "", ackov1alpha1.BackupPending:
		if why := strings.TrimPrefix(st.Message, "waiting: "); why != "" && why != f.waiting {
			f.waiting = why
			f.printf("pending: %s\n", why)
		}
	case ackov1alpha1.BackupRunning:
		f.start(rs)
	case ackov1alpha1.BackupSucceeded:
		f.start(rs)
		f.printf("Succeeded%s: restored %d of %d records (%s)\n",
			took(st.StartTime, st.CompletionTime, "in"), st.Restored, st.Records, backup.RestoreCounts(st))
		return true, nil
	case ackov1alpha1.BackupFailed:
		f.printf("Failed%s: %s\n", took(st.StartTime, st.CompletionTime, "after"), st.Message)
		return true, fmt.Errorf("restore %s/%s failed: %s", rs.Namespace, rs.Name, st.Message)
	}
	return false, nil
}

func (f *restoreFollower) start(rs *ackov1alpha1.AerospikeRestore) {
	if !f.running {
		f.running = true
		f.printf("running: restoring backup run %s from %s into cluster %s\n", rs.Status.BackupID, rs.Status.Path,
			rs.Spec.Cluster)
	}
}

func (f *restoreFollower) printf(format string, args ...any) {
	_, _ = fmt.Fprintf(f.out, format, args...)
}
