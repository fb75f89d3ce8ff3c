package v1alpha1

import (
	"os"
	"path/filepath"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/yaml"

	"github.com/acko-io/acko/test/testenv"
)

// ValidatingWebhooks (used in self-signed mode) must describe the webhooks as `make manifests` generates
// it from the markers (used in a cluster), so both modes check the same requests.
func TestValidatingWebhookMatchesGeneratedManifest(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "config", "webhook", "manifests.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var generated admissionregistrationv1.ValidatingWebhookConfiguration
	if err := yaml.UnmarshalStrict(data, &generated); err != nil {
		t.Fatal(err)
	}
	want := ValidatingWebhooks()
	if !apiequality.Semantic.DeepEqual(generated.Webhooks, want) {
		t.Errorf("config/webhook/manifests.yaml and ValidatingWebhooks() differ:\n%+v\n%+v", generated.Webhooks, want)
	}
}
