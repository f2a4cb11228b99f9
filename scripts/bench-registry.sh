#!/usr/bin/env bash
# Schema registry benchmark on a cluster: a real ZooKeeper and three
# `ferry serve` brokers (BenchmarkSchemaLookupOnFollower in test/cluster),
# 100 schemas registered through the three nodes, then wrk (one thread, 32
# connections, DURATION per run) on GET /schemas/ids/{id} against a broker
# that does not lead _schemas, against the _schemas leader and against the
# same route of a no-op chi handler, ROUNDS rounds in one run. Prints each
# run and the medians. Target: follower >= 20,000 requests/s on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${DURATION:-10s}
ROUNDS=${ROUNDS:-3}
scripts/install-test-deps.sh
mkdir -p bin && go build -o bin/ferry ./cmd/ferry
out=$(mktemp)
trap 'rm -f "$out"' EXIT
status=0
BENCH_DURATION="$DURATION" go test -run '^$' -bench BenchmarkSchemaLookupOnFollower -benchtime "${ROUNDS}x" -v \
  ./test/cluster/ >"$out" 2>&1 || status=$?
grep -E 'registry_bench_test.go|^BenchmarkSchemaLookupOnFollower' "$out" || cat "$out"
python3 - "$out" "$DURATION" "$ROUNDS" <<'PY'
import re, sys
path, duration, rounds = sys.argv[1:]
for line in open(path):
    m = re.match(r"BenchmarkSchemaLookupOnFollower(-\d+)?\s+\d+\s+\d+ ns/op\s+(.*)", line)
    if not m:
        continue
    f = m.group(2).split()
    r = {unit: float(v) for v, unit in zip(f[::2], f[1::2])}
    print(f"\nGET /schemas/ids/{{id}} over 100 ids, wrk -t1 -c32, {duration} x {rounds} rounds (medians)")
    for label in ["noop", "follower", "leader"]:
        print(f"{label:10s} {r[label + '_req/s']:>10.0f} req/s")
    print(f"follower p99 {r['follower_p99_ms']:.2f} ms; follower / no-op {r['follower/noop']:.2f}  (target: follower >= 20000 req/s)")
PY
exit "$status"
