"""pypi_confluent_check drives a broker with confluent-kafka-python 2.x from PyPI (the newest
librdkafka, in the virtual environment .ci/run makes) and exits non-zero on any failed check.

    VENV/bin/python pypi_confluent_check.py BOOTSTRAP PREFIX

The Debian package (1.7.0) is checked by confluent_kafka_check.py; this one covers what only
the 2.x line has or does differently:
  - idempotent produce with every codec, read back by assign() in order;
  - a consumer group of two members, once with group.protocol=classic (cooperative-sticky)
    and once with group.protocol=consumer (KIP-848): disjoint assignments covering every
    partition, every record consumed, committed offsets at the end, and the group listed and
    described by the AdminClient with its type;
  - transactions: committed and aborted batches, read back with read_committed and
    read_uncommitted.
It runs unchanged against samsa and against Apache Kafka 4.4 (compat-tests/pypi_test.go).
"""

import sys
import time

from confluent_kafka import (Consumer, ConsumerGroupType, KafkaError, KafkaException, Producer, TopicPartition,
                             libversion)
from confluent_kafka.admin import AdminClient, NewTopic

import confluent_kafka
import layout

VERSION = confluent_kafka.__version__

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]
PARTITIONS = 6
RECORDS = 600
DEADLINE_S = 90


def create_topics(c, admin, names):
    futures = admin.create_topics([NewTopic(n, num_partitions=PARTITIONS, replication_factor=1) for n in names])
    errs = {}
    for n, f in futures.items():
        try:
            f.result(timeout=30)
        except Exception as e:  # noqa: BLE001 - the broker's error is the check's message
            errs[n] = e
    c.check(not errs, "create_topics %s: errors %s" % (names, errs))


def produce(c, bootstrap, topic, codec, n, extra=None):
    conf = {"bootstrap.servers": bootstrap, "enable.idempotence": True, "acks": "all",
            "compression.type": codec, "linger.ms": 5}
    conf.update(extra or {})
    p = Producer(conf)
    errors = []
    delivered = [0]

    def on_delivery(err, _msg):
        if err is not None:
            errors.append(err)
        else:
            delivered[0] += 1

    for i in range(n):
        p.produce(topic, key=b"k%d" % i, value=b"%s-%d" % (codec.encode(), i), partition=i % PARTITIONS,
                  on_delivery=on_delivery)
        p.poll(0)
    left = p.flush(60)
    c.check(left == 0 and not errors and delivered[0] == n,
            "idempotent produce %d records compression.type=%s to %s: %d delivered, errors %s"
            % (n, codec, topic, delivered[0], errors[:3]))


def read_all(bootstrap, topic, want, isolation="read_committed", seconds=60):
    """read_all reads topic from offset 0 of every partition by assign() until want records
    or the deadline, and returns {partition: [values]}."""
    cons = Consumer({"bootstrap.servers": bootstrap, "group.id": topic + "-reader", "enable.auto.commit": False,
                     "isolation.level": isolation})
    cons.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
    got = {p: [] for p in range(PARTITIONS)}
    deadline = time.monotonic() + seconds
    while sum(len(v) for v in got.values()) < want and time.monotonic() < deadline:
        for m in cons.consume(num_messages=500, timeout=0.5):
            if m.error() is None:
                got[m.partition()].append(m.value())
    cons.close()
    return got


def codecs(c, bootstrap, prefix):
    topics = ["%s-%s" % (prefix, codec) for codec in CODECS]
    create_topics(c, AdminClient({"bootstrap.servers": bootstrap}), topics)
    for codec, topic in zip(CODECS, topics):
        produce(c, bootstrap, topic, codec, RECORDS)
        got = read_all(bootstrap, topic, RECORDS, "read_uncommitted")
        want = {p: [b"%s-%d" % (codec.encode(), i) for i in range(p, RECORDS, PARTITIONS)] for p in range(PARTITIONS)}
        c.check(got == want, "read back %s by assign(): %d records, in order per partition (want %d)"
                % (topic, sum(len(v) for v in got.values()), RECORDS))


def group(c, bootstrap, prefix, protocol):
    topic = "%s-group-%s" % (prefix, protocol)
    gid = "%s-g-%s" % (prefix, protocol)
    admin = AdminClient({"bootstrap.servers": bootstrap})
    create_topics(c, admin, [topic])
    produce(c, bootstrap, topic, "none", RECORDS)
    conf = {"bootstrap.servers": bootstrap, "group.id": gid, "enable.auto.commit": False,
            "auto.offset.reset": "earliest", "group.protocol": protocol}
    if protocol == "classic":
        conf.update({"partition.assignment.strategy": "cooperative-sticky", "session.timeout.ms": 10000,
                     "heartbeat.interval.ms": 500})
    seen = set()
    dups = [0]
    commit_errors = []

    def on_commit(err, partitions):
        # A commit that races a rebalance may fail (ILLEGAL_GENERATION,
        # REBALANCE_IN_PROGRESS, fenced member epoch); the records are read again.
        if err is not None:
            commit_errors.append(err.name())
        for tp in partitions or []:
            if tp.error is not None:
                commit_errors.append(tp.error.name())

    conf["on_commit"] = on_commit
    members = [Consumer(dict(conf, **{"client.id": "%s-m%d" % (gid, i)})) for i in range(2)]

    def poll(m):
        for msg in m.consume(num_messages=200, timeout=0.2):
            if msg.error() is not None:
                if msg.error().code() != KafkaError._PARTITION_EOF:
                    c.note("%s consume error %s" % (gid, msg.error()))
                continue
            k = (msg.partition(), msg.offset())
            if k in seen:
                dups[0] += 1
            seen.add(k)
            if msg.offset() % 50 == 0:
                # Asynchronous: the two members are polled in turn by this one
                # thread, and a synchronous commit queued behind the member's
                # JoinGroup blocked it for the request timeout while the other
                # member could not be polled to finish the rebalance (seen on
                # Kafka 4.4 under load: the group stayed in PreparingRebalance).
                try:
                    m.commit(message=msg, asynchronous=True)
                except KafkaException as e:
                    commit_errors.append(e.args[0].name() if e.args else str(e))

    members[0].subscribe([topic])
    deadline = time.monotonic() + DEADLINE_S
    while len(members[0].assignment()) < PARTITIONS and time.monotonic() < deadline:
        poll(members[0])
    c.check(len(members[0].assignment()) == PARTITIONS,
            "%s alone owns all %d partitions (has %d)" % (gid, PARTITIONS, len(members[0].assignment())))
    members[1].subscribe([topic])

    def balanced():
        a = [set((tp.topic, tp.partition) for tp in m.assignment()) for m in members]
        return all(a) and not (a[0] & a[1]) and len(a[0] | a[1]) == PARTITIONS

    while not (balanced() and len(seen) >= RECORDS) and time.monotonic() < deadline:
        for m in members:
            poll(m)
    # Every record was seen, but a partition that moved in a rebalance may
    # have been read by its previous owner only: its new owner has no
    # position there yet, and its final commit would leave the partition's
    # committed offset where the previous owner's periodic commit put it.
    # Poll until each member's position is at the end of every partition it
    # owns.
    want_end = {p: len(range(p, RECORDS, PARTITIONS)) for p in range(PARTITIONS)}

    def at_end():
        for m in members:
            for tp in m.position(m.assignment()):
                if tp.offset != want_end[tp.partition]:
                    return False
        return True

    while not (balanced() and at_end()) and time.monotonic() < deadline:
        for m in members:
            poll(m)
    sizes = [len(m.assignment()) for m in members]
    c.check(balanced(), "%s: two members own disjoint, non-empty assignments covering %d partitions (%s)"
            % (gid, PARTITIONS, sizes))
    c.check(len(seen) == RECORDS, "%s consumed %d distinct records of %d (%d seen twice after rebalances, "
            "commits refused during rebalances: %s)" % (gid, len(seen), RECORDS, dups[0], sorted(set(commit_errors))))

    listed = admin.list_consumer_groups(request_timeout=30).result()
    mine = [g for g in listed.valid if g.group_id == gid]
    want_type = ConsumerGroupType.CONSUMER if protocol == "consumer" else ConsumerGroupType.CLASSIC
    c.check(len(mine) == 1 and mine[0].type == want_type,
            "list_consumer_groups lists %s with type %s (got %s)"
            % (gid, want_type, [(g.group_id, g.type, g.state) for g in mine]))
    desc = admin.describe_consumer_groups([gid], request_timeout=30)[gid].result()
    c.check(len(desc.members) == 2 and str(desc.state).endswith("STABLE"),
            "describe_consumer_groups %s: %d members, state %s" % (gid, len(desc.members), desc.state))

    for m in members:
        m.commit(asynchronous=False)
        m.close()
    probe = Consumer({"bootstrap.servers": bootstrap, "group.id": gid})
    committed = probe.committed([TopicPartition(topic, p) for p in range(PARTITIONS)], timeout=30)
    want = [len(range(p, RECORDS, PARTITIONS)) for p in range(PARTITIONS)]
    got = [tp.offset for tp in sorted(committed, key=lambda tp: tp.partition)]
    probe.close()
    c.check(got == want, "%s committed offsets after close: %s (want the end offsets %s)" % (gid, got, want))


def transactions(c, bootstrap, prefix):
    topic = prefix + "-txn"
    create_topics(c, AdminClient({"bootstrap.servers": bootstrap}), [topic])
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": prefix + "-tid", "linger.ms": 5})
    p.init_transactions(30)
    plan = [("commit", 120), ("abort", 60), ("commit", 90)]
    committed = []
    i = 0
    for outcome, n in plan:
        p.begin_transaction()
        batch = []
        for _ in range(n):
            v = b"%s-%d" % (outcome.encode(), i)
            p.produce(topic, value=v, partition=i % PARTITIONS)
            batch.append(v)
            i += 1
        p.flush(30)
        if outcome == "commit":
            p.commit_transaction(30)
            committed.extend(batch)
        else:
            p.abort_transaction(30)
    total = i
    got = read_all(bootstrap, topic, len(committed), "read_committed", seconds=30)
    values = sorted(v for vs in got.values() for v in vs)
    c.check(values == sorted(committed), "read_committed %s: %d records, exactly the committed ones (want %d)"
            % (topic, len(values), len(committed)))
    got = read_all(bootstrap, topic, total, "read_uncommitted", seconds=30)
    n = sum(len(v) for v in got.values())
    c.check(n == total, "read_uncommitted %s: %d records, committed and aborted (want %d)" % (topic, n, total))


def main():
    if len(sys.argv) != 3:
        print("usage: pypi_confluent_check.py BOOTSTRAP PREFIX", file=sys.stderr)
        sys.exit(2)
    bootstrap, prefix = sys.argv[1], sys.argv[2]
    c = layout.Checks("confluent-kafka-python (PyPI)")
    c.note("confluent-kafka-python %s, librdkafka %s" % (VERSION, libversion()[0]))
    c.check(int(VERSION.split(".")[0]) >= 2, "confluent-kafka 2.x or newer (got %s)" % VERSION)
    codecs(c, bootstrap, prefix)
    group(c, bootstrap, prefix, "classic")
    group(c, bootstrap, prefix, "consumer")
    transactions(c, bootstrap, prefix)
    c.finish()


if __name__ == "__main__":
    main()
