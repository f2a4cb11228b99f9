#!/usr/bin/env bash
# TLS benchmark: `ferry bench produce` and `ferry bench consume` (one
# franz-go client each; 100-byte records, acks=1, no compression) against
# one `ferry serve` with a PLAINTEXT, an SSL and a SASL_SSL listener
# (SCRAM-SHA-512), alternating them in each round; prints the medians and what TLS costs (target: at
# most 35% of plaintext throughput on a 2-core machine). The certificates
# are made for this run with openssl and removed after. Loopback only;
# each run is bounded by RECORDS and DURATION.
set -euo pipefail
cd "$(dirname "$0")/.."
RECORDS=${RECORDS:-1000000}
DURATION=${DURATION:-15s}
RECORD_SIZE=${RECORD_SIZE:-100}
PARTITIONS=${PARTITIONS:-4}
ROUNDS=${ROUNDS:-3}
work=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT

mkdir -p bin
go build -o bin/ferry ./cmd/ferry

# A CA and a server certificate for 127.0.0.1 (P-256, as most operators' are).
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj "/CN=bench CA" \
  -keyout "$work/ca.key" -out "$work/ca.pem" 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=broker" \
  -keyout "$work/broker.key" -out "$work/broker.csr" 2>/dev/null
printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\n' >"$work/san.ext"
openssl x509 -req -in "$work/broker.csr" -CA "$work/ca.pem" -CAkey "$work/ca.key" -CAcreateserial -days 1 \
  -extfile "$work/san.ext" -out "$work/broker.crt" 2>/dev/null
cat "$work/broker.key" "$work/broker.crt" >"$work/keystore.pem"

port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_http() { for _ in $(seq 200); do curl -fs "$1/healthz" >/dev/null 2>&1 && return 0; sleep 0.05; done; return 1; }

HTTP_PORT=$(port); PLAIN_PORT=$(port); SSL_PORT=$(port); SASL_SSL_PORT=$(port)
# A SCRAM user for the SASL_SSL listener, made before the first start.
printf 'bench-Pw-0\n' >"$work/bench.pw"
bin/ferry users create bench --mechanism SCRAM-SHA-512 --password-file "$work/bench.pw" --data-dir "$work/data" >/dev/null
bin/ferry serve --data-dir "$work/data" --http-addr "127.0.0.1:$HTTP_PORT" \
  --listeners "PLAINTEXT://127.0.0.1:$PLAIN_PORT,SSL://127.0.0.1:$SSL_PORT,SASL_SSL://127.0.0.1:$SASL_SSL_PORT" \
  --ssl-keystore-location "$work/keystore.pem" --log-level warn 2>"$work/ferry.log" & pids+=($!)
wait_http "http://127.0.0.1:$HTTP_PORT" || { echo "ferry serve not ready:" >&2; cat "$work/ferry.log" >&2; exit 1; }

flags=(--records "$RECORDS" --duration "$DURATION" --record-size "$RECORD_SIZE"
  --partitions "$PARTITIONS" --acks 1 --compression none)
results="$work/results"
for round in $(seq "$ROUNDS"); do
  for mode in plaintext tls sasl_ssl; do
    case "$mode" in
      tls) conn=(--bootstrap "127.0.0.1:$SSL_PORT" --tls --tls-ca-file "$work/ca.pem") ;;
      sasl_ssl) conn=(--bootstrap "127.0.0.1:$SASL_SSL_PORT" --tls --tls-ca-file "$work/ca.pem"
        --sasl-mechanism SCRAM-SHA-512 --sasl-username bench --sasl-password-file "$work/bench.pw") ;;
      *) conn=(--bootstrap "127.0.0.1:$PLAIN_PORT") ;;
    esac
    for op in produce consume; do
      bin/ferry bench "$op" "${conn[@]}" --topic "bench-$mode-$round" "${flags[@]}" \
        | sed -n "s/^RESULT /$mode /p" >>"$results"
    done
  done
done

python3 - "$results" "$RECORDS" "$DURATION" "$RECORD_SIZE" "$PARTITIONS" "$ROUNDS" <<'PY'
import sys, statistics
path, records, duration, size, parts, rounds = sys.argv[1:]
rows = []
for line in open(path):
    mode, *kv = line.split()
    rows.append((mode, dict(p.split("=") for p in kv)))
def med(mode, op, key):
    vals = [float(r[key]) for m, r in rows if m == mode and r["op"] == op]
    return statistics.median(vals) if vals else None
print(f"\nKafka over TLS vs plaintext: {size}-byte records, acks=1, no compression, {parts} partitions, "
      f"up to {records} records or {duration}, one franz-go client, {rounds} round(s) (medians)")
print(f"{'listener':<12}{'op':<9}{'records/s':>12}{'MB/s':>9}{'p50 ms':>9}{'p99 ms':>9}")
for op in ("produce", "consume"):
    for mode in ("plaintext", "tls", "sasl_ssl"):
        rps = med(mode, op, "records_per_sec")
        lat = (f"{med(mode, op, 'p50_us')/1000:>9.2f}{med(mode, op, 'p99_us')/1000:>9.2f}"
               if op == "produce" else f"{'-':>9}{'-':>9}")
        print(f"{mode:<12}{op:<9}{rps:>12.0f}{med(mode, op, 'mb_per_sec'):>9.1f}{lat}")
print()
ok = True
for op in ("produce", "consume"):
    p = med("plaintext", op, "records_per_sec")
    for mode, name in (("tls", "TLS"), ("sasl_ssl", "SASL_SSL")):
        cost = 1 - med(mode, op, "records_per_sec") / p
        ok = ok and cost <= 0.35
        print(f"{name} costs {op}: {cost*100:.0f}% of plaintext records/s (target <= 35%)")
sys.exit(0 if ok else 1)
PY
