#!/usr/bin/env bash
# `make test`: the unit and envtest suites. The cluster reconciler's package is the long pole: its envtest suite
# (mostly waiting on its API server) runs as five processes side by side, split by Ginkgo label, and its plain
# tests (the model's random sequences, TestModel*, take a while on the CPU) as a sixth, next to every other
# package: on 2 cores that is about half the time of one after the other. Each envtest process starts its own
# API server; the plain tests start none. The labels balance the processes (specs' run times: go test ... -args
# -ginkgo.json-report=FILE).
set -uo pipefail
args=(-timeout 35m -cover)
controller=github.com/acko-io/acko/internal/controller/cluster
others=$(go list ./... | grep -v -e /test/e2e -e "^$controller\$")

pids=()
go test "${args[@]}" $others & pids+=($!)
for filter in crash-warm crash-pod crash-volumes way-forward '!crash-warm && !crash-pod && !crash-volumes && !way-forward'; do
  go test "${args[@]}" "$controller" -run 'TestController$' -args -ginkgo.label-filter="$filter" & pids+=($!)
done
go test "${args[@]}" "$controller" -skip 'TestController$' & pids+=($!)
status=0
for pid in "${pids[@]}"; do
  wait "$pid" || status=1
done
exit $status
