#!/usr/bin/env bash
# HTTP benchmark: wrk POSTs 10 JSON records (~100 B each) per request to
# ferry and to a no-op chi handler, in the same run, and prints requests/s,
# records/s, latency percentiles and the ratio ferry/no-op. Then durable
# produce (fsync before acknowledgement, group commit) against plain produce
# at 32 connections, and produce with HTTP Basic to a node with --security
# (ACLs on, the user a super user) against the same without credentials.
# Loopback only; every run is bounded by DURATION. To see where ferry's
# time goes while wrk drives it, build it with -tags pprof and set
# FERRY_PPROF_ADDR (cmd/ferry/pprof.go); BenchmarkProduceHandler (api/) is
# the same path in process, with its allocations.
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${DURATION:-10s}
CONNS=${CONNS:-32}
ROUNDS=${ROUNDS:-3}
work=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT

./scripts/install-test-deps.sh
go build -o "$work/ferry" ./cmd/ferry
go build -o "$work/noop" ./test/bench/noop

port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_ready() { for _ in $(seq 200); do curl -fs "$1/healthz" >/dev/null 2>&1 && return 0; sleep 0.05; done; echo "not ready: $1" >&2; exit 1; }

NOOP_PORT=$(port); FERRY_PORT=$(port); KAFKA_PORT=$(port)
"$work/noop" --addr "127.0.0.1:$NOOP_PORT" 2>"$work/noop.log" & pids+=($!)
"$work/ferry" serve --data-dir "$work/data" --http-addr "127.0.0.1:$FERRY_PORT" \
  --kafka-addr "127.0.0.1:$KAFKA_PORT" --log-level warn 2>"$work/ferry.log" & pids+=($!)
SECURE_PORT=$(port); SECURE_KAFKA=$(port)
printf 'bench-Pw-0\n' | "$work/ferry" users create bench --mechanism SCRAM-SHA-512 --data-dir "$work/secure" >/dev/null
"$work/ferry" serve --data-dir "$work/secure" --http-addr "127.0.0.1:$SECURE_PORT" --security --super-users User:bench \
  --kafka-addr "127.0.0.1:$SECURE_KAFKA" --log-level warn 2>"$work/secure.log" & pids+=($!)
BASIC="Basic $(printf 'bench:bench-Pw-0' | base64)"
wait_ready "http://127.0.0.1:$NOOP_PORT"; wait_ready "http://127.0.0.1:$FERRY_PORT"; wait_ready "http://127.0.0.1:$SECURE_PORT"
curl -fs -X POST -H 'Content-Type: application/json' -H "Authorization: $BASIC" "http://127.0.0.1:$SECURE_PORT/topics" \
  -d '{"name":"topic1","partitions":1}' >/dev/null
curl -fs -X POST -H 'Content-Type: application/json' "http://127.0.0.1:$FERRY_PORT/topics" \
  -d '{"name":"topic1","partitions":1}' >/dev/null
curl -fs -X POST -H 'Content-Type: application/json' "http://127.0.0.1:$FERRY_PORT/topics" \
  -d '{"name":"durable1","partitions":1,"configs":{"flush.messages":"1"}}' >/dev/null

# run LABEL URL TOPIC: one wrk run; prints "LABEL req/s p50 p99".
run() {
  local out
  out=$(TOPIC=$3 AUTH=${4:-} wrk -t1 -c"$CONNS" -d"$DURATION" -s test/bench/produce10.lua "$2" | grep '^RESULT')
  python3 - "$1" "$out" <<'PY'
import sys
label, line = sys.argv[1], sys.argv[2]
kv = dict(p.split("=") for p in line.split()[1:])
rps = int(kv["requests"]) / (int(kv["duration_us"]) / 1e6)
print(f"{label} {rps:.0f} {int(kv['p50_us'])/1000:.2f} {int(kv['p99_us'])/1000:.2f} {kv['errors']} {kv['body_bytes']}")
PY
}

results="$work/results"
for round in $(seq "$ROUNDS"); do
  run noop    "http://127.0.0.1:$NOOP_PORT"  topic1   >>"$results"
  run ferry   "http://127.0.0.1:$FERRY_PORT" topic1   >>"$results"
  run durable "http://127.0.0.1:$FERRY_PORT" durable1 >>"$results"
  run basic   "http://127.0.0.1:$SECURE_PORT" topic1 "$BASIC" >>"$results"
  # Each round's ratio as it ends: the machine is shared, so the spread
  # of the rounds says how far to trust the median.
  tail -n 4 "$results" | awk -v r="$round" '{rps[$1]=$2} END {printf "round %d: ferry/no-op %.2f (%d / %d req/s)\n", r, rps["ferry"]/rps["noop"], rps["ferry"], rps["noop"]}'
done

python3 - "$results" "$CONNS" "$DURATION" "$ROUNDS" <<'PY'
import sys, statistics
rows = [l.split() for l in open(sys.argv[1])]
med = lambda label, i: statistics.median(float(r[i]) for r in rows if r[0] == label)
errs = lambda label: sum(int(r[4]) for r in rows if r[0] == label)
print(f"\nHTTP produce: 10 JSON records/request, {sys.argv[2]} connections, {sys.argv[3]} x {sys.argv[4]} rounds (medians)")
print(f"{'target':<34}{'req/s':>10}{'records/s':>12}{'MB/s':>8}{'p50 ms':>9}{'p99 ms':>9}{'errors':>8}")
for label, name in [("noop", "no-op chi handler"), ("ferry", "ferry POST /kafka/topic1"), ("durable", "ferry, fsync before ack"),
                    ("basic", "ferry --security, HTTP Basic")]:
    rps = med(label, 1)
    body = float([r for r in rows if r[0] == label][0][5])
    print(f"{name:<34}{rps:>10.0f}{rps*10:>12.0f}{rps*body/1e6:>8.1f}{med(label,2):>9.2f}{med(label,3):>9.2f}{errs(label):>8}")
print(f"\nferry / no-op requests/s:   {med('ferry',1)/med('noop',1):.2f}  (target >= 0.60)")
print(f"durable / plain requests/s: {med('durable',1)/med('ferry',1):.2f}  (durable {med('durable',1):.0f} req/s, target >= 10000)")
print(f"Basic + ACLs / plain:       {med('basic',1)/med('ferry',1):.2f}  (target >= 0.90)")
PY
