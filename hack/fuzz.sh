#!/usr/bin/env bash
# Runs every Go fuzz target of the module for a fixed time each (default 10s): `hack/fuzz.sh 30s`.
# go test -fuzz takes one target at a time, so the targets are listed first.
set -euo pipefail
fuzztime=${1:-10s}
cd "$(dirname "$0")/.."
found=0
for pkg in $(go list ./... | grep -v /test/e2e); do
  dir=$(go list -f '{{.Dir}}' "$pkg")
  for target in $(grep -ho '^func Fuzz[A-Za-z0-9_]*' "$dir"/*_test.go 2>/dev/null | sed 's/^func //'); do
    found=$((found + 1))
    echo "fuzz: $pkg $target for $fuzztime"
    go test "$pkg" -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime"
  done
done
echo "fuzz: $found targets passed"
