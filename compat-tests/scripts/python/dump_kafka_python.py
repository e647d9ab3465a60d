"""dump_kafka_python reads partitions of a topic from offset 0 up to given end offsets
with kafka-python (assign, no group) and prints one line per record:

    /usr/bin/python3 dump_kafka_python.py BOOTSTRAP TOPIC END0 [END1 ...]

Each line is "PARTITION OFFSET KEY VALUE", with NULL for a null key or value. The
compaction test (compat-tests/compaction_test.go) compares the output with what
franz-go reads. It exits non-zero when a partition is not read to its end in 60 s.
"""

import sys
import time

from kafka import KafkaConsumer, TopicPartition


def text(b):
    return "NULL" if b is None else b.decode()


def main():
    bootstrap, topic, ends = sys.argv[1], sys.argv[2], [int(e) for e in sys.argv[3:]]
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, group_id=None,
                             api_version_auto_timeout_ms=10000)
    tps = [TopicPartition(topic, p) for p in range(len(ends))]
    consumer.assign(tps)
    consumer.seek_to_beginning(*tps)
    deadline = time.time() + 60
    done = set()
    out = []
    while len(done) < len(ends):
        if time.time() > deadline:
            print("timed out; partitions done: %s" % sorted(done), file=sys.stderr)
            return 1
        for tp, msgs in consumer.poll(timeout_ms=500).items():
            for m in msgs:
                out.append("%d %d %s %s" % (tp.partition, m.offset, text(m.key), text(m.value)))
                if m.offset == ends[tp.partition] - 1:
                    done.add(tp.partition)
    consumer.close()
    print("\n".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
