"""kafka_python_check drives a samsa broker with kafka-python and exits non-zero on any
failed check.

    /usr/bin/python3 kafka_python_check.py BOOTSTRAP TOPIC_PREFIX

kafka-python guesses the broker's version from its ApiVersions answer (there is no
api_version= here on purpose) and picks request versions from that guess.

Admin: create_topics (and TopicAlreadyExistsError on a second try), describe_topics,
describe_configs, alter_configs, delete_topics. Data: RECORDS records with acks=all to
PREFIX-<codec> for every codec kafka.codec finds a module for (gzip always; snappy,
lz4 and zstd through python3-snappy, python3-lz4 and python3-zstandard), read back
with assign() and seek to offset 0 (group_id=None: no group at all), checked for
content and order, then offsets_for_times, beginning_offsets and end_offsets.
"""

import sys
import time

import kafka
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka import codec as kcodec
from kafka import errors as kerrors
from kafka.admin import ConfigResource, ConfigResourceType, NewTopic

import layout
from layout import PARTITIONS, RECORDS

CLIENT = "kafka-python"


def codecs(c):
    """codecs lists the codecs this installation can write; a missing module is a failure."""
    found = {"none": True, "gzip": kcodec.has_gzip(), "snappy": kcodec.has_snappy(),
             "lz4": kcodec.has_lz4(), "zstd": kcodec.has_zstd()}
    for name, ok in found.items():
        c.check(ok, "kafka-python codec %s available" % name)
    return [name for name, ok in found.items() if ok]


def topic_config(admin, topic, name):
    got = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic, configs={name: None})])
    for response in got:
        for error_code, error_message, _type, resource_name, entries in (r[:5] for r in response.resources):
            if resource_name != topic:
                continue
            if error_code != 0:
                return "error %d %s" % (error_code, error_message)
            for entry in entries:
                if entry[0] == name:
                    return entry[1]
    return "missing"


def admin_checks(c, admin, topics, prefix):
    admin.create_topics([NewTopic(t, num_partitions=PARTITIONS, replication_factor=1) for t in topics], timeout_ms=10000)
    c.check(True, "create_topics %d topics with %d partitions" % (len(topics), PARTITIONS))
    try:
        admin.create_topics([NewTopic(topics[0], num_partitions=PARTITIONS, replication_factor=1)], timeout_ms=10000)
        c.check(False, "create_topics on an existing topic raised nothing")
    except kerrors.TopicAlreadyExistsError:
        c.check(True, "create_topics on an existing topic: TopicAlreadyExistsError")

    described = {t["topic"]: t for t in admin.describe_topics(topics)}
    for t in topics:
        d = described.get(t)
        ok = d is not None and d["error_code"] == 0 and len(d["partitions"]) == PARTITIONS and \
            all(p["error_code"] == 0 and p["leader"] >= 0 for p in d["partitions"])
        c.check(ok, "describe_topics %s: %s partitions, each with a leader" % (t, len(d["partitions"]) if d else "no"))
    cluster = admin.describe_cluster()
    c.check(len(cluster.get("brokers", [])) == 1, "describe_cluster: brokers %s controller %s" % (cluster.get("brokers"), cluster.get("controller_id")))

    admin_topic = prefix + "-admin"
    admin.create_topics([NewTopic(admin_topic, num_partitions=2, replication_factor=1,
                                  topic_configs={"retention.ms": "86400000"})], timeout_ms=10000)
    got = topic_config(admin, admin_topic, "retention.ms")
    c.check(got == "86400000", "describe_configs %s retention.ms = %s (set at create)" % (admin_topic, got))
    res = admin.alter_configs([ConfigResource(ConfigResourceType.TOPIC, admin_topic, configs={"retention.ms": "7200000"})])
    codes = [r[0] for r in res.resources]
    c.check(codes == [0], "alter_configs %s retention.ms=7200000: error codes %s" % (admin_topic, codes))
    got = topic_config(admin, admin_topic, "retention.ms")
    c.check(got == "7200000", "describe_configs after alter_configs: retention.ms = %s" % got)

    broker_id = cluster["brokers"][0]["node_id"] if cluster.get("brokers") else 1
    got = admin.describe_configs([ConfigResource(ConfigResourceType.BROKER, str(broker_id))])
    entries = [e for response in got for r in response.resources for e in r[4]]
    c.check(len(entries) > 0, "describe_configs broker %s: %d entries" % (broker_id, len(entries)))

    admin.delete_topics([admin_topic], timeout_ms=10000)
    gone = layout.wait_for(lambda: admin_topic not in admin.list_topics(), 10)
    c.check(gone, "delete_topics %s: no longer listed" % admin_topic)


def produce(c, bootstrap, codec, topic, base):
    p = KafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=5, retries=3,
                      compression_type=None if codec == "none" else codec)
    start = time.monotonic()
    futures = [p.send(topic, key=layout.key(i), value=layout.value(codec, i), partition=i % PARTITIONS,
                      timestamp_ms=base + i, headers=[("src", CLIENT.encode())]) for i in range(RECORDS)]
    p.flush(timeout=60)
    errors = []
    for f in futures:
        try:
            f.get(timeout=30)
        except Exception as e:
            errors.append(e)
    p.close(timeout=10)
    c.check(not errors, "produce %d records acks=all compression_type=%s: %d errors %s, %.0f ms"
            % (RECORDS, codec, len(errors), errors[:3], (time.monotonic() - start) * 1000))


def consume(c, bootstrap, codec, topic, base):
    cons = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False)
    tps = [TopicPartition(topic, p) for p in range(PARTITIONS)]
    cons.assign(tps)
    for tp in tps:
        cons.seek(tp, 0)
    v = layout.Verifier(codec, CLIENT)
    bad = 0
    deadline = time.monotonic() + 60
    while not v.complete() and time.monotonic() < deadline:
        for tp, records in cons.poll(timeout_ms=500, max_records=2000).items():
            for r in records:
                if not v.add(r.partition, r.offset, r.key, r.value, r.headers, r.timestamp, base):
                    bad += 1
    c.check(v.complete(), "consume %s by assign()+seek(0): %s records per partition (want %s)"
            % (topic, v.next, [layout.expected_before(p, RECORDS) for p in range(PARTITIONS)]))
    c.check(bad == 0, "consume %s: content, offset, header, timestamp and order match (%d mismatches) %s" % (topic, bad, v.bad))

    mid = RECORDS // 2
    got = cons.offsets_for_times({tp: base + mid for tp in tps})
    offsets = sorted((tp.partition, o.offset if o else None) for tp, o in got.items())
    want = [(p, layout.expected_before(p, mid)) for p in range(PARTITIONS)]
    c.check(offsets == want, "offsets_for_times %s at BASE+%d: %s" % (topic, mid, offsets))
    got = cons.offsets_for_times({tps[0]: base + RECORDS + 1000})
    c.check(got[tps[0]] is None, "offsets_for_times %s after the last record: %s (want None)" % (topic, got[tps[0]]))
    begin, end = cons.beginning_offsets(tps), cons.end_offsets(tps)
    ok = all(begin[tp] == 0 and end[tp] == layout.expected_before(tp.partition, RECORDS) for tp in tps)
    c.check(ok, "beginning_offsets/end_offsets %s: %s .. %s" % (topic, sorted((tp.partition, o) for tp, o in begin.items()),
                                                             sorted((tp.partition, o) for tp, o in end.items())))
    cons.close()


def main():
    if len(sys.argv) != 3:
        print("usage: kafka_python_check.py BOOTSTRAP TOPIC_PREFIX", file=sys.stderr)
        sys.exit(2)
    bootstrap, prefix = sys.argv[1], sys.argv[2]
    c = layout.Checks("kafka-python")
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="samsa-compat-kafka-python")
    c.note("kafka-python %s, broker version guessed as %s" % (kafka.__version__, admin.config["api_version"]))
    names = codecs(c)
    topics = ["%s-%s" % (prefix, name) for name in names]
    admin_checks(c, admin, topics, prefix)
    base = int(time.time() * 1000) - 3600 * 1000
    for name, topic in zip(names, topics):
        produce(c, bootstrap, name, topic, base)
        consume(c, bootstrap, name, topic, base)
    admin.close()
    c.finish()


if __name__ == "__main__":
    main()
