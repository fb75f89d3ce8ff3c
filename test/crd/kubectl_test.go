package crd

import (
	"os"
	"os/exec"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/acko-io/acko/test/testcluster"
	"github.com/acko-io/acko/test/testenv"
)

// The kubectl built from the same Kubernetes release as the API server, run against it.
var _ = Describe("kubectl", func() {
	var kubeconfig string

	BeforeEach(func() {
		user, err := env.AddUser(envtestAdmin(), nil)
		Expect(err).NotTo(HaveOccurred())
		data, err := user.KubeConfig()
		Expect(err).NotTo(HaveOccurred())
		kubeconfig = filepath.Join(GinkgoT().TempDir(), "kubeconfig")
		Expect(os.WriteFile(kubeconfig, data, 0o600)).To(Succeed())
	})

	kubectl := func(args ...string) string {
		dir, err := testenv.AssetsDir()
		Expect(err).NotTo(HaveOccurred())
		cmd := exec.Command(filepath.Join(dir, "kubectl"), append([]string{"--kubeconfig", kubeconfig}, args...)...)
		out, err := cmd.CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), string(out))
		return string(out)
	}

	It("reports the version it was built at", func() {
		Expect(kubectl("version")).To(And(
			ContainSubstring("Client Version: "+testenv.K8sVersion),
			ContainSubstring("Server Version: "+testenv.K8sVersion)))
	})

	It("applies the CRD with a plain apply (it fits the last-applied annotation)", func() {
		Expect(kubectl("apply", "-f", filepath.Join(testenv.RepoRoot(), "config", "crd", "bases"))).
			To(ContainSubstring("customresourcedefinition.apiextensions.k8s.io/aerospikeclusters.acko.io"))
	})

	It("server-side dry-runs every sample", func() {
		samples, err := testcluster.Samples()
		Expect(err).NotTo(HaveOccurred())
		for _, s := range samples {
			Expect(kubectl("apply", "--dry-run=server", "-n", "default", "-f", s.Path)).To(ContainSubstring("(server dry run)"))
		}
	})
})

func envtestAdmin() envtest.User {
	return envtest.User{Name: "kubectl-admin", Groups: []string{"system:masters"}}
}
