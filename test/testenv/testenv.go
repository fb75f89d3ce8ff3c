// Package testenv starts a real kube-apiserver and etcd (controller-runtime envtest) with ACKO's CRDs,
// using the binaries hack/build-assets.sh builds from source.
package testenv

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
)

// K8sVersion is the Kubernetes version the assets are built at (hack/build-assets.sh).
const K8sVersion = "v1.37.2"

// RepoRoot is the repository's top folder.
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// AssetsDir is KUBEBUILDER_ASSETS when set, else the folder hack/build-assets.sh fills.
func AssetsDir() (string, error) {
	if dir := os.Getenv("KUBEBUILDER_ASSETS"); dir != "" {
		return dir, nil
	}
	dir := filepath.Join(RepoRoot(), "bin", "assets", "k8s-"+K8sVersion)
	if _, err := os.Stat(filepath.Join(dir, "kube-apiserver")); err != nil {
		return "", fmt.Errorf("no kube-apiserver in %s: run `make envtest-assets` or set KUBEBUILDER_ASSETS", dir)
	}
	return dir, nil
}

// New returns an envtest environment that installs ACKO's CRDs.
func New() (*envtest.Environment, error) {
	dir, err := AssetsDir()
	if err != nil {
		return nil, err
	}
	return &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join(RepoRoot(), "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
		BinaryAssetsDirectory: dir,
		// `make test` starts several API servers at once on 2 cores; envtest's 20 s default is too short then.
		ControlPlaneStartTimeout: 2 * time.Minute,
	}, nil
}

// Start starts a new environment and returns it with its admin rest config.
func Start() (*envtest.Environment, *rest.Config, error) {
	env, err := New()
	if err != nil {
		return nil, nil, err
	}
	cfg, err := env.Start()
	if err != nil {
		return nil, nil, err
	}
	return env, cfg, nil
}

// Scheme is the scheme the suites talk to the API server with: Kubernetes' types, ACKO's, and the
// CustomResourceDefinitions'.
func Scheme() (*k8sruntime.Scheme, error) {
	scheme := k8sruntime.NewScheme()
	for _, add := range []func(*k8sruntime.Scheme) error{clientgoscheme.AddToScheme, ackov1alpha1.AddToScheme,
		apiextensionsv1.AddToScheme} {
		if err := add(scheme); err != nil {
			return nil, err
		}
	}
	return scheme, nil
}

// StartWithClient starts a new environment and returns it with its admin rest config, the suites'
// scheme and a plain client that reads the API server directly.
func StartWithClient() (*envtest.Environment, *rest.Config, *k8sruntime.Scheme, client.Client, error) {
	env, cfg, err := Start()
	if err != nil {
		return nil, nil, nil, nil, err
	}
	scheme, err := Scheme()
	if err != nil {
		return env, cfg, nil, nil, err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	return env, cfg, scheme, c, err
}
