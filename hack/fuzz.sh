#!/usr/bin/env bash
# Runs every Go fuzz target of the module for a fixed time each (default 10s): `hack/fuzz.sh 30s`.
# go test -fuzz takes one target at a time, so the targets are listed first.
#
# A target that fails without writing a failing input to testdata/fuzz/<target> is run once more: Go
# before 1.27 can fail a duration-bound run with "context deadline exceeded" when -fuzztime ends while a
# worker is busy (a race in its fuzzing coordinator, golang/go#75804), which finds nothing. A failure
# that writes an input fails at once.
set -euo pipefail
fuzztime=${1:-10s}
cd "$(dirname "$0")/.."
found=0
shopt -s nullglob
# count prints how many failing inputs a target's directory holds (none when it does not exist).
count() { local files=("$1"/*); echo "${#files[@]}"; }
for pkg in $(go list ./... | grep -v /test/e2e); do
  dir=$(go list -f '{{.Dir}}' "$pkg")
  for target in $(grep -ho '^func Fuzz[A-Za-z0-9_]*' "$dir"/*_test.go 2>/dev/null | sed 's/^func //'); do
    found=$((found + 1))
    echo "fuzz: $pkg $target for $fuzztime"
    inputs="$dir/testdata/fuzz/$target"
    before=$(count "$inputs")
    if ! go test "$pkg" -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime"; then
      if [ "$(count "$inputs")" != "$before" ]; then
        exit 1
      fi
      echo "fuzz: $target failed without a failing input (the Go coordinator's deadline race): once more"
      go test "$pkg" -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime"
    fi
  done
done
echo "fuzz: $found targets passed"
