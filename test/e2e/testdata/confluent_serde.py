#!/usr/bin/python3
"""Confluent's Python serializers (confluent_kafka.schema_registry) against
ferry's registry and Kafka listener, driven by
test/e2e/confluent_serde_test.go.

    confluent_serde.py produce --bootstrap B --registry URL --json-topic T --proto-topic T --count N
    confluent_serde.py consume --bootstrap B --json-topic T --proto-topic T --count N

produce serializes N JSON Schema records (JSONSerializer) and N Protobuf
records (ProtobufSerializer, whose schema imports a second file the
serializer registers as a reference), both with auto.register.schemas, and
prints one JSON line per delivered record: {"type", "offset", "value",
"raw"} (raw: the record's bytes in hex). consume reads N records from each
topic with JSONDeserializer and ProtobufDeserializer and prints one line
each: {"type", "offset", "value"}.

On failure the last line on stderr is {"error": ..., "message": ...} and the
exit status is 1.
"""

import argparse
import json
import sys
import time

from confluent_kafka import DeserializingConsumer, SerializingProducer
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer
from confluent_kafka.serialization import StringDeserializer, StringSerializer
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.json_format import MessageToDict

PAYMENT_SCHEMA = json.dumps({
    "$schema": "http://json-schema.org/draft-07/schema#",
    "title": "Payment",
    "type": "object",
    "properties": {
        "id": {"type": "string"},
        "amount": {"type": "number", "minimum": 0},
        "tags": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["id", "amount"],
    "additionalProperties": False,
})


def order_class():
    """Order (first message of shop.proto, which imports money.proto) built
    from descriptors, as protoc's generated code would: no protoc here."""
    pool = descriptor_pool.DescriptorPool()
    F = descriptor_pb2.FieldDescriptorProto
    money = descriptor_pb2.FileDescriptorProto(name="money.proto", package="shop", syntax="proto3")
    m = money.message_type.add(name="Money")
    m.field.add(name="currency", number=1, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    m.field.add(name="units", number=2, type=F.TYPE_INT64, label=F.LABEL_OPTIONAL)
    pool.Add(money)
    shop = descriptor_pb2.FileDescriptorProto(name="shop.proto", package="shop", syntax="proto3",
                                              dependency=["money.proto"])
    o = shop.message_type.add(name="Order")
    o.field.add(name="id", number=1, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    o.field.add(name="total", number=2, type=F.TYPE_MESSAGE, label=F.LABEL_OPTIONAL, type_name=".shop.Money")
    o.field.add(name="items", number=3, type=F.TYPE_STRING, label=F.LABEL_REPEATED)
    shop.message_type.add(name="Note").field.add(name="text", number=1, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    pool.Add(shop)
    return message_factory.MessageFactory(pool).GetPrototype(pool.FindMessageTypeByName("shop.Order"))


def payment(i):
    return {"id": "pay-%d" % i, "amount": 10.5 * i, "tags": ["t%d" % i]}


def order(cls, i):
    o = cls(id="order-%d" % i, items=["a%d" % i, "b"])
    o.total.currency = "EUR"
    o.total.units = 100 + i
    return o


def fail(name, message):
    print(json.dumps({"error": name, "message": message}), file=sys.stderr)
    sys.exit(1)


def produce(args):
    registry = SchemaRegistryClient({"url": args.registry})
    cls = order_class()
    jobs = [
        ("json", args.json_topic, JSONSerializer(PAYMENT_SCHEMA, registry), payment),
        ("protobuf", args.proto_topic, ProtobufSerializer(cls, registry), lambda i: order(cls, i)),
    ]
    for kind, topic, serializer, make in jobs:
        producer = SerializingProducer({"bootstrap.servers": args.bootstrap, "acks": "all",
                                        "key.serializer": StringSerializer("utf_8"),
                                        "value.serializer": serializer})
        delivered, errors = [], []

        def report(err, msg, kind=kind):
            if err is not None:
                errors.append(err)
                return
            delivered.append({"type": kind, "offset": msg.offset(), "raw": msg.value().hex()})

        for i in range(args.count):
            producer.produce(topic, key="k%d" % i, value=make(i), on_delivery=report)
            producer.flush(args.timeout)
        if errors:
            fail(errors[0].name(), errors[0].str())
        if len(delivered) != args.count:
            fail("_TIMED_OUT", "%d of %d %s records delivered" % (len(delivered), args.count, kind))
        for i, d in enumerate(delivered):
            value = make(i)
            d["value"] = value if kind == "json" else MessageToDict(value, preserving_proto_field_name=True)
            print(json.dumps(d))


def consume(args):
    cls = order_class()
    jobs = [
        ("json", args.json_topic, JSONDeserializer(PAYMENT_SCHEMA)),
        ("protobuf", args.proto_topic, ProtobufDeserializer(cls)),
    ]
    for kind, topic, deserializer in jobs:
        consumer = DeserializingConsumer({"bootstrap.servers": args.bootstrap, "group.id": "serde-" + kind,
                                          "auto.offset.reset": "earliest", "enable.auto.commit": False,
                                          "key.deserializer": StringDeserializer("utf_8"),
                                          "value.deserializer": deserializer})
        consumer.subscribe([topic])
        got, deadline = 0, time.time() + args.timeout
        while got < args.count and time.time() < deadline:
            msg = consumer.poll(1.0)
            if msg is None:
                continue
            if msg.error():
                fail(msg.error().name(), msg.error().str())
            value = msg.value()
            if kind == "protobuf":
                value = MessageToDict(value, preserving_proto_field_name=True)
            print(json.dumps({"type": kind, "offset": msg.offset(), "value": value}))
            got += 1
        consumer.close()
        if got < args.count:
            fail("_TIMED_OUT", "%d of %d %s records read" % (got, args.count, kind))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("mode", choices=["produce", "consume"])
    p.add_argument("--bootstrap", required=True)
    p.add_argument("--registry", default="")
    p.add_argument("--json-topic", required=True)
    p.add_argument("--proto-topic", required=True)
    p.add_argument("--count", type=int, default=5)
    p.add_argument("--timeout", type=float, default=30)
    args = p.parse_args()
    try:
        (produce if args.mode == "produce" else consume)(args)
    except Exception as e:  # the serializers raise their own types
        fail(type(e).__name__, str(e))


if __name__ == "__main__":
    main()
