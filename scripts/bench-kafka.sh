#!/usr/bin/env bash
# Kafka benchmark: `ferry bench produce` then `ferry bench consume` (one
# franz-go client each; 100-byte records, acks=1, no compression) against a
# real `ferry serve` process and, in the same run, against an in-process
# franz-go kfake cluster (test/bench/kfake, same benchmark code); prints
# records/s, MB/s and produce latency for both, and the ratio ferry/kfake.
# Loopback only; each run is bounded by RECORDS and DURATION.
# E2E_ONLY=1 runs only the end-to-end latency rounds (the throughput runs
# load the machine for minutes and do not change the latency figures).
set -euo pipefail
cd "$(dirname "$0")/.."
RECORDS=${RECORDS:-2000000}
DURATION=${DURATION:-20s}
RECORD_SIZE=${RECORD_SIZE:-100}
PARTITIONS=${PARTITIONS:-4}
ROUNDS=${ROUNDS:-3}
# End-to-end latency: RATE records/s, acks=all, no linger, for E2E_SECONDS.
RATE=${RATE:-10000}
E2E_SECONDS=${E2E_SECONDS:-10}
work=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT

mkdir -p bin
go build -o bin/ferry ./cmd/ferry
go build -o "$work/kfake-bench" ./test/bench/kfake

port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_http() { for _ in $(seq 200); do curl -fs "$1/healthz" >/dev/null 2>&1 && return 0; sleep 0.05; done; return 1; }
wait_tcp() { for _ in $(seq 100); do (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0; sleep 0.05; done; return 1; }

HTTP_PORT=$(port); KAFKA_PORT=$(port)
bin/ferry serve --data-dir "$work/data" --http-addr "127.0.0.1:$HTTP_PORT" \
  --kafka-addr "127.0.0.1:$KAFKA_PORT" --log-level warn 2>"$work/ferry.log" & pids+=($!)
wait_http "http://127.0.0.1:$HTTP_PORT" || { echo "ferry serve not ready:" >&2; cat "$work/ferry.log" >&2; exit 1; }
ferry_ok=1
wait_tcp "$KAFKA_PORT" || { ferry_ok=0; echo "ferry serve does not accept Kafka connections on --kafka-addr; benchmarking kfake only" >&2; }

flags=(--records "$RECORDS" --duration "$DURATION" --record-size "$RECORD_SIZE"
  --partitions "$PARTITIONS" --acks 1 --compression none)
results="$work/results"
E2E_ONLY=${E2E_ONLY:-0}
for round in $(seq "$ROUNDS"); do
  if [ "$ferry_ok" = 1 ] && [ "$E2E_ONLY" != 1 ]; then
    for op in produce consume; do
      bin/ferry bench "$op" --bootstrap "127.0.0.1:$KAFKA_PORT" --topic "bench-$round" "${flags[@]}" \
        | sed -n 's/^RESULT /ferry /p' >>"$results" || { ferry_ok=0; echo "ferry bench $op failed" >&2; }
    done
  fi
  [ "$E2E_ONLY" = 1 ] || "$work/kfake-bench" --topic "bench-$round" "${flags[@]}" | sed -n 's/^RESULT /kfake /p' >>"$results"
  e2e=(--rate "$RATE" --records $((RATE * E2E_SECONDS)) --duration "$((E2E_SECONDS + 20))s" --record-size "$RECORD_SIZE"
    --partitions "$PARTITIONS" --acks all --linger 0 --compression none)
  if [ "$ferry_ok" = 1 ]; then
    bin/ferry bench e2e --bootstrap "127.0.0.1:$KAFKA_PORT" --topic "e2e-$round" "${e2e[@]}" \
      | sed -n 's/^RESULT /ferry /p' >>"$results" || { ferry_ok=0; echo "ferry bench e2e failed" >&2; }
  fi
  "$work/kfake-bench" --ops e2e --topic "e2e-$round" "${e2e[@]}" | sed -n 's/^RESULT /kfake /p' >>"$results"
  # ferry writes slower the more data its disk holds (scripts/bench-cluster.sh):
  # every round starts empty, as kfake's in-memory log does.
  if [ "$ferry_ok" = 1 ]; then
    for t in "bench-$round" "e2e-$round"; do
      bin/ferry topics delete "$t" --bootstrap "127.0.0.1:$KAFKA_PORT" >/dev/null 2>&1 || true
    done
  fi
done

python3 - "$results" "$RECORDS" "$DURATION" "$RECORD_SIZE" "$PARTITIONS" "$ROUNDS" "$RATE" "$E2E_SECONDS" <<'PY'
import sys, statistics
path, records, duration, size, parts, rounds, rate, e2e_seconds = sys.argv[1:]
rows = []
for line in open(path):
    target, *kv = line.split()
    rows.append((target, dict(p.split("=") for p in kv)))
def med(target, op, key):
    vals = [float(r[key]) for t, r in rows if t == target and r["op"] == op]
    return statistics.median(vals) if vals else None
if any(r["op"] in ("produce", "consume") for _, r in rows):  # not E2E_ONLY
    print(f"\nKafka: {size}-byte records, acks=1, no compression, {parts} partitions, "
          f"up to {records} records or {duration}, one franz-go client, {rounds} round(s) (medians)")
    print(f"{'target':<26}{'op':<9}{'records/s':>12}{'MB/s':>9}{'p50 ms':>9}{'p99 ms':>9}")
    for op in ("produce", "consume"):
        for target, name in (("ferry", "ferry serve"), ("kfake", "kfake (in-process)")):
            rps = med(target, op, "records_per_sec")
            if rps is None:
                print(f"{name:<26}{op:<9}{'failed':>12}")
                continue
            lat = (f"{med(target, op, 'p50_us')/1000:>9.2f}{med(target, op, 'p99_us')/1000:>9.2f}"
                   if op == "produce" else f"{'-':>9}{'-':>9}")
            print(f"{name:<26}{op:<9}{rps:>12.0f}{med(target, op, 'mb_per_sec'):>9.1f}{lat}")
    print()
    for op, goal in (("produce", 800000), ("consume", 1500000)):
        f, k = med("ferry", op, "records_per_sec"), med("kfake", op, "records_per_sec")
        if f is None or k is None:
            print(f"ferry / kfake {op} records/s: n/a")
            continue
        print(f"ferry / kfake {op} records/s: {f/k:.2f}  (ferry {f:.0f}/s, target >= {goal})")
print(f"\nEnd to end (Produce called -> record polled): {rate} records/s for {e2e_seconds}s, acks=all, "
      f"no linger, {parts} partitions (medians of rounds)")
print(f"{'target':<26}{'records':>10}{'p50 ms':>9}{'p99 ms':>9}{'p99.9 ms':>10}")
for target, name in (("ferry", "ferry serve"), ("kfake", "kfake (in-process)")):
    n = med(target, "e2e", "records")
    if n is None:
        print(f"{name:<26}{'failed':>10}")
        continue
    print(f"{name:<26}{n:>10.0f}{med(target, 'e2e', 'p50_us')/1000:>9.2f}"
          f"{med(target, 'e2e', 'p99_us')/1000:>9.2f}{med(target, 'e2e', 'p999_us')/1000:>10.2f}")
# The machine's load changes between rounds: each round's ferry/kfake
# ratio compares runs made back to back; the targets are p50 <= 1.3 and
# p99 <= 1.5.
f_e2e = [r for t, r in rows if t == "ferry" and r["op"] == "e2e"]
k_e2e = [r for t, r in rows if t == "kfake" and r["op"] == "e2e"]
if f_e2e and len(f_e2e) == len(k_e2e):
    ratios = [(float(f["p50_us"]) / float(k["p50_us"]), float(f["p99_us"]) / float(k["p99_us"])) for f, k in zip(f_e2e, k_e2e)]
    print("ferry / kfake per round (p50, p99): " + "  ".join(f"{a:.2f},{b:.2f}" for a, b in ratios))
    print(f"ferry / kfake median of rounds: p50 {statistics.median(a for a, _ in ratios):.2f} (target <= 1.3), "
          f"p99 {statistics.median(b for _, b in ratios):.2f} (target <= 1.5)")
PY
[ "$ferry_ok" = 1 ] || { echo "ferry was not benchmarked (see above)"; exit 1; }
