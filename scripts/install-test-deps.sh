#!/usr/bin/env bash
# Installs the Debian packages the tests and benchmarks use, only where
# missing, so a warm machine pays nothing. Needs root (CI runs as root).
set -euo pipefail
need=()
command -v kcat >/dev/null || need+=(kcat)
command -v wrk  >/dev/null || need+=(wrk)
# Headless Chromium for the admin page's browser tests (test/e2e/ui_*_test.go).
command -v chromium >/dev/null || need+=(chromium)
# PostgreSQL for the schema registry's store tests (schemaregistry/internal/pgtest).
compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null || need+=(postgresql)
# confluent-kafka for Debian's own python3 (test/e2e/confluent_python_test.go
# runs /usr/bin/python3 by path: a pyenv python3 on PATH does not see it).
/usr/bin/python3 -c 'import confluent_kafka' 2>/dev/null || need+=(python3-confluent-kafka)
# What its schema registry serializers import (test/e2e/confluent_serde_test.go):
# JSON Schema and Protobuf. Its Avro serializer needs fastavro, which Debian
# does not package.
/usr/bin/python3 -c 'import jsonschema' 2>/dev/null || need+=(python3-jsonschema)
/usr/bin/python3 -c 'import google.protobuf' 2>/dev/null || need+=(python3-protobuf)
/usr/bin/python3 -c 'import requests' 2>/dev/null || need+=(python3-requests)
# ZooKeeper for the cluster tests (test/zkserver runs it from these jars).
[ -f /usr/share/java/zookeeper.jar ] || need+=(zookeeper)
# ip and nft make and cut the network namespaces of the partition tests
# (test/netns, test/partition).
command -v ip  >/dev/null || need+=(iproute2)
command -v nft >/dev/null || need+=(nftables)
# systemd-analyze verifies deployments/systemd/ferry.service
# (cmd/ferry/deployments_test.go); nothing here boots systemd.
command -v systemd-analyze >/dev/null || need+=(systemd)
if [ ${#need[@]} -eq 0 ]; then
  exit 0
fi
if [ "$(id -u)" != 0 ]; then
  echo "install-test-deps: missing ${need[*]} and not root; install them by hand" >&2
  exit 1
fi
echo "install-test-deps: installing ${need[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq "${need[@]}" >/dev/null
