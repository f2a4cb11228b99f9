#!/usr/bin/env bash
# Schema registry benchmarks.
#
# 1. On PostgreSQL (BenchmarkRegistryPostgres in test/regbench): one
#    `ferry serve --schema-store postgres://…` on a throwaway PostgreSQL with
#    its default durability (fsync, synchronous_commit on), and for every
#    type GET /schemas/types lists: registrations/s by 8 concurrent HTTP
#    writers, new subjects and new versions (each writer its own subject),
#    then GET /schemas/ids/{id} with wrk over that type's ids. ROUNDS rounds,
#    medians. Targets (issue 27): >= 1,000 new subjects/s, >= 500 new
#    versions/s, >= 20,000 lookups/s. Each round also measures PostgreSQL
#    alone (single-row commits from 8 connections): on a shared machine
#    the absolute figures swing with the other load, the ratio less.
# 2. On a cluster (BenchmarkSchemaLookupOnFollower in test/cluster): a real
#    ZooKeeper and three brokers, 100 schemas, then wrk (one thread, 32
#    connections, DURATION per run) on GET /schemas/ids/{id} against a broker
#    that does not lead _schemas, against the _schemas leader and against
#    the same route of a no-op chi handler. Target: follower >= 20,000
#    requests/s on 2 cores. CLUSTER=0 skips it.
#
# REGISTRATIONS (per writer per measurement, default 200) and
# LOOKUP_DURATION (default 5s) shape the PostgreSQL run.
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${DURATION:-10s}
ROUNDS=${ROUNDS:-3}
CLUSTER=${CLUSTER:-1}
scripts/install-test-deps.sh
mkdir -p bin && go build -o bin/ferry ./cmd/ferry
out=$(mktemp)
trap 'rm -f "$out"' EXIT
status=0

BENCH_REGISTRATIONS="${REGISTRATIONS:-200}" BENCH_LOOKUP_DURATION="${LOOKUP_DURATION:-5s}" \
  go test -run '^$' -bench BenchmarkRegistryPostgres -benchtime "${ROUNDS}x" -timeout 30m -v \
  ./test/regbench/ >"$out" 2>&1 || status=$?
grep -E '^\s+postgres_bench_test.go|^BenchmarkRegistryPostgres|^(FAIL|ok|---)' "$out" || cat "$out"
python3 - "$out" "$ROUNDS" <<'PY'
import re, sys
path, rounds = sys.argv[1:]
for line in open(path):
    m = re.match(r"BenchmarkRegistryPostgres(-\d+)?\s+\d+\s+\d+ ns/op\s+(.*)", line)
    if not m:
        continue
    f = m.group(2).split()
    r = {unit: float(v) for v, unit in zip(f[::2], f[1::2])}
    types = sorted(k[:-len("_new_subjects/s")] for k in r if k.endswith("_new_subjects/s"))
    print(f"\nPostgreSQL store (durable), 8 HTTP writers; wrk -t1 -c32 for lookups; medians of {rounds} rounds")
    print(f"{'type':10s} {'new subjects/s':>15s} {'new versions/s':>15s} {'lookups by id/s':>16s}")
    for t in types:
        print(f"{t:10s} {r[t+'_new_subjects/s']:>15.0f} {r[t+'_new_versions/s']:>15.0f} {r[t+'_lookups/s']:>16.0f}")
    print("targets:   >= 1000          >= 500           >= 20000")
    if "pg_commits/s" in r:
        print(f"same run, PostgreSQL alone: {r['pg_commits/s']:.0f} single-row commits/s from 8 connections (each round's figures are in the log above)")
PY
[ "$CLUSTER" = 0 ] && exit "$status"

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
