#!/usr/bin/env bash
# `make test`: the unit and envtest suites. The cluster reconciler's envtest suite is the long pole (mostly waiting on
# its API server), so it runs as three processes side by side, split by Ginkgo label, next to every other
# package: on 2 cores that is about half the time of one after the other. Each process starts its own API server.
set -uo pipefail
args=(-timeout 35m -cover)
controller=github.com/acko-io/acko/internal/controller/cluster
others=$(go list ./... | grep -v -e /test/e2e -e "^$controller\$")

pids=()
go test "${args[@]}" $others & pids+=($!)
# The plain tests run in the last process only (the model's random sequences, TestModel*, take a while).
for filter in crash-warm crash-pod; do
  go test "${args[@]}" "$controller" -skip '^Test[^C]' -args -ginkgo.label-filter="$filter" & pids+=($!)
done
go test "${args[@]}" "$controller" -args -ginkgo.label-filter='!crash-warm && !crash-pod' & pids+=($!)
status=0
for pid in "${pids[@]}"; do
  wait "$pid" || status=1
done
exit $status
