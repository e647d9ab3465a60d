"""aiokafka_check drives a broker with aiokafka from PyPI (asyncio, pure Python, the codecs from
cramjam) and exits non-zero on any failed check.

    VENV/bin/python aiokafka_check.py BOOTSTRAP PREFIX

  - the admin client creates the topics and lists them;
  - an idempotent producer writes every codec, read back by assign() in order;
  - a consumer group of two members (the classic protocol: aiokafka has no KIP-848 client)
    splits the partitions, consumes every record, commits, and the group's offsets are the
    end offsets afterwards;
  - a transactional producer commits and aborts batches; read_committed sees only the
    committed ones, read_uncommitted all.
It runs unchanged against samsa and against Apache Kafka 4.4 (compat-tests/pypi_test.go).
"""

import asyncio
import sys
import time

import aiokafka
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic

import layout

CODECS = [None, "gzip", "snappy", "lz4", "zstd"]
PARTITIONS = 6
RECORDS = 600
DEADLINE_S = 90


async def create_topics(c, bootstrap, names):
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        res = await admin.create_topics([NewTopic(n, num_partitions=PARTITIONS, replication_factor=1) for n in names])
        errs = [e for e in res.topic_errors if e[1] != 0]
        c.check(not errs, "create_topics %s: errors %s" % (names, errs))
        # Kafka answers CreateTopics once its controller committed them;
        # its broker's metadata cache lists them a moment later: poll,
        # bounded, as a client would.
        deadline = time.monotonic() + 30
        listed = await admin.list_topics()
        while not set(names) <= set(listed) and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
            listed = await admin.list_topics()
        c.check(set(names) <= set(listed), "list_topics holds %s" % names)
    finally:
        await admin.close()


async def read_all(bootstrap, topic, want, isolation="read_uncommitted", seconds=60):
    cons = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, isolation_level=isolation)
    await cons.start()
    got = {p: [] for p in range(PARTITIONS)}
    try:
        tps = [TopicPartition(topic, p) for p in range(PARTITIONS)]
        cons.assign(tps)
        await cons.seek_to_beginning(*tps)
        deadline = time.monotonic() + seconds
        while sum(len(v) for v in got.values()) < want and time.monotonic() < deadline:
            batches = await cons.getmany(timeout_ms=500)
            for tp, msgs in batches.items():
                got[tp.partition].extend(m.value for m in msgs)
    finally:
        await cons.stop()
    return got


async def codecs(c, bootstrap, prefix):
    topics = ["%s-%s" % (prefix, codec or "none") for codec in CODECS]
    await create_topics(c, bootstrap, topics)
    for codec, topic in zip(CODECS, topics):
        p = AIOKafkaProducer(bootstrap_servers=bootstrap, enable_idempotence=True, acks="all",
                             compression_type=codec, linger_ms=5)
        await p.start()
        name = (codec or "none").encode()
        try:
            futs = [await p.send(topic, key=b"k%d" % i, value=b"%s-%d" % (name, i), partition=i % PARTITIONS)
                    for i in range(RECORDS)]
            metas = await asyncio.gather(*futs, return_exceptions=True)
        finally:
            await p.stop()
        errs = [m for m in metas if isinstance(m, Exception)]
        c.check(not errs, "idempotent produce %d records compression_type=%s: errors %s" % (RECORDS, codec, errs[:3]))
        got = await read_all(bootstrap, topic, RECORDS)
        want = {q: [b"%s-%d" % (name, i) for i in range(q, RECORDS, PARTITIONS)] for q in range(PARTITIONS)}
        c.check(got == want, "read back %s by assign(): %d records, in order per partition (want %d)"
                % (topic, sum(len(v) for v in got.values()), RECORDS))


async def group(c, bootstrap, prefix):
    topic = prefix + "-group"
    gid = prefix + "-g"
    await create_topics(c, bootstrap, [topic])
    p = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all")
    await p.start()
    try:
        for i in range(RECORDS):
            await p.send(topic, value=b"v%d" % i, partition=i % PARTITIONS)
        await p.flush()
    finally:
        await p.stop()

    members = [AIOKafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=gid, enable_auto_commit=False,
                                auto_offset_reset="earliest", session_timeout_ms=10000,
                                heartbeat_interval_ms=500, client_id="%s-m%d" % (gid, i)) for i in range(2)]
    seen = set()
    try:
        await members[0].start()
        await members[1].start()

        def balanced():
            a = [set(m.assignment()) for m in members]
            return all(a) and not (a[0] & a[1]) and len(a[0] | a[1]) == PARTITIONS

        deadline = time.monotonic() + DEADLINE_S
        while not (balanced() and len(seen) >= RECORDS) and time.monotonic() < deadline:
            for m in members:
                batches = await m.getmany(timeout_ms=200)
                for tp, msgs in batches.items():
                    seen.update((tp.partition, x.offset) for x in msgs)
        c.check(balanced(), "%s: two members own disjoint, non-empty assignments covering %d partitions (%s)"
                % (gid, PARTITIONS, [len(m.assignment()) for m in members]))
        c.check(len(seen) == RECORDS, "%s consumed %d distinct records of %d" % (gid, len(seen), RECORDS))
        for m in members:
            await m.commit()
    finally:
        for m in members:
            await m.stop()

    probe = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=gid, enable_auto_commit=False)
    await probe.start()
    try:
        got = [await probe.committed(TopicPartition(topic, q)) for q in range(PARTITIONS)]
    finally:
        await probe.stop()
    want = [len(range(q, RECORDS, PARTITIONS)) for q in range(PARTITIONS)]
    c.check(got == want, "%s committed offsets: %s (want the end offsets %s)" % (gid, got, want))


async def transactions(c, bootstrap, prefix):
    topic = prefix + "-txn"
    await create_topics(c, bootstrap, [topic])
    p = AIOKafkaProducer(bootstrap_servers=bootstrap, transactional_id=prefix + "-tid")
    await p.start()
    committed = []
    i = 0
    try:
        for outcome, n in [("commit", 120), ("abort", 60), ("commit", 90)]:
            await p.begin_transaction()
            batch = []
            for _ in range(n):
                v = b"%s-%d" % (outcome.encode(), i)
                await p.send(topic, value=v, partition=i % PARTITIONS)
                batch.append(v)
                i += 1
            await p.flush()
            if outcome == "commit":
                await p.commit_transaction()
                committed.extend(batch)
            else:
                await p.abort_transaction()
    finally:
        await p.stop()
    got = await read_all(bootstrap, topic, len(committed), "read_committed", seconds=30)
    values = sorted(v for vs in got.values() for v in vs)
    c.check(values == sorted(committed), "read_committed %s: %d records, exactly the committed ones (want %d)"
            % (topic, len(values), len(committed)))
    got = await read_all(bootstrap, topic, i, "read_uncommitted", seconds=30)
    n = sum(len(v) for v in got.values())
    c.check(n == i, "read_uncommitted %s: %d records, committed and aborted (want %d)" % (topic, n, i))


async def main():
    if len(sys.argv) != 3:
        print("usage: aiokafka_check.py BOOTSTRAP PREFIX", file=sys.stderr)
        sys.exit(2)
    bootstrap, prefix = sys.argv[1], sys.argv[2]
    c = layout.Checks("aiokafka")
    c.note("aiokafka %s" % aiokafka.__version__)
    await codecs(c, bootstrap, prefix)
    await group(c, bootstrap, prefix)
    await transactions(c, bootstrap, prefix)
    c.finish()


if __name__ == "__main__":
    asyncio.run(main())
