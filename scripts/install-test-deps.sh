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
# librdkafka's own regression tests (test/cluster/librdkafka_suite_test.go)
# are built against the distribution's librdkafka: its headers, a C/C++
# toolchain, pkg-config, and RapidJSON (test 0098); their source comes
# below.
dpkg -s librdkafka-dev >/dev/null 2>&1 || need+=(librdkafka-dev)
{ command -v cc && command -v c++ && command -v dpkg-source; } >/dev/null || need+=(build-essential)
command -v pkg-config >/dev/null || need+=(pkg-config)
[ -f /usr/include/rapidjson/document.h ] || need+=(rapidjson-dev)
updated=
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" != 0 ]; then
    echo "install-test-deps: missing ${need[*]} and not root; install them by hand" >&2
    exit 1
  fi
  echo "install-test-deps: installing ${need[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  updated=1
  apt-get install -y -qq "${need[@]}" >/dev/null
fi

# The source of the installed librdkafka, its tests/ included, from
# Debian's source package of the same version: apt-get source, with
# deb-src entries for the Debian mirror the machine already uses.
src_root=/usr/local/src/ferry-test-deps
rdk_version=$(dpkg-query -W -f='${Version}' librdkafka-dev)
rdk_upstream=${rdk_version#*:}
rdk_upstream=${rdk_upstream%-*}
if [ ! -f "$src_root/librdkafka-$rdk_upstream/tests/0103-transactions.c" ]; then
  if [ "$(id -u)" != 0 ]; then
    echo "install-test-deps: librdkafka's source is missing and not root: run apt-get source librdkafka=$rdk_version in $src_root" >&2
    exit 1
  fi
  if ! grep -rqsE '^(deb-src[[:space:]]|Types:.*deb-src)' /etc/apt/sources.list /etc/apt/sources.list.d/; then
    if [ -f /etc/apt/sources.list.d/debian.sources ]; then
      sed -E 's/^Types:.*/Types: deb-src/' /etc/apt/sources.list.d/debian.sources \
        >/etc/apt/sources.list.d/ferry-test-deb-src.sources
    elif grep -qsE '^deb[[:space:]]' /etc/apt/sources.list; then
      sed -nE 's/^deb([[:space:]])/deb-src\1/p' /etc/apt/sources.list >/etc/apt/sources.list.d/ferry-test-deb-src.list
    else
      echo "install-test-deps: no Debian apt source to add deb-src entries for" >&2
      exit 1
    fi
    updated=
  fi
  [ -n "$updated" ] || apt-get update -qq
  echo "install-test-deps: apt-get source librdkafka=$rdk_version into $src_root"
  mkdir -p "$src_root"
  (cd "$src_root" && apt-get source -qq "librdkafka=$rdk_version" >/dev/null)
fi
