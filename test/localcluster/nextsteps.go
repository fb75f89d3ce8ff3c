package localcluster

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
)

// NextSteps is what `up` prints once the cluster is ready.
func (o Options) NextSteps(sample string, detached bool) string {
	rel := func(p string) string {
		if r, err := filepath.Rel(o.Root, p); err == nil {
			return r
		}
		return p
	}
	asc := fmt.Sprintf("kubectl -n %s patch asc %s --type merge -p", SampleNamespace, sample)
	var b strings.Builder
	w := func(format string, args ...any) { _, _ = fmt.Fprintf(&b, format+"\n", args...) }
	w("")
	w("Local cluster ready. In another shell:")
	w("  export KUBECONFIG=%s", o.KubeconfigPath())
	w("  export PATH=%s:$PATH   # kubectl %s", o.assetsDir(), filepath.Base(o.assetsDir()))
	w("")
	w("Try:")
	w("  kubectl get asc -A")
	w("  kubectl -n %s describe asc %s", SampleNamespace, sample)
	w("  %s '{\"spec\":{\"paused\":true}}'", asc)
	w("  %s '{\"spec\":{\"paused\":false}}'", asc)
	w("  %s '{\"spec\":{\"operations\":[{\"kind\":\"WarmRestart\",\"id\":\"warm-1\"}]}}'", asc)
	w("  kubectl -n %s get events --field-selector involvedObject.name=%s,reason=Operation", SampleNamespace, sample)
	w("  curl -s %s/nodes   # the simulated Aerospike nodes", o.AerosimURL())
	w("")
	w("Metrics: %s (authenticated):", o.MetricsURL())
	w("  TOKEN=$(kubectl create token %s -n %s)", PrometheusServiceAccount, ManagerNamespace)
	w("  curl --cacert %s -H \"Authorization: Bearer $TOKEN\" %s", rel(o.CACertPath()), o.MetricsURL())
	if _, err := exec.LookPath(prometheusName); err == nil {
		w("Prometheus: %s/graph?g0.expr=up%%7Bjob%%3D%%22%s%%22%%7D", o.PrometheusURL(), PrometheusJob)
	}
	w("Logs: %s/*.log", rel(o.path("logs")))
	if detached {
		w("Stop with `make stop-local` (state stays; `make wipe-local` deletes it).")
	} else {
		w("Ctrl-C stops everything (or `make stop-local` from another shell); `make wipe-local` deletes the state.")
	}
	return b.String()
}
