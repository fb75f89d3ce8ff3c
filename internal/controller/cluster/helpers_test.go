package cluster

import (
	"context"
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	kstatus "sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
	"github.com/acko-io/acko/test/testcluster"
)

const (
	timeout = 30 * time.Second
	poll    = 50 * time.Millisecond
)

func sampleCluster(namespace, name string, size int32) *ackov1alpha1.AerospikeCluster {
	return testcluster.New(namespace, name, size)
}

func fetch(key types.NamespacedName) *ackov1alpha1.AerospikeCluster {
	c := &ackov1alpha1.AerospikeCluster{}
	ExpectWithOffset(1, k8s.Get(context.Background(), key, c)).To(Succeed())
	return c
}

func phaseOf(key types.NamespacedName) func() ackov1alpha1.ClusterPhase {
	return func() ackov1alpha1.ClusterPhase {
		c := &ackov1alpha1.AerospikeCluster{}
		if err := k8s.Get(context.Background(), key, c); err != nil {
			return ""
		}
		return c.Status.Phase
	}
}

func condition(key types.NamespacedName, typ string) func() *metav1.Condition {
	return func() *metav1.Condition {
		c := &ackov1alpha1.AerospikeCluster{}
		if err := k8s.Get(context.Background(), key, c); err != nil {
			return nil
		}
		return meta.FindStatusCondition(c.Status.Conditions, typ)
	}
}

func create(c *ackov1alpha1.AerospikeCluster) types.NamespacedName {
	ExpectWithOffset(1, k8s.Create(context.Background(), c)).To(Succeed())
	return client.ObjectKeyFromObject(c)
}

// update re-reads the cluster, changes its spec and writes it, retrying on conflicts.
func update(key types.NamespacedName, mutate func(*ackov1alpha1.AerospikeCluster)) {
	EventuallyWithOffset(1, func() error {
		c := &ackov1alpha1.AerospikeCluster{}
		if err := k8s.Get(context.Background(), key, c); err != nil {
			return err
		}
		mutate(c)
		return k8s.Update(context.Background(), c)
	}, timeout, poll).Should(Succeed())
}

// podUIDs maps the cluster's pods to their UIDs.
func podUIDs(key types.NamespacedName) map[string]types.UID {
	pods := &corev1.PodList{}
	ExpectWithOffset(1, k8s.List(context.Background(), pods, client.InNamespace(key.Namespace),
		client.MatchingLabels{ackov1alpha1.LabelInstance: key.Name})).To(Succeed())
	out := map[string]types.UID{}
	for _, p := range pods.Items {
		out[p.Name] = p.UID
	}
	return out
}

// waitWritesSettled waits until the operator has made no write for a second: the last writes of
// reaching Running (pod facts, the final summary) may land just after the phase does.
func waitWritesSettled(op *operator) {
	EventuallyWithOffset(1, func() bool {
		n := op.writes.count()
		time.Sleep(time.Second)
		return op.writes.count() == n
	}, timeout, poll).Should(BeTrue())
}

// waitRunning waits until the operator reports Running for the current generation.
func waitRunning(key types.NamespacedName) {
	EventuallyWithOffset(1, func() string {
		c := &ackov1alpha1.AerospikeCluster{}
		if err := k8s.Get(context.Background(), key, c); err != nil {
			return err.Error()
		}
		return fmt.Sprintf("%s, generation observed: %v", c.Status.Phase, c.Status.ObservedGeneration == c.Generation)
	}, timeout, poll).Should(Equal("Running, generation observed: true"))
}

// kstatusOf is what kstatus-based tools (Flux, Argo CD, kubectl wait) make of the cluster.
func kstatusOf(c *ackov1alpha1.AerospikeCluster) kstatus.Status {
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(c)
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	res, err := kstatus.Compute(&unstructured.Unstructured{Object: obj})
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	return res.Status
}

// rolled makes a change that recreates every pod, waits for every pod to be recreated and the cluster
// Running again, and returns the size of each batch the roll took (its RollingRestartStarted events,
// counting the pods named with reason).
func rolled(key types.NamespacedName, reason ackov1alpha1.RestartReason, change func(*ackov1alpha1.AerospikeCluster)) []int {
	before := podUIDs(key)
	seen := len(eventMessages(key, ackov1alpha1.EventRollingRestartStarted))
	update(key, change)
	EventuallyWithOffset(1, func() int {
		done := 0
		for name, uid := range podUIDs(key) {
			if before[name] != uid {
				done++
			}
		}
		return done
	}, timeout, poll).Should(Equal(len(before)))
	waitRunning(key)
	var sizes []int
	for _, m := range eventMessages(key, ackov1alpha1.EventRollingRestartStarted)[seen:] {
		sizes = append(sizes, strings.Count(m, "("+string(reason)))
	}
	return sizes
}
