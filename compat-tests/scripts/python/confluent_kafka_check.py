"""confluent_kafka_check drives a samsa broker with confluent-kafka-python (librdkafka)
and exits non-zero on any failed check.

    /usr/bin/python3 confluent_kafka_check.py BOOTSTRAP TOPIC_PREFIX

Admin: create_topics (and TOPIC_ALREADY_EXISTS on a second try), list_topics metadata,
describe_configs, alter_configs, delete_topics. Data: RECORDS records with acks=all to
PREFIX-<codec> for none, gzip, snappy, lz4 and zstd, read back with assign() at offset 0
(no group subscription), checked for content and order, then offsets_for_times.
"""

import sys
import time

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka import libversion, version
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic

import layout
from layout import PARTITIONS, RECORDS

CLIENT = "confluent"
CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]


def wait_all(futures, timeout=30):
    """wait_all returns {name: exception or None} for a dict of admin futures."""
    out = {}
    for name, f in futures.items():
        try:
            f.result(timeout=timeout)
            out[name] = None
        except Exception as e:  # KafkaException carries the broker's error
            out[name] = e
    return out


def error_code(e):
    if isinstance(e, KafkaException) and e.args and isinstance(e.args[0], KafkaError):
        return e.args[0].code()
    return None


def admin_checks(c, admin, topics, prefix):
    res = wait_all(admin.create_topics([NewTopic(t, num_partitions=PARTITIONS, replication_factor=1) for t in topics]))
    c.check(all(e is None for e in res.values()), "create_topics %d topics with %d partitions: %s" % (len(topics), PARTITIONS, res))
    res = wait_all(admin.create_topics([NewTopic(topics[0], num_partitions=PARTITIONS, replication_factor=1)]))
    code = error_code(res[topics[0]])
    c.check(code == KafkaError.TOPIC_ALREADY_EXISTS, "create_topics on an existing topic: TOPIC_ALREADY_EXISTS (got %s)" % res[topics[0]])

    md = admin.list_topics(timeout=10)
    for t in topics:
        tm = md.topics.get(t)
        ok = tm is not None and tm.error is None and len(tm.partitions) == PARTITIONS and \
            all(p.error is None and p.leader >= 0 for p in tm.partitions.values())
        c.check(ok, "list_topics %s: %s partitions, each with a leader" % (t, len(tm.partitions) if tm else "no"))

    admin_topic = prefix + "-admin"
    res = wait_all(admin.create_topics([NewTopic(admin_topic, num_partitions=2, replication_factor=1,
                                                 config={"retention.ms": "86400000"})]))
    c.check(res[admin_topic] is None, "create_topics %s with retention.ms=86400000: %s" % (admin_topic, res[admin_topic]))

    def retention():
        r = ConfigResource("topic", admin_topic)
        try:
            entries = admin.describe_configs([r])[r].result(timeout=10)
        except Exception as e:
            return "error %s" % e
        e = entries.get("retention.ms")
        return e.value if e else "missing"

    got = retention()
    c.check(got == "86400000", "describe_configs %s retention.ms = %s (set at create)" % (admin_topic, got))
    r = ConfigResource("topic", admin_topic, set_config={"retention.ms": "7200000"})
    res = wait_all(admin.alter_configs([r]))
    c.check(res[r] is None, "alter_configs %s retention.ms=7200000: %s" % (admin_topic, res[r]))
    got = retention()
    c.check(got == "7200000", "describe_configs after alter_configs: retention.ms = %s" % got)

    b = ConfigResource("broker", str(md.controller_id if md.controller_id >= 0 else list(md.brokers)[0]))
    try:
        entries = admin.describe_configs([b])[b].result(timeout=10)
        c.check(len(entries) > 0, "describe_configs broker %s: %d entries" % (b.name, len(entries)))
    except Exception as e:
        c.check(False, "describe_configs broker %s: %s" % (b.name, e))

    res = wait_all(admin.delete_topics([admin_topic], operation_timeout=10))
    c.check(res[admin_topic] is None, "delete_topics %s: %s" % (admin_topic, res[admin_topic]))
    gone = layout.wait_for(lambda: admin_topic not in admin.list_topics(timeout=10).topics, 10)
    c.check(gone, "delete_topics %s: no longer listed" % admin_topic)


def produce(c, bootstrap, codec, topic, base):
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "compression.type": codec,
                  "linger.ms": 5, "message.timeout.ms": 30000})
    errors = []
    delivered = [0]

    def on_delivery(err, msg):
        if err is not None:
            errors.append(err)
        else:
            delivered[0] += 1

    start = time.monotonic()
    for i in range(RECORDS):
        while True:
            try:
                p.produce(topic, key=layout.key(i), value=layout.value(codec, i), partition=i % PARTITIONS,
                          timestamp=base + i, headers=[("src", CLIENT.encode())], on_delivery=on_delivery)
                break
            except BufferError:
                p.poll(0.1)
        p.poll(0)
    left = p.flush(60)
    c.check(left == 0 and not errors and delivered[0] == RECORDS,
            "produce %d records acks=all compression.type=%s: %d delivered, %d errors %s, %d unflushed, %.0f ms"
            % (RECORDS, codec, delivered[0], len(errors), errors[:3], left, (time.monotonic() - start) * 1000))


def consume(c, bootstrap, codec, topic, base):
    # librdkafka needs a group.id even for assign(); nothing is committed and no group is joined.
    cons = Consumer({"bootstrap.servers": bootstrap, "group.id": topic + "-unused", "enable.auto.commit": False,
                     "enable.auto.offset.store": False, "enable.partition.eof": False})
    cons.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
    v = layout.Verifier(codec, CLIENT)
    bad = 0
    errors = []
    deadline = time.monotonic() + 60
    while not v.complete() and time.monotonic() < deadline:
        for m in cons.consume(num_messages=1000, timeout=0.5):
            if m.error():
                errors.append(m.error())
                continue
            if not v.add(m.partition(), m.offset(), m.key(), m.value(), m.headers(), m.timestamp()[1], base):
                bad += 1
    c.check(v.complete(), "consume %s by assign() from offset 0: %s records per partition (want %s), errors %s"
            % (topic, v.next, [layout.expected_before(p, RECORDS) for p in range(PARTITIONS)], errors[:3]))
    c.check(bad == 0, "consume %s: content, offset, header, timestamp and order match (%d mismatches) %s" % (topic, bad, v.bad))

    mid = RECORDS // 2
    got = cons.offsets_for_times([TopicPartition(topic, p, base + mid) for p in range(PARTITIONS)], timeout=10)
    offsets = sorted((tp.partition, tp.offset) for tp in got)
    want = [(p, layout.expected_before(p, mid)) for p in range(PARTITIONS)]
    c.check(offsets == want and all(tp.error is None for tp in got),
            "offsets_for_times %s at BASE+%d: %s" % (topic, mid, offsets))
    got = cons.offsets_for_times([TopicPartition(topic, 0, base + RECORDS + 1000)], timeout=10)
    c.check(got[0].offset == -1, "offsets_for_times %s after the last record: %s (want -1)" % (topic, got[0].offset))
    lo, hi = cons.get_watermark_offsets(TopicPartition(topic, 1), timeout=10)
    c.check((lo, hi) == (0, layout.expected_before(1, RECORDS)), "get_watermark_offsets %s[1]: %d..%d" % (topic, lo, hi))
    cons.close()


def main():
    if len(sys.argv) != 3:
        print("usage: confluent_kafka_check.py BOOTSTRAP TOPIC_PREFIX", file=sys.stderr)
        sys.exit(2)
    bootstrap, prefix = sys.argv[1], sys.argv[2]
    c = layout.Checks("confluent-kafka-python")
    c.note("confluent-kafka-python %s, librdkafka %s" % (version()[0], libversion()[0]))
    admin = AdminClient({"bootstrap.servers": bootstrap})
    topics = ["%s-%s" % (prefix, codec) for codec in CODECS]
    admin_checks(c, admin, topics, prefix)
    base = int(time.time() * 1000) - 3600 * 1000
    for codec, topic in zip(CODECS, topics):
        produce(c, bootstrap, codec, topic, base)
        consume(c, bootstrap, codec, topic, base)
    c.finish()


if __name__ == "__main__":
    main()
