#!/usr/bin/env bash
# Runs a command that regenerates files and fails if it changed the working tree. Changes made before the
# command (work in progress) are not counted: the tree's state is compared before and after.
set -euo pipefail
what=$1
shift
state() { { git diff; git ls-files --others --exclude-standard | sort | xargs -r sha256sum; } | sha256sum; }
before=$(state)
"$@"
if [ "$(state)" != "$before" ]; then
  git status --short
  echo "verify: '$what' changed the files above; run it and commit the result" >&2
  exit 1
fi
