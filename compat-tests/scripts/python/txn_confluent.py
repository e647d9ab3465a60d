#!/usr/bin/env python3
"""Exactly-once consume-transform-produce with confluent-kafka-python.

    txn_confluent.py BOOTSTRAP INPUT OUTPUT GROUP N

A group consumer at read_committed reads INPUT; for every batch a transactional
producer writes one record per input record to OUTPUT (same partition, value
b"out:" + input value, header src = "topic/partition/offset") and commits the
consumer's positions with send_offsets_to_transaction. Every fourth batch is
aborted after its records were flushed, and the consumer is rewound to its
committed offsets, so the same input is produced again in a later transaction.
The script stops once N input records were committed and exits non-zero on any
error or after its deadline. The Go wrapper (TestTxnConfluentPython in
compat-tests/txn_test.go) checks the output: each input exactly once under
read_committed.
"""

import sys
import time

from confluent_kafka import (OFFSET_BEGINNING, Consumer, KafkaException,
                             Producer)

DEADLINE_S = 150
BATCH = 100
ABORT_EVERY = 4


def fail(msg):
    print("FAIL: " + msg, flush=True)
    sys.exit(1)


def rewind(consumer):
    """Seeks every assigned partition back to the group's committed offset."""
    for tp in consumer.committed(consumer.assignment(), timeout=10):
        if tp.offset < 0:
            tp.offset = OFFSET_BEGINNING
        consumer.seek(tp)


def main():
    if len(sys.argv) != 6:
        fail("usage: txn_confluent.py BOOTSTRAP INPUT OUTPUT GROUP N")
    bootstrap, topic_in, topic_out, group, n = sys.argv[1:6]
    n = int(n)
    deadline = time.monotonic() + DEADLINE_S

    producer = Producer({
        "bootstrap.servers": bootstrap,
        "transactional.id": group + "-txn",
        "transaction.timeout.ms": 20000,
        "linger.ms": 5,
    })
    producer.init_transactions(60)
    consumer = Consumer({
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "enable.auto.commit": False,
        "enable.auto.offset.store": False,
        "isolation.level": "read_committed",
        "auto.offset.reset": "earliest",
        "session.timeout.ms": 10000,
    })
    consumer.subscribe([topic_in])

    committed = batches = aborted = 0
    try:
        while committed < n:
            if time.monotonic() > deadline:
                fail("%d of %d records committed at the deadline" % (committed, n))
            msgs = consumer.consume(num_messages=BATCH, timeout=0.5)
            msgs = [m for m in msgs if m.error() is None]
            if not msgs:
                continue
            batches += 1
            producer.begin_transaction()
            for m in msgs:
                src = "%s/%d/%d" % (m.topic(), m.partition(), m.offset())
                producer.produce(topic_out, value=b"out:" + m.value(), key=m.key(),
                                 partition=m.partition(), headers=[("src", src.encode())])
            if batches % ABORT_EVERY == 0:
                if producer.flush(10) != 0:
                    fail("records still unflushed before the abort")
                producer.abort_transaction(30)
                aborted += 1
                rewind(consumer)
                continue
            positions = consumer.position(consumer.assignment())
            producer.send_offsets_to_transaction(positions, consumer.consumer_group_metadata(), 30)
            producer.commit_transaction(30)
            committed += len(msgs)
    except KafkaException as e:
        fail("after %d committed records: %s" % (committed, e))
    finally:
        consumer.close()
    print("committed %d records in %d batches, %d aborted" % (committed, batches, aborted), flush=True)
    if committed != n:
        fail("committed %d records, want %d" % (committed, n))


if __name__ == "__main__":
    main()
