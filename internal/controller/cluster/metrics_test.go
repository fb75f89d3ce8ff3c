package cluster

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
	"github.com/acko-io/acko/internal/metrics"
	"github.com/acko-io/acko/internal/operations"
)

func freeAddr() string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	defer l.Close()
	return l.Addr().String()
}

// startMeasuredOperator runs an operator that serves its metrics on addr, as the manager does.
func startMeasuredOperator(w *world, addr string) *operator {
	op := startOperator(w, operations.Config{}, func(o *ctrl.Options) {
		o.Metrics = metricsserver.Options{BindAddress: addr}
	})
	metrics.Register(func(ctx context.Context) ([]ackov1alpha1.AerospikeCluster, error) {
		list := &ackov1alpha1.AerospikeClusterList{}
		err := op.reconciler.List(ctx, list)
		return list.Items, err
	}, nil)
	return op
}

// pausedSeconds scrapes the endpoint; ok is false when the cluster has no series.
func pausedSeconds(addr string, key types.NamespacedName) (value float64, ok bool) {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return 0, false
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	Expect(err).NotTo(HaveOccurred())
	re := regexp.MustCompile(fmt.Sprintf(`(?m)^acko_cluster_paused_duration_seconds\{name="%s",namespace="%s"\} (\S+)$`,
		key.Name, key.Namespace))
	m := re.FindSubmatch(body)
	if m == nil {
		return 0, false
	}
	v, err := strconv.ParseFloat(string(m[1]), 64)
	Expect(err).NotTo(HaveOccurred())
	return v, true
}

var _ = Describe("acko_cluster_paused_duration_seconds on the metrics endpoint", func() {
	It("grows while paused, survives a manager restart, and is gone after resume and after delete", func() {
		ns, w := newNamespace()
		addr := freeAddr()
		op := startMeasuredOperator(w, addr)
		key := create(sampleCluster(ns, "timed", 1))
		waitRunning(key)
		Eventually(func() error { _, err := http.Get("http://" + addr + "/metrics"); return err }, timeout, poll).Should(Succeed())
		_, present := pausedSeconds(addr, key)
		Expect(present).To(BeFalse(), "no series for a cluster that is not paused")

		setPausedSpec(key, true)
		waitPaused(key)
		// The gauge is computed at scrape time from the manager's cache, which may see the pause a moment later.
		var first float64
		var ok bool
		Eventually(func() bool { first, ok = pausedSeconds(addr, key); return ok }, timeout, poll).Should(BeTrue())
		Eventually(func() float64 { v, _ := pausedSeconds(addr, key); return v }, 5*time.Second, 200*time.Millisecond).
			Should(BeNumerically(">", first+1))

		op.stop()
		restartedAt := time.Now()
		addr = freeAddr()
		startMeasuredOperator(w, addr)
		var after float64
		Eventually(func() bool { after, ok = pausedSeconds(addr, key); return ok }, timeout, poll).Should(BeTrue())
		Expect(after).To(BeNumerically(">", time.Since(restartedAt).Seconds()+1), "counts from the pause, not from the restart")

		setPausedSpec(key, false)
		waitRunning(key)
		Eventually(func() bool { _, ok := pausedSeconds(addr, key); return ok }, timeout, poll).Should(BeFalse())

		setPausedSpec(key, true)
		waitPaused(key)
		Expect(k8s.Delete(context.Background(), fetch(key))).To(Succeed())
		Eventually(func() bool { _, ok := pausedSeconds(addr, key); return ok }, timeout, poll).Should(BeFalse())
	})
})
