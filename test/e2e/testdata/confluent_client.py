#!/usr/bin/python3
"""confluent-kafka (librdkafka) as a test client of ferry, driven by the Go
tests in test/e2e (confluent_python_test.go).

    confluent_client.py produce --topic T --count N [--prefix P] [--spread N] [-X key=value ...]
    confluent_client.py consume --topic T --count N --group G [-X key=value ...]

produce sends N records (values P-0 .. P-N-1, acks=all) and prints one JSON
line per delivered record; consume reads N records as a member of group G
(auto.offset.reset=earliest), prints one JSON line per record, commits
synchronously and prints the committed offsets as a last line
{"committed": [...]}.

Every -X goes to librdkafka as it is; the environment variable
RDKAFKA_CONFIG, a JSON object, adds more, so a password need not appear in
the process's arguments.

On failure the last line on stderr is {"error": NAME, "message": ...} with
librdkafka's error name (SASL_AUTHENTICATION_FAILED, _AUTHENTICATION,
TOPIC_AUTHORIZATION_FAILED, _TIMED_OUT, ...) and the exit status is 1; a
usage error exits 2. Every wait is bounded by --timeout seconds.
"""

import argparse
import json
import os
import sys
import time

from confluent_kafka import Consumer, KafkaError, Producer

# Errors after which waiting longer cannot help: librdkafka would retry
# them until the deadline and hide the cause behind a timeout.
GIVE_UP = {
    KafkaError._AUTHENTICATION,
    KafkaError.SASL_AUTHENTICATION_FAILED,
    KafkaError._SSL,
    KafkaError.TOPIC_AUTHORIZATION_FAILED,
    KafkaError.GROUP_AUTHORIZATION_FAILED,
    KafkaError.CLUSTER_AUTHORIZATION_FAILED,
    KafkaError._UNKNOWN_TOPIC,
    KafkaError.UNKNOWN_TOPIC_OR_PART,
}


class ClientFailed(Exception):
    def __init__(self, name, message):
        super().__init__(message)
        self.name = name
        self.message = message


def from_kafka_error(err):
    return ClientFailed(err.name(), err.str())


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("mode", choices=["produce", "consume"])
    p.add_argument("--topic", required=True)
    p.add_argument("--count", type=int, required=True)
    p.add_argument("--prefix", default="py")
    p.add_argument("--group")
    # --spread N: record i goes to partition i % N (librdkafka's sticky
    # partitioner would put a short burst of unkeyed records in one).
    p.add_argument("--spread", type=int, default=0)
    p.add_argument("--timeout", type=float, default=30.0)
    p.add_argument("-X", dest="config", action="append", default=[], metavar="KEY=VALUE")
    args = p.parse_args(argv)
    if args.mode == "consume" and not args.group:
        p.error("consume needs --group")
    return args


def client_config(args, errors):
    conf = {}
    extra = os.environ.get("RDKAFKA_CONFIG")
    if extra:
        conf.update(json.loads(extra))
    for kv in args.config:
        key, sep, value = kv.partition("=")
        if not sep:
            raise SystemExit(f"-X {kv}: want key=value")
        conf[key] = value

    def on_error(err):
        # Broker-level errors (a refused SASL handshake, a failed TLS
        # handshake) reach only this callback, never a delivery report.
        errors.append(err)

    conf["error_cb"] = on_error
    return conf


def raise_if_fatal(errors):
    for err in errors:
        if err.code() in GIVE_UP or err.fatal():
            raise from_kafka_error(err)


def produce(args):
    errors, delivered, refused = [], [], []
    conf = client_config(args, errors)
    conf.setdefault("acks", "all")
    conf.setdefault("message.timeout.ms", str(int(args.timeout * 1000)))
    producer = Producer(conf)

    def on_delivery(err, msg):
        if err is not None:
            refused.append(err)  # final: librdkafka has retried what it may
            return
        delivered.append(msg)

    for i in range(args.count):
        where = {"partition": i % args.spread} if args.spread > 0 else {}
        producer.produce(args.topic, value=f"{args.prefix}-{i}".encode(), on_delivery=on_delivery, **where)
    deadline = time.monotonic() + args.timeout
    try:
        while len(delivered) < args.count:
            raise_if_fatal(errors)
            if refused:
                raise from_kafka_error(refused[0])
            if time.monotonic() > deadline:
                raise ClientFailed("_TIMED_OUT", f"{len(delivered)} of {args.count} records delivered within {args.timeout}s")
            producer.poll(0.1)
    except ClientFailed:
        # What is still queued will not be sent: drop it rather than have
        # librdkafka wait for it (and warn about it) on exit.
        producer.purge()
        producer.poll(0)
        raise
    for msg in delivered:
        print_record(msg)
    # Nothing is left in the queue: every record was acknowledged.
    producer.flush(1.0)


def consume(args):
    errors, records = [], []
    conf = client_config(args, errors)
    conf["group.id"] = args.group
    conf.setdefault("auto.offset.reset", "earliest")
    conf.setdefault("enable.auto.commit", "false")
    consumer = Consumer(conf)
    try:
        consumer.subscribe([args.topic])
        deadline = time.monotonic() + args.timeout
        while len(records) < args.count:
            raise_if_fatal(errors)
            if time.monotonic() > deadline:
                raise ClientFailed("_TIMED_OUT", f"{len(records)} of {args.count} records within {args.timeout}s")
            msg = consumer.poll(0.2)
            if msg is None:
                continue
            if msg.error() is not None:
                if msg.error().code() == KafkaError._PARTITION_EOF:
                    continue
                raise from_kafka_error(msg.error())
            records.append(msg)
        for msg in records:
            print_record(msg)
        committed = consumer.commit(asynchronous=False)
        print(json.dumps({"committed": [
            {"topic": tp.topic, "partition": tp.partition, "offset": tp.offset} for tp in committed or []]}))
    finally:
        consumer.close()


def print_record(msg):
    key = msg.key()
    print(json.dumps({
        "topic": msg.topic(),
        "partition": msg.partition(),
        "offset": msg.offset(),
        "key": key.decode() if key is not None else None,
        "value": msg.value().decode(),
    }))


def main(argv):
    args = parse_args(argv)
    try:
        (produce if args.mode == "produce" else consume)(args)
    except ClientFailed as failed:
        print(json.dumps({"error": failed.name, "message": failed.message}), file=sys.stderr)
        return 1
    except Exception as exc:  # a KafkaException from commit, subscribe, ...
        err = exc.args[0] if exc.args and isinstance(exc.args[0], KafkaError) else None
        if err is None:
            raise
        print(json.dumps({"error": err.name(), "message": err.str()}), file=sys.stderr)
        return 1
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
