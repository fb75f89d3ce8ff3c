package toolrun

import (
	"context"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// summary is a tool pod whose log says one line.
type summary struct{}

func (summary) Tail(context.Context, *corev1.Pod, string, int64) ([]string, error) {
	return []string{"Backed up 42 record(s)"}, nil
}

// A finished Job whose pod the cache does not show yet is looked at again, rather than read as a tool
// that printed nothing; one whose pod stays missing past podSeenGrace ends without figures.
func TestJobOutcomeWaitsForThePodOfAFinishedJob(t *testing.T) {
	for _, tc := range []struct {
		name     string
		endedAgo time.Duration
		pod      bool
		done     bool
		lines    int
	}{
		{name: "ended now, its pod not seen yet", endedAgo: time.Second, done: false},
		{name: "ended now, its pod seen", endedAgo: time.Second, pod: true, done: true, lines: 1},
		{name: "ended long ago, its pod gone", endedAgo: time.Minute, done: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			now := time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)
			ended := metav1.NewTime(now.Add(-tc.endedAgo))
			job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "nightly-one-test"},
				Status: batchv1.JobStatus{Conditions: []batchv1.JobCondition{
					{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, LastTransitionTime: ended}}}}
			scheme := runtime.NewScheme()
			if err := clientgoscheme.AddToScheme(scheme); err != nil {
				t.Fatal(err)
			}
			b := fake.NewClientBuilder().WithScheme(scheme).WithObjects(job)
			if tc.pod {
				b = b.WithObjects(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: job.Name + "-abcde",
					Labels: map[string]string{batchv1.JobNameLabel: job.Name}}})
			}
			done, failure, lines, err := JobOutcome(context.Background(), b.Build(), summary{}, "ns", job.Name, "asbackup", now)
			if err != nil || failure != "" {
				t.Fatalf("err %v, failure %q", err, failure)
			}
			if done != tc.done || len(lines) != tc.lines {
				t.Fatalf("done %v with %d lines, want %v with %d", done, len(lines), tc.done, tc.lines)
			}
		})
	}
}
