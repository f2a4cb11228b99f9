#!/usr/bin/env bash
# Runs every Go fuzz target for FUZZTIME each (default 20s), one at a time,
# so the total is bounded: targets × FUZZTIME. New failing inputs land in
# the package's testdata/fuzz/ and then run on every `go test`.
set -euo pipefail
cd "$(dirname "$0")/.."
FUZZTIME=${FUZZTIME:-20s}
status=0
while IFS=: read -r file name; do
  pkg="./$(dirname "$file")"
  echo "== $pkg $name ($FUZZTIME)"
  if ! go test -run '^$' -fuzz "^${name}\$" -fuzztime "$FUZZTIME" "$pkg"; then
    status=1
  fi
done < <(git grep -E '^func Fuzz[A-Za-z0-9_]+' -- '*_test.go' | sed -E 's/^([^:]+):func (Fuzz[A-Za-z0-9_]+).*/\1:\2/')
exit $status
