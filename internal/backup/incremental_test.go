package backup

import (
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
)

var t0 = time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)

// full and incr are runs as the status records them: started at t0 plus hours.
func full(id string, hours int, phase ackov1alpha1.BackupPhase) ackov1alpha1.BackupRunStatus {
	start := metav1.NewTime(t0.Add(time.Duration(hours) * time.Hour))
	return ackov1alpha1.BackupRunStatus{ID: id, Phase: phase, StartTime: &start, CompletionTime: &start,
		Namespaces: []string{"test"}}
}

func incr(id string, hours int, phase ackov1alpha1.BackupPhase, base, after string) ackov1alpha1.BackupRunStatus {
	r := full(id, hours, phase)
	r.Incremental, r.Base, r.After = true, base, after
	return r
}

func ids(rs []ackov1alpha1.BackupRunStatus) []string {
	out := []string{}
	for _, r := range rs {
		out = append(out, r.ID)
	}
	return out
}

const (
	ok     = ackov1alpha1.BackupSucceeded
	failed = ackov1alpha1.BackupFailed
)

// An incremental builds on the newest successful run (by start), full or incremental, and on its full
// base; with no full success it has nothing.
func TestIncrementalStart(t *testing.T) {
	for name, tc := range map[string]struct {
		runs        []ackov1alpha1.BackupRunStatus
		base, after string
	}{
		"no run":                  {nil, "", ""},
		"only a failed full":      {[]ackov1alpha1.BackupRunStatus{full("f", 0, failed)}, "", ""},
		"a full":                  {[]ackov1alpha1.BackupRunStatus{full("f", 0, ok)}, "f", "f"},
		"a failed one is skipped": {[]ackov1alpha1.BackupRunStatus{full("f", 0, ok), incr("i1", 1, failed, "f", "f")}, "f", "f"},
		"after an incremental": {[]ackov1alpha1.BackupRunStatus{full("f", 0, ok), incr("i1", 1, ok, "f", "f"),
			incr("i2", 2, ok, "f", "i1")}, "f", "i2"},
		"a new full starts a new chain": {[]ackov1alpha1.BackupRunStatus{full("f", 0, ok), incr("i1", 1, ok, "f", "f"),
			full("g", 2, ok)}, "g", "g"},
		"by start, not by place": {[]ackov1alpha1.BackupRunStatus{incr("i1", 3, ok, "f", "f"), full("f", 0, ok)}, "f", "i1"},
		"a base that is gone":    {[]ackov1alpha1.BackupRunStatus{incr("i1", 3, ok, "f", "f")}, "", ""},
	} {
		base, after := IncrementalStart(tc.runs)
		got := [2]string{}
		if base != nil {
			got[0] = base.ID
		}
		if after != nil {
			got[1] = after.ID
		}
		if got != [2]string{tc.base, tc.after} {
			t.Errorf("%s: base, after %v, want %s %s", name, got, tc.base, tc.after)
		}
	}
}

// A chain is the full base, then every incremental up to the one asked, in order; a run it needs that
// is not a successful run of the status is named.
func TestChain(t *testing.T) {
	runs := []ackov1alpha1.BackupRunStatus{full("f", 0, ok), incr("i1", 1, ok, "f", "f"),
		incr("x", 2, failed, "f", "i1"), incr("i2", 3, ok, "f", "i1"), incr("i3", 4, ok, "f", "i2"),
		incr("j", 5, ok, "gone", "gone"), incr("k", 6, ok, "f", "x"), incr("l", 7, ok, "f", "")}
	for id, tc := range map[string]struct {
		chain   []string
		missing string
	}{
		"f":  {[]string{"f"}, ""},
		"i1": {[]string{"f", "i1"}, ""},
		"i3": {[]string{"f", "i1", "i2", "i3"}, ""},
		"j":  {nil, "gone"},
		"k":  {nil, "x"}, // a failed run is no link
		"l":  {nil, "l"}, // an incremental after nothing
		"zz": {nil, "zz"},
	} {
		chain, missing := Chain(runs, id)
		if got := ids(chain); !slices.Equal(got, append([]string{}, tc.chain...)) || missing != tc.missing {
			t.Errorf("Chain(%s) = %v, missing %q; want %v, %q", id, got, missing, tc.chain, tc.missing)
		}
	}
}

// The retention never drops a run a kept incremental needs: its whole chain stays, however old.
func TestPruneKeepsChains(t *testing.T) {
	now := t0.Add(10 * time.Hour)
	runs := []ackov1alpha1.BackupRunStatus{full("old", 0, ok), full("f", 1, ok), incr("i1", 2, ok, "f", "f"),
		incr("i2", 3, ok, "f", "i1"), incr("i3", 4, ok, "f", "i2")}
	for name, tc := range map[string]struct {
		retention  *ackov1alpha1.BackupRetention
		keep, drop []string
	}{
		"keepLast 1": {&ackov1alpha1.BackupRetention{KeepLast: ptr.To[int32](1)},
			[]string{"f", "i1", "i2", "i3"}, []string{"old"}},
		"keepFor 1h": {&ackov1alpha1.BackupRetention{KeepFor: &metav1.Duration{Duration: time.Hour}},
			[]string{"f", "i1", "i2", "i3"}, []string{"old"}},
		"keepLast 5": {&ackov1alpha1.BackupRetention{KeepLast: ptr.To[int32](5)},
			[]string{"old", "f", "i1", "i2", "i3"}, []string{}},
	} {
		keep, drop := Prune(runs, tc.retention, now)
		if !slices.Equal(ids(keep), tc.keep) || !slices.Equal(ids(drop), tc.drop) {
			t.Errorf("%s: keep %v drop %v, want %v %v", name, ids(keep), ids(drop), tc.keep, tc.drop)
		}
	}
	// A new full: the old chain goes once no kept incremental needs it.
	runs = append(runs, full("g", 5, ok), incr("j1", 6, ok, "g", "g"))
	keep, drop := Prune(runs, &ackov1alpha1.BackupRetention{KeepLast: ptr.To[int32](1)}, now)
	if !slices.Equal(ids(keep), []string{"g", "j1"}) || !slices.Equal(ids(drop), []string{"old", "f", "i1", "i2", "i3"}) {
		t.Errorf("after a new full: keep %v drop %v", ids(keep), ids(drop))
	}
}

// An incremental Job passes --modified-after as asbackup reads it (YYYY-MM-DD_HH:MM:SS in the tool's
// local zone, made UTC); a full one does neither.
func TestIncrementalJob(t *testing.T) {
	bk, c := sample()
	after := metav1.NewTime(time.Date(2026, 12, 3, 10, 15, 42, 900_000_000, time.FixedZone("CET", 3600)))
	run := ackov1alpha1.BackupRunStatus{ID: "i1", Incremental: true, Base: "f", After: "f", ModifiedAfter: &after}
	tool := Job(bk, c, run, "test", "cluster.local").Spec.Template.Spec.Containers[0]
	if args := strings.Join(tool.Args, " "); !strings.HasSuffix(args, "--modified-after 2026-12-03_09:15:42") {
		t.Errorf("args %q", args)
	}
	if !slices.Contains(tool.Env, corev1.EnvVar{Name: "TZ", Value: "UTC"}) {
		t.Errorf("env %v lacks TZ=UTC", tool.Env)
	}
	tool = Job(bk, c, ackov1alpha1.BackupRunStatus{ID: "f"}, "test", "cluster.local").Spec.Template.Spec.Containers[0]
	if strings.Contains(strings.Join(tool.Args, " "), "--modified-after") || len(tool.Env) != 0 {
		t.Errorf("a full run: args %v env %v", tool.Args, tool.Env)
	}
	if ScheduledIncrementalID(t0) == ScheduledID(t0) {
		t.Error("a scheduled incremental and a full one due at the same minute share an id")
	}
}

// A chain's restore Jobs are named by step; the status says what was restored, in order.
func TestRestoreSteps(t *testing.T) {
	if RestoreStepName(0) != "restore" || RestoreStepName(2) != "restore-2" {
		t.Fatalf("step names %s %s", RestoreStepName(0), RestoreStepName(2))
	}
	chain := []ackov1alpha1.RestoreStep{{ID: "f"}, {ID: "i1", Incremental: true}, {ID: "i2", Incremental: true}}
	if got := ChainNote(chain); got != ": full backup f, then incrementals i1, i2" {
		t.Errorf("ChainNote %q", got)
	}
	if ChainNote(chain[:1]) != "" {
		t.Error("a single backup has no chain note")
	}
	if got := MissingLink("nightly", "i2", "i1"); !strings.Contains(got, "backup i1") || !strings.Contains(got, "restore i2") {
		t.Errorf("MissingLink %q", got)
	}
}

// A restore of an incremental whose chain misses a run is refused at once, naming the run.
func TestValidateRestoreChain(t *testing.T) {
	bk, c := sample()
	bk.Status.Backups = []ackov1alpha1.BackupRunStatus{incr("i1", 1, ok, "f", "f"), full("g", 2, ok)}
	rs := &ackov1alpha1.AerospikeRestore{ObjectMeta: metav1.ObjectMeta{Name: "back", Namespace: "db"},
		Spec: ackov1alpha1.AerospikeRestoreSpec{Cluster: "prod", Backup: &ackov1alpha1.BackupReference{Name: "nightly", ID: "i1"}}}
	errs := ValidateRestore(rs, c, bk)
	if len(errs) != 1 || errs[0].Field != "spec.backup.id" || !strings.Contains(errs[0].Detail, "backup f of its chain") {
		t.Fatalf("errors %v", errs)
	}
	rs.Spec.Backup.ID = "" // the newest, g: a full backup
	if errs := ValidateRestore(rs, c, bk); len(errs) != 0 {
		t.Fatalf("errors %v", errs)
	}
}

// The incremental schedule is checked as the full one is.
func TestValidateIncrementalSchedule(t *testing.T) {
	bk, c := sample()
	bk.Spec.Incremental = &ackov1alpha1.IncrementalBackup{Schedule: "every hour"}
	if errs := ValidateBackup(bk, c, true); len(errs) != 1 || errs[0].Field != "spec.incremental.schedule" {
		t.Fatalf("errors %v", errs)
	}
	bk.Spec.Incremental.Schedule = "@every 15m"
	if errs := ValidateBackup(bk, c, true); len(errs) != 0 {
		t.Fatalf("errors %v", errs)
	}
}
