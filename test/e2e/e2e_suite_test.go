// Package e2e runs ACKO end to end on the local cluster (test/localcluster): a real control plane,
// kwok nodes, the Aerospike simulator, the manager binary (bin/manager, built by `make test-e2e`)
// with its own RBAC, Prometheus, and the real kubectl.
//
// Add a spec: drive the cluster with kubectl(...) and the other helpers of helpers_test.go, and
// wait with Eventually (eventuallyPhase for an AerospikeCluster). Each spec should work in its own
// namespace so specs stay independent.
package e2e

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/acko-io/acko/test/localcluster"
)

var (
	opts    localcluster.Options
	cluster *localcluster.Cluster
	// failed is set when the suite setup or any spec failed: AfterSuite then prints the logs.
	failed bool
	// suiteLock is held for the whole run (a dropped *os.File would close it, and free the lock).
	suiteLock *os.File
)

func TestE2E(t *testing.T) {
	RegisterFailHandler(Fail)
	suiteConfig, reporterConfig := GinkgoConfiguration()
	// go test's -timeout kills the binary without cleanup; Ginkgo's own timeout fires first, so
	// AfterSuite still stops the cluster.
	if deadline, ok := t.Deadline(); ok {
		suiteConfig.Timeout = time.Until(deadline) - 2*time.Minute
	}
	RunSpecs(t, "ACKO end-to-end suite", suiteConfig, reporterConfig)
}

var _ = BeforeSuite(func(ctx SpecContext) {
	failed = true // until the cluster is up
	SetDefaultEventuallyTimeout(time.Minute)
	SetDefaultEventuallyPollingInterval(250 * time.Millisecond)

	opts = localcluster.E2EOptions(e2eInstance())
	opts.Progress = GinkgoWriter
	opts.RealNodes = os.Getenv(localcluster.EnvBackend) == localcluster.TestBackendReal
	if opts.RealNodes {
		// The real tier checks the Aerospike nodes, not the metrics: no Prometheus, its CPU for asd.
		opts.RequirePrometheus, opts.NoPrometheus = false, true
	}
	lockSuite()
	// Processes of an earlier run die with it (Options.DieWithParent); its state goes here.
	Expect(opts.Running()).To(BeEmpty(), "processes of another e2e run are alive")
	Expect(opts.Wipe()).To(Succeed())

	cluster = localcluster.New(opts)
	Expect(cluster.Up(ctx)).To(Succeed())
	syncLog, err := os.OpenFile(opts.LogPath("sync"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(syncLog.Close)
	Expect(cluster.StartSync(syncLog)).To(Succeed())
	failed = false
}, NodeTimeout(5*time.Minute))

var _ = ReportAfterEach(func(report SpecReport) {
	if report.Failed() {
		failed = true
	}
})

// AfterSuite runs even when specs fail or the run is interrupted (Ctrl-C, Ginkgo's timeout).
var _ = AfterSuite(func() {
	if cluster == nil {
		return
	}
	if failed {
		opts.DumpLogs(GinkgoWriter, 80)
	}
	Expect(cluster.Down()).To(Succeed())
	Expect(opts.Running()).To(BeEmpty(), "processes of the cluster still run after stop")
})

// e2eInstance is this process's test bed: ACKO_E2E_INSTANCE (0 unless set) plus the Ginkgo parallel
// process's index, so that `ginkgo -p` runs one control plane per process, and the real tier (another
// instance) runs beside the simulated suite.
func e2eInstance() int {
	base := 0
	if v := os.Getenv(envE2EInstance); v != "" {
		var err error
		base, err = strconv.Atoi(v)
		Expect(err).NotTo(HaveOccurred(), envE2EInstance)
	}
	instance := base + GinkgoParallelProcess() - 1
	Expect(instance).To(BeNumerically("<", localcluster.E2EInstances),
		"%s=%d with %d parallel processes: the test beds are 0 to %d", envE2EInstance, base,
		GinkgoT().ParallelTotal(), localcluster.E2EInstances-1)
	return instance
}

// envE2EInstance chooses the first test bed of the run (make test-real takes one the simulated suite
// does not use).
const envE2EInstance = "ACKO_E2E_INSTANCE"

// lockSuite waits until no other e2e run (or `make bench-scale`) on this machine uses the e2e
// ports; the lock goes with this process.
func lockSuite() {
	Expect(os.MkdirAll(filepath.Dir(opts.Dir), 0o755)).To(Succeed())
	var err error
	suiteLock, err = localcluster.LockE2E(e2eInstance(), func(path string) {
		GinkgoWriter.Println("waiting for another e2e run to finish (lock " + path + ")")
	})
	Expect(err).NotTo(HaveOccurred())
}
