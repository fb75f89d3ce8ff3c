package kubectlacko

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"
	"sigs.k8s.io/yaml"
)

// Output formats of -o besides the human one.
const (
	outputJSON = "json"
	outputYAML = "yaml"
)

// progressWidth is the number of cells of a progress bar.
const progressWidth = 20

// checkOutput rejects an -o value the commands do not know, before anything is read.
func checkOutput(format string) error {
	switch format {
	case "", outputJSON, outputYAML:
		return nil
	}
	return fmt.Errorf("unknown output format %q: use -o json or -o yaml (or no -o for the human view)", format)
}

// printData prints v as JSON or YAML.
func printData(w io.Writer, format string, v any) error {
	var data []byte
	var err error
	if format == outputYAML {
		data, err = yaml.Marshal(v)
	} else {
		data, err = json.MarshalIndent(v, "", "  ")
		data = append(data, '\n')
	}
	if err != nil {
		return err
	}
	_, err = w.Write(data)
	return err
}

// table writes aligned columns as kubectl does; every row starts with indent.
type table struct {
	tw     *tabwriter.Writer
	indent string
}

func newTable(w io.Writer, indent string, header ...string) *table {
	t := &table{tw: tabwriter.NewWriter(w, 0, 8, 3, ' ', 0), indent: indent}
	t.row(header...)
	return t
}

func (t *table) row(cells ...string) {
	_, _ = fmt.Fprintln(t.tw, t.indent+strings.Join(cells, "\t"))
}

func (t *table) flush() error { return t.tw.Flush() }

// age is how long ago t was, as kubectl shows ages; "-" when unknown.
func age(now time.Time, t *metav1.Time) string {
	if t == nil || t.IsZero() {
		return "-"
	}
	return duration.HumanDuration(now.Sub(t.Time))
}

// progressBar draws done (#) and failed (x) pods out of total, e.g. [#############x------].
func progressBar(done, failed, total int) string {
	if total <= 0 {
		return "[" + strings.Repeat("-", progressWidth) + "]"
	}
	d := min(done, total) * progressWidth / total
	f := min(done+failed, total)*progressWidth/total - d
	return "[" + strings.Repeat("#", d) + strings.Repeat("x", f) + strings.Repeat("-", progressWidth-d-f) + "]"
}

// progress is an operation's counts in words, e.g. "2/3 done, 1 failed".
func progress(op *operationReport) string {
	return fmt.Sprintf("%d/%d done, %d failed", op.Completed, op.Total, op.Failed)
}

// renderStatus is the human view of status.
func renderStatus(w io.Writer, r clusterReport, now time.Time) error {
	ew := &errWriter{w: w}
	ew.printf("Name:         %s\n", r.Name)
	ew.printf("Namespace:    %s\n", r.Namespace)
	ew.printf("Phase:        %s\n", orDash(r.Phase))
	ew.printf("Paused:       %t\n", r.Paused)
	ew.printf("Size:         %d (%d ready)\n", r.Size, r.ReadyPods)
	ew.printf("Image:        %s\n", r.Image)
	ew.printf("Generation:   %d (observed %d)\n", r.Generation, r.ObservedGeneration)
	if r.PendingChanges != "" {
		ew.printf("Pending:      %s\n", r.PendingChanges)
	}
	if ew.err != nil {
		return ew.err
	}
	for _, section := range []func(io.Writer, clusterReport, time.Time) error{
		renderConditions, renderPods, renderOperation, renderEvents,
	} {
		if _, err := fmt.Fprintln(w); err != nil {
			return err
		}
		if err := section(w, r, now); err != nil {
			return err
		}
	}
	return nil
}

func renderConditions(w io.Writer, r clusterReport, now time.Time) error {
	if len(r.Conditions) == 0 {
		_, err := fmt.Fprintln(w, "Conditions:   none yet")
		return err
	}
	_, _ = fmt.Fprintln(w, "Conditions:")
	t := newTable(w, "  ", "TYPE", "STATUS", "REASON", "AGE", "MESSAGE")
	for _, c := range r.Conditions {
		t.row(c.Type, string(c.Status), orDash(c.Reason), age(now, &c.LastTransitionTime), orDash(c.Message))
	}
	return t.flush()
}

func renderPods(w io.Writer, r clusterReport, now time.Time) error {
	if len(r.Pods) == 0 {
		_, err := fmt.Fprintln(w, "Pods:         none")
		return err
	}
	gate := false
	for _, p := range r.Pods {
		gate = gate || p.AerospikeReady != ""
	}
	header := []string{"NAME", "RACK", "IP", "STATUS", "READY"}
	if gate {
		header = append(header, "AEROSPIKE-READY")
	}
	_, _ = fmt.Fprintln(w, "Pods:")
	t := newTable(w, "  ", append(header, "LAST RESTART", "AGE")...)
	for _, p := range r.Pods {
		cells := []string{p.Name, fmt.Sprint(p.Rack), orDash(p.PodIP), p.State, fmt.Sprint(p.Ready)}
		if gate {
			cells = append(cells, orDash(p.AerospikeReady))
		}
		restart := "-"
		if p.LastRestartReason != "" {
			restart = p.LastRestartReason + ", " + age(now, p.LastRestartTime) + " ago"
		}
		t.row(append(cells, restart, age(now, p.Created))...)
	}
	return t.flush()
}

func renderOperation(w io.Writer, r clusterReport, _ time.Time) error {
	op := r.Operation
	if op == nil {
		_, err := fmt.Fprintln(w, "Operation:    none")
		return err
	}
	ew := &errWriter{w: w}
	ew.printf("Operation:    %s (%s) %s\n", op.ID, op.Kind, op.Phase)
	if op.Phase == phasePending {
		ew.printf("              waits until the cluster is Running and not paused\n")
		return ew.err
	}
	ew.printf("              %s %s\n", progressBar(op.Completed, op.Failed, op.Total), progress(op))
	if op.CurrentPod != "" && op.Phase == "InProgress" {
		ew.printf("              restarting %s\n", op.CurrentPod)
	}
	if len(op.FailedPods) > 0 {
		ew.printf("              failed: %s\n", strings.Join(op.FailedPods, ", "))
	}
	if op.Message != "" {
		ew.printf("              %s\n", op.Message)
	}
	return ew.err
}

func renderEvents(w io.Writer, r clusterReport, now time.Time) error {
	if len(r.Events) == 0 {
		_, err := fmt.Fprintln(w, "Events:       none")
		return err
	}
	_, _ = fmt.Fprintln(w, "Events:")
	t := newTable(w, "  ", "LAST SEEN", "TYPE", "REASON", "MESSAGE")
	for _, e := range r.Events {
		seen := age(now, &e.LastSeen)
		if e.Count > 1 {
			seen += fmt.Sprintf(" (x%d)", e.Count)
		}
		t.row(seen, e.Type, e.Reason, e.Message)
	}
	return t.flush()
}

// renderList is the human view of list: kubectl get asc's columns plus the operation's progress.
func renderList(w io.Writer, items []listItem, allNamespaces bool, now time.Time) error {
	header := []string{"NAME", "SIZE", "READY", "PHASE", "PAUSED", "OPERATION", "OP-PHASE", "PROGRESS", "AGE"}
	if allNamespaces {
		header = append([]string{"NAMESPACE"}, header...)
	}
	t := newTable(w, "", header...)
	for _, it := range items {
		cells := []string{it.Name, fmt.Sprint(it.Size), fmt.Sprint(it.ReadyPods), orDash(it.Phase), fmt.Sprint(it.Paused)}
		if allNamespaces {
			cells = append([]string{it.Namespace}, cells...)
		}
		opID, opPhase, opProgress := "-", "-", "-"
		if op := it.Operation; op != nil {
			opID, opPhase, opProgress = op.ID, op.Phase, fmt.Sprintf("%d/%d", op.Completed, op.Total)
			if op.Failed > 0 {
				opProgress += fmt.Sprintf(" (%d failed)", op.Failed)
			}
		}
		created := it.Created
		t.row(append(cells, opID, opPhase, opProgress, age(now, &created))...)
	}
	return t.flush()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// errWriter keeps the first write error so that a block of prints checks it once.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) printf(format string, args ...any) {
	if e.err == nil {
		_, e.err = fmt.Fprintf(e.w, format, args...)
	}
}
