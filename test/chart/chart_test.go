// Package chart checks the Helm chart charts/acko with the real helm (built into bin/assets by
// `make helm`): lint, goldens of `helm template`, the schema, and that its RBAC rules, CRD, webhook,
// alert rules and dashboard are exactly the generated files in config/.
package chart

import (
	"bytes"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/acko-io/acko/test/testenv"
)

var update = flag.Bool("update", false, "rewrite the goldens in testdata/")

const release, namespace = "acko", "acko-system"

func repoPath(elem ...string) string {
	return filepath.Join(append([]string{testenv.RepoRoot()}, elem...)...)
}

func helm(t *testing.T, args ...string) (string, error) {
	t.Helper()
	bin := filepath.Join(testenv.RepoRoot(), "bin", "assets", "k8s-"+testenv.K8sVersion, "helm")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("no helm at %s: run `make helm`", bin)
	}
	cmd := exec.Command(bin, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if err != nil {
		err = &helmError{err: err, stderr: stderr.String()}
	}
	return stdout.String(), err
}

type helmError struct {
	err    error
	stderr string
}

func (e *helmError) Error() string { return e.err.Error() + ": " + e.stderr }

// render runs helm template with the values files (none: the defaults).
func render(t *testing.T, values ...string) string {
	t.Helper()
	args := []string{"template", release, repoPath("charts", "acko"), "-n", namespace}
	for _, v := range values {
		args = append(args, "-f", v)
	}
	out, err := helm(t, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

type object struct {
	Kind     string `json:"kind"`
	Metadata struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
	} `json:"metadata"`
	Rules []map[string]any `json:"rules"`
}

func objects(t *testing.T, manifest string) []object {
	t.Helper()
	var out []object
	for _, doc := range strings.Split(manifest, "\n---") {
		var o object
		if err := yaml.Unmarshal([]byte(doc), &o); err != nil {
			t.Fatalf("%v in\n%s", err, doc)
		}
		if o.Kind != "" {
			out = append(out, o)
		}
	}
	return out
}

func TestLint(t *testing.T) {
	for _, values := range [][]string{nil, {"testdata/namespaced-values.yaml"}} {
		args := []string{"lint", "--strict", repoPath("charts", "acko")}
		for _, v := range values {
			args = append(args, "-f", v)
		}
		if out, err := helm(t, args...); err != nil {
			t.Errorf("helm lint %v: %v\n%s", values, err, out)
		}
	}
}

func TestTemplateGoldens(t *testing.T) {
	for golden, values := range map[string][]string{
		"default.golden.yaml":    nil,
		"namespaced.golden.yaml": {"testdata/namespaced-values.yaml"},
	} {
		got := render(t, values...)
		path := filepath.Join("testdata", golden)
		if *update {
			if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if got != string(want) {
			t.Errorf("helm template differs from %s (go test ./test/chart -update rewrites it)", path)
		}
	}
}

func TestSchemaRejectsBadValues(t *testing.T) {
	for _, set := range []string{"replicaCount=two", "webhook.certificate=vault", "watchNamespaces[0]=Bad_NS",
		"leaderElection.leaseDuration=soon", "unknownValue=1"} {
		_, err := helm(t, "template", release, repoPath("charts", "acko"), "--set", set)
		if err == nil {
			t.Errorf("--set %s accepted", set)
		}
	}
	_, err := helm(t, "template", release, repoPath("charts", "acko"), "--set", "webhook.url=https://127.0.0.1:9443",
		"--set", "webhook.certificate=cert-manager")
	if err == nil || !strings.Contains(err.Error(), "webhook.url needs webhook.certificate=self-signed") {
		t.Errorf("a URL with cert-manager: %v", err)
	}
}

// rulesOf reads the rules of a role file in config/.
func rulesOf(t *testing.T, path ...string) []map[string]any {
	t.Helper()
	b, err := os.ReadFile(repoPath(path...))
	if err != nil {
		t.Fatal(err)
	}
	var o object
	if err := yaml.Unmarshal(bytes.TrimPrefix(b, []byte("---\n")), &o); err != nil {
		t.Fatal(err)
	}
	return o.Rules
}

// generated maps the chart's role names (prefix acko-) to the files `make manifests` generates or
// keeps in config/.
var generated = map[string][]string{
	"ClusterRole/acko-manager-role":                 {"config", "rbac", "role.yaml"},
	"Role/acko-manager-role":                        {"config", "rbac", "role.yaml"},
	"Role/acko-leader-election-role":                {"config", "rbac", "leader_election_role.yaml"},
	"ClusterRole/acko-metrics-auth-role":            {"config", "rbac", "metrics_auth_role.yaml"},
	"ClusterRole/acko-metrics-reader":               {"config", "rbac", "metrics_reader_role.yaml"},
	"ClusterRole/acko-cluster-reader":               {"config", "rbac", "cluster_reader_role.yaml"},
	"ClusterRole/acko-webhook-certs-role":           {"config", "webhook-certs", "configuration_role.yaml"},
	"Role/acko-webhook-certs-role":                  {"config", "webhook-certs", "secret_role.yaml"},
	"ClusterRole/acko-aerospikecluster-admin-role":  {"config", "rbac", "aerospikecluster_admin_role.yaml"},
	"ClusterRole/acko-aerospikecluster-editor-role": {"config", "rbac", "aerospikecluster_editor_role.yaml"},
	"ClusterRole/acko-aerospikecluster-viewer-role": {"config", "rbac", "aerospikecluster_viewer_role.yaml"},
}

// roles lists "Kind/name[@namespace]" of every role the manifest holds, checking each one's rules
// against its generated file.
func roles(t *testing.T, manifest string) []string {
	t.Helper()
	var out []string
	for _, o := range objects(t, manifest) {
		if o.Kind != "Role" && o.Kind != "ClusterRole" {
			continue
		}
		key := o.Kind + "/" + o.Metadata.Name
		file, ok := generated[key]
		if !ok {
			t.Errorf("%s is not one of the generated roles", key)
			continue
		}
		if want := rulesOf(t, file...); !reflect.DeepEqual(o.Rules, want) {
			t.Errorf("%s in %q: rules differ from %s:\n got %v\nwant %v", key, o.Metadata.Namespace,
				filepath.Join(file...), o.Rules, want)
		}
		if o.Metadata.Namespace != "" {
			key += "@" + o.Metadata.Namespace
		}
		out = append(out, key)
	}
	sort.Strings(out)
	return out
}

func sorted(s []string) []string {
	sort.Strings(s)
	return s
}

func TestRBACIsTheGeneratedRBAC(t *testing.T) {
	users := []string{"ClusterRole/acko-aerospikecluster-admin-role", "ClusterRole/acko-aerospikecluster-editor-role",
		"ClusterRole/acko-aerospikecluster-viewer-role"}
	t.Run("cluster-wide, self-signed webhook", func(t *testing.T) {
		got := roles(t, render(t))
		want := append([]string{"ClusterRole/acko-manager-role", "Role/acko-leader-election-role@acko-system",
			"ClusterRole/acko-metrics-auth-role", "ClusterRole/acko-metrics-reader",
			"ClusterRole/acko-webhook-certs-role", "Role/acko-webhook-certs-role@acko-system"}, users...)
		if !reflect.DeepEqual(got, sorted(want)) {
			t.Errorf("roles\n got %v\nwant %v", got, want)
		}
	})
	t.Run("namespace-scoped: a Role per watched namespace, no manager ClusterRole", func(t *testing.T) {
		got := roles(t, render(t, "testdata/namespaced-values.yaml"))
		want := append([]string{"Role/acko-manager-role@team-a", "Role/acko-manager-role@team-b", "ClusterRole/acko-cluster-reader",
			"Role/acko-leader-election-role@acko-system", "ClusterRole/acko-metrics-auth-role",
			"ClusterRole/acko-metrics-reader", "ClusterRole/acko-webhook-certs-role",
			"Role/acko-webhook-certs-role@acko-system"}, users...)
		if !reflect.DeepEqual(got, sorted(want)) {
			t.Errorf("roles\n got %v\nwant %v", got, want)
		}
	})
	t.Run("cert-manager: no webhook configuration or Secret rights", func(t *testing.T) {
		values := filepath.Join(t.TempDir(), "values.yaml")
		if err := os.WriteFile(values, []byte("webhook:\n  certificate: cert-manager\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		manifest := render(t, values)
		for _, r := range roles(t, manifest) {
			if strings.Contains(r, "webhook-certs") {
				t.Errorf("%s rendered with cert-manager", r)
			}
		}
		if strings.Contains(manifest, "- secrets") {
			t.Error("a rule on secrets rendered with cert-manager")
		}
	})
}

// The chart's copies (made by `make manifests`) are the generated files themselves.
func TestChartFilesAreTheGeneratedFiles(t *testing.T) {
	for chartFile, source := range map[string]string{
		"crds/acko.io_aerospikeclusters.yaml": "config/crd/bases/acko.io_aerospikeclusters.yaml",
		"crds/acko.io_aerospikebackups.yaml":  "config/crd/bases/acko.io_aerospikebackups.yaml",
		"crds/acko.io_aerospikerestores.yaml": "config/crd/bases/acko.io_aerospikerestores.yaml",
		"files/webhook.yaml":                  "config/webhook/manifests.yaml",
		"files/alerts.yaml":                   "config/prometheus/alerts.yaml",
		"files/dashboard.json":                "config/grafana/acko-dashboard.json",
		"files/rbac/manager-role.yaml":        "config/rbac/role.yaml",
	} {
		got, err := os.ReadFile(repoPath("charts", "acko", chartFile))
		if err != nil {
			t.Fatal(err)
		}
		want, err := os.ReadFile(repoPath(source))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, bytes.TrimPrefix(want, []byte("---\n"))) {
			t.Errorf("charts/acko/%s differs from %s: run make manifests", chartFile, source)
		}
	}
}

func TestDeploymentRunsRestrictedWithLeaderElection(t *testing.T) {
	manifest := render(t)
	var dep struct {
		Spec struct {
			Replicas int `json:"replicas"`
			Template struct {
				Spec struct {
					SecurityContext map[string]any `json:"securityContext"`
					Containers      []struct {
						Args            []string       `json:"args"`
						SecurityContext map[string]any `json:"securityContext"`
						LivenessProbe   map[string]any `json:"livenessProbe"`
						ReadinessProbe  map[string]any `json:"readinessProbe"`
						Resources       map[string]any `json:"resources"`
					} `json:"containers"`
				} `json:"spec"`
			} `json:"template"`
		} `json:"spec"`
	}
	for _, doc := range strings.Split(manifest, "\n---") {
		if strings.Contains(doc, "\nkind: Deployment\n") {
			if err := yaml.Unmarshal([]byte(doc), &dep); err != nil {
				t.Fatal(err)
			}
		}
	}
	pod := dep.Spec.Template.Spec
	if dep.Spec.Replicas != 2 || len(pod.Containers) != 1 {
		t.Fatalf("replicas %d, containers %d", dep.Spec.Replicas, len(pod.Containers))
	}
	c := pod.Containers[0]
	args := strings.Join(c.Args, " ")
	for _, want := range []string{"--leader-elect ", "--webhook-self-signed-service=acko-webhook-service",
		"--webhook-cert-secret=acko-webhook-server-cert"} {
		if !strings.Contains(args+" ", want) {
			t.Errorf("args %q lack %q", args, want)
		}
	}
	if pod.SecurityContext["runAsNonRoot"] != true || c.SecurityContext["allowPrivilegeEscalation"] != false ||
		c.SecurityContext["readOnlyRootFilesystem"] != true || c.LivenessProbe == nil || c.ReadinessProbe == nil ||
		c.Resources["requests"] == nil {
		t.Errorf("not restricted, or no probes or resources: %v %v", pod.SecurityContext, c.SecurityContext)
	}
	if !reflect.DeepEqual(c.SecurityContext["capabilities"], map[string]any{"drop": []any{"ALL"}}) {
		t.Errorf("capabilities: %v", c.SecurityContext["capabilities"])
	}
}

// Two releases, each in its own namespace with its own fullnameOverride and watching its own
// namespaces, can run side by side (the way to split clusters across managers): no cluster-scoped
// object but the CRD is in both, each webhook admits only its release's namespaces, and each manager
// watches only them.
func TestTwoReleasesSplitTheNamespaces(t *testing.T) {
	releases := []struct{ name, watch, other string }{{"acko-a", "team-a,team-b", "team-c"}, {"acko-b", "team-c", "team-a"}}
	clusterScoped := map[string]string{}
	for _, r := range releases {
		manifest, err := helm(t, "template", r.name, repoPath("charts", "acko"), "-n", r.name,
			"--set", "fullnameOverride="+r.name, "--set", "watchNamespaces={"+r.watch+"}")
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range objects(t, manifest) {
			if o.Metadata.Namespace != "" || o.Kind == "CustomResourceDefinition" {
				continue
			}
			key := o.Kind + "/" + o.Metadata.Name
			if other, taken := clusterScoped[key]; taken {
				t.Errorf("%s is in both %s and %s", key, other, r.name)
			}
			clusterScoped[key] = r.name
		}
		if !strings.Contains(manifest, "--watch-namespaces="+r.watch+"\n") {
			t.Errorf("%s: the manager does not watch %s", r.name, r.watch)
		}
		for _, doc := range strings.Split(manifest, "\n---") {
			if !strings.Contains(doc, "\nkind: ValidatingWebhookConfiguration\n") {
				continue
			}
			for _, ns := range strings.Split(r.watch, ",") {
				if !strings.Contains(doc, "- "+ns+"\n") {
					t.Errorf("%s: the webhook does not admit %s", r.name, ns)
				}
			}
			if strings.Contains(doc, "- "+r.other+"\n") {
				t.Errorf("%s: the webhook admits %s, another release's", r.name, r.other)
			}
		}
	}
}

// The operator's ServiceMonitor takes its labels and scrape settings from the values, so a default
// kube-prometheus-stack finds it: its Prometheus selects ServiceMonitors by matchLabels release: <its
// Helm release name> (prometheus.prometheusSpec.serviceMonitorSelectorNilUsesHelmValues: true in its
// values.yaml).
func TestServiceMonitorFoundByKubePrometheusStack(t *testing.T) {
	values := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(values, []byte(`metrics:
  serviceMonitor:
    enabled: true
    interval: 15s
    scrapeTimeout: 10s
    labels:
      release: kube-prometheus-stack
    relabelings:
      - sourceLabels: [__meta_kubernetes_pod_node_name]
        targetLabel: node
    metricRelabelings:
      - sourceLabels: [__name__]
        regex: go_gc_.*
        action: drop
`), 0o600); err != nil {
		t.Fatal(err)
	}
	var monitor map[string]any
	for _, doc := range strings.Split(render(t, values), "\n---") {
		var o map[string]any
		if err := yaml.Unmarshal([]byte(doc), &o); err != nil {
			t.Fatal(err)
		}
		if o["kind"] == "ServiceMonitor" {
			monitor = o
		}
	}
	if monitor == nil {
		t.Fatal("no ServiceMonitor rendered")
	}
	meta, _ := monitor["metadata"].(map[string]any)
	labels, _ := meta["labels"].(map[string]any)
	if labels["release"] != "kube-prometheus-stack" {
		t.Errorf("ServiceMonitor labels %v: a default kube-prometheus-stack selects release=kube-prometheus-stack", labels)
	}
	spec, _ := monitor["spec"].(map[string]any)
	endpoints, _ := spec["endpoints"].([]any)
	if len(endpoints) != 1 {
		t.Fatalf("endpoints %v", endpoints)
	}
	ep, _ := endpoints[0].(map[string]any)
	if ep["interval"] != "15s" || ep["scrapeTimeout"] != "10s" || len(asSlice(ep["relabelings"])) != 1 ||
		len(asSlice(ep["metricRelabelings"])) != 1 {
		t.Errorf("endpoint %v", ep)
	}
}

func asSlice(v any) []any {
	s, _ := v.([]any)
	return s
}
