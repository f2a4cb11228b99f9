#!/usr/bin/env bash
# Metrics overhead: wrk POSTs 10 JSON records per request to two ferry
# processes in the same run — one with metrics (the default) and one with
# --metrics=false — alternating rounds so both see the same machine, and
# prints the median requests/s of each and the cost of metrics (budget 3%).
# Then the same with `ferry bench produce` (franz-go, 100-byte records,
# acks=1) over the Kafka listener of each. Then the Go benchmarks of the same comparison in process (core
# ProduceBatch, Kafka listener over loopback, HTTP produce handler), with
# the median ns/op of each. Loopback only; every run is bounded.
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${DURATION:-10s}
CONNS=${CONNS:-32}
ROUNDS=${ROUNDS:-5}
COUNT=${COUNT:-10}
PHASES=${PHASES:-wrk kafka go} # any of: wrk kafka go
work=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT

./scripts/install-test-deps.sh
go build -o "$work/ferry" ./cmd/ferry
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_ready() { for _ in $(seq 200); do curl -fs "$1/healthz" >/dev/null 2>&1 && return 0; sleep 0.05; done; echo "not ready: $1" >&2; exit 1; }

start() { # start NAME EXTRA-ARGS…: a node, its URL in $work/NAME.url
  local name=$1 hp kp; shift
  hp=$(port); kp=$(port)
  "$work/ferry" serve --data-dir "$work/$name" --http-addr "127.0.0.1:$hp" --kafka-addr "127.0.0.1:$kp" "$@" \
    2>"$work/$name.log" & pids+=($!)
  wait_ready "http://127.0.0.1:$hp"
  curl -fs -X POST -H 'Content-Type: application/json' "http://127.0.0.1:$hp/topics" \
    -d '{"name":"topic1","partitions":1}' >/dev/null
  echo "http://127.0.0.1:$hp" >"$work/$name.url"
  echo "127.0.0.1:$kp" >"$work/$name.kafka"
}
start on
start off --metrics=false

run() { # run LABEL URL: one wrk run; prints "LABEL req/s"
  local out
  out=$(TOPIC=topic1 wrk -t1 -c"$CONNS" -d"$DURATION" -s test/bench/produce10.lua "$2" | grep '^RESULT')
  python3 - "$1" "$out" <<'PY'
import sys
label, line = sys.argv[1], sys.argv[2]
kv = dict(p.split("=") for p in line.split()[1:])
print(f"{label} {int(kv['requests']) / (int(kv['duration_us']) / 1e6):.0f} {kv['errors']}")
PY
}
results="$work/results" kresults="$work/kresults"
touch "$results" "$kresults" "$work/go.txt"
[[ $PHASES == *wrk* ]] && for round in $(seq "$ROUNDS"); do
  if (( round % 2 )); then order="on off"; else order="off on"; fi
  for label in $order; do run "$label" "$(cat "$work/$label.url")" | tee -a "$results"; done
done
[[ $PHASES == *kafka* ]] && for round in $(seq "$ROUNDS"); do
  if (( round % 2 )); then order="on off"; else order="off on"; fi
  for label in $order; do
    "$work/ferry" bench produce --bootstrap "$(cat "$work/$label.kafka")" --topic "bench-$round" \
      --records "${KRECORDS:-2000000}" --duration "$DURATION" --record-size 100 --partitions 4 --acks 1 \
      --compression none | sed -n "s/^RESULT /$label /p" | tee -a "$kresults"
  done
done
kill "${pids[@]}" 2>/dev/null || true; wait 2>/dev/null || true; pids=()

if [[ $PHASES == *go* ]]; then
  go test -run '^$' -bench 'ProduceBatchMetrics' -count="$COUNT" ./server | grep '^Benchmark' >"$work/go.txt"
  go test -run '^$' -bench 'ProduceMetrics' -count="$COUNT" ./server/kafka | grep '^Benchmark' >>"$work/go.txt"
  go test -run '^$' -bench 'ProduceHandlerMetrics' -count="$COUNT" ./api | grep '^Benchmark' >>"$work/go.txt"
fi

python3 - "$results" "$work/go.txt" "$CONNS" "$DURATION" "$ROUNDS" "$COUNT" "$kresults" <<'PY'
import sys, statistics, re, collections
rows = [l.split() for l in open(sys.argv[1])]
if rows:
    med = lambda label: statistics.median(float(r[1]) for r in rows if r[0] == label)
    on, off = med("on"), med("off")
    print(f"\nwrk, HTTP produce of 10 JSON records/request, {sys.argv[3]} connections, {sys.argv[4]} x {sys.argv[5]} rounds each (medians)")
    print(f"  metrics on  {on:>9.0f} req/s   ({[int(float(r[1])) for r in rows if r[0]=='on']})")
    print(f"  metrics off {off:>9.0f} req/s   ({[int(float(r[1])) for r in rows if r[0]=='off']})")
    print(f"  cost of metrics: {(off - on) / off * 100:+.1f}% of throughput (budget 3%)")
krows = [l.split() for l in open(sys.argv[7])]
if krows:
    krps = lambda label: [float(dict(p.split("=") for p in r[1:])["records_per_sec"]) for r in krows if r[0] == label]
    kon, koff = statistics.median(krps("on")), statistics.median(krps("off"))
    print(f"\nferry bench produce (franz-go, 100-byte records, acks=1, 4 partitions), {sys.argv[5]} rounds each (medians)")
    print(f"  metrics on  {kon:>9.0f} records/s   ({[int(x) for x in krps('on')]})")
    print(f"  metrics off {koff:>9.0f} records/s   ({[int(x) for x in krps('off')]})")
    print(f"  cost of metrics: {(koff - kon) / koff * 100:+.1f}% of throughput (budget 3%)")
ns, paired = collections.defaultdict(list), collections.defaultdict(list)
for line in open(sys.argv[2]):
    m = re.match(r"(Benchmark\S+?)-\d+\s+\d+\s+([\d.]+) ns/op", line)
    if not m:
        continue
    if "Paired" in m.group(1):
        kv = dict((u, float(v)) for v, u in re.findall(r"([-\d.]+) (\S+)", line))
        paired[m.group(1)].append(kv)
    else:
        ns[m.group(1)].append(float(m.group(2)))
print(f"\nGo benchmarks, -count={sys.argv[6]}: separate sub-benchmarks (median ns/op)")
for name in sorted({k.rsplit('/', 1)[0] for k in ns}):
    o, f = statistics.median(ns[name + "/on"]), statistics.median(ns[name + "/off"])
    print(f"  {name:<34} off {f:>9.0f}  on {o:>9.0f}  cost {(o - f) / f * 100:+.1f}%")
print(f"Go benchmarks, -count={sys.argv[6]}: paired, on and off interleaved in blocks of 64 (medians)")
for name, runs in sorted(paired.items()):
    med = lambda k: statistics.median(r[k] for r in runs)
    costs = ", ".join("%+.1f" % r["cost-%"] for r in runs)
    print(f"  {name:<34} off {med('off-ns/op'):>9.0f}  on {med('on-ns/op'):>9.0f}  cost {med('cost-%'):+.1f}%   (runs: {costs})")
PY
