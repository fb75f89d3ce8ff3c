#!/usr/bin/env bash
# Copies what `make manifests` generates (and the monitoring files) into charts/acko, where Helm can
# read them: the chart's CRD, RBAC rules, webhook rules, alerts and dashboard are these very files,
# so the chart cannot drift from them (test/chart checks it too).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
chart="$root/charts/acko"
mkdir -p "$chart/crds" "$chart/files/rbac"
# Helm's fromYaml reads one document: drop controller-gen's leading separator.
copy() { sed '1{/^---$/d}' "$1" > "$2"; }
for crd in "$root"/config/crd/bases/*.yaml; do copy "$crd" "$chart/crds/$(basename "$crd")"; done
copy "$root/config/rbac/role.yaml" "$chart/files/rbac/manager-role.yaml"
copy "$root/config/rbac/leader_election_role.yaml" "$chart/files/rbac/leader-election-role.yaml"
copy "$root/config/rbac/metrics_auth_role.yaml" "$chart/files/rbac/metrics-auth-role.yaml"
copy "$root/config/rbac/metrics_reader_role.yaml" "$chart/files/rbac/metrics-reader-role.yaml"
copy "$root/config/rbac/cluster_reader_role.yaml" "$chart/files/rbac/cluster-reader-role.yaml"
for kind in admin editor viewer; do
  copy "$root/config/rbac/aerospikecluster_${kind}_role.yaml" "$chart/files/rbac/aerospikecluster-$kind-role.yaml"
done
copy "$root/config/webhook-certs/configuration_role.yaml" "$chart/files/rbac/webhook-certs-configuration-role.yaml"
copy "$root/config/webhook-certs/secret_role.yaml" "$chart/files/rbac/webhook-certs-secret-role.yaml"
copy "$root/config/webhook/manifests.yaml" "$chart/files/webhook.yaml"
copy "$root/config/prometheus/alerts.yaml" "$chart/files/alerts.yaml"
copy "$root/config/grafana/acko-dashboard.json" "$chart/files/dashboard.json"
