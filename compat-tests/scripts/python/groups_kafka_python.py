"""groups_kafka_python runs the consumer-group scenario with kafka-python against a samsa
broker and exits non-zero on any failed check.

    /usr/bin/python3 groups_kafka_python.py BOOTSTRAP TOPIC

TOPIC must exist with PARTITIONS partitions (the Go wrapper, groups_scripts_test.go,
creates it with kadm). Three KafkaConsumer(group_id=...) members, each polled by its own
thread (kafka-python 2.0's poll blocks while it joins, so one thread cannot drive three),
join group A with auto-commit off; each commits synchronously after every poll that
returned records. Once DescribeGroups shows the group Stable with all three (told apart
by client_id) and every partition assigned once, and the members' rebalance listeners
agree, BATCH records are produced (record i to partition i % PARTITIONS). Checks: every
record consumed exactly once, each partition by the member the broker assigned it to.
Once the committed offsets reach the end offsets, one member close()s (LeaveGroup);
after the two left are Stable with all partitions, a second batch must be consumed
exactly once by them, with no record of the first batch again. Finally one consumer in
group B reads both batches from the start, each once. Every wait has a deadline.
"""

import sys
import threading
import time

from kafka import ConsumerRebalanceListener, KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition

PARTITIONS = 12
BATCH = 3000
WAIT_S = 60.0
RUN_S = 240.0


class Checks:
    def __init__(self):
        self.failures = 0

    def check(self, ok, what):
        print(("ok   " if ok else "FAIL ") + what)
        if not ok:
            self.failures += 1
        return ok


def wait_for(what, cond, timeout=WAIT_S):
    """wait_for polls cond every 20 ms until it returns a truthy value, or raises."""
    deadline = time.monotonic() + timeout
    last = None
    while True:
        try:
            v = cond()
            if v:
                return v
        except Exception as e:  # a transient admin error: retry until the deadline
            last = e
        if time.monotonic() > deadline:
            raise TimeoutError("timed out after %.0fs waiting for %s%s" % (timeout, what, ": %r" % last if last else ""))
        time.sleep(0.02)


class Sink:
    """Sink collects what the members of one group consumed."""

    def __init__(self):
        self.lock = threading.Lock()
        self.recs = []  # (member, partition, offset, value)

    def add(self, recs):
        with self.lock:
            self.recs.extend(recs)

    def snapshot(self):
        with self.lock:
            return list(self.recs)

    def count(self):
        with self.lock:
            return len(self.recs)


class Member(ConsumerRebalanceListener):
    """Member is one group member, polled by its own thread until stopped."""

    def __init__(self, bootstrap, topic, group, name, sink):
        self.topic, self.group, self.name, self.sink = topic, group, name, sink
        self.bootstrap = bootstrap
        self.lock = threading.Lock()
        self.assigned = []
        self.joins = 0
        self.errors = []
        self.stop = threading.Event()
        self.ready = threading.Event()
        self.thread = threading.Thread(target=self.run, name=name, daemon=True)
        self.thread.start()

    def on_partitions_revoked(self, revoked):
        with self.lock:
            self.assigned = []

    def on_partitions_assigned(self, assigned):
        ps = sorted(tp.partition for tp in assigned if tp.topic == self.topic)
        with self.lock:
            self.assigned = ps
            self.joins += 1
        print("%s joined %s: partitions %s" % (self.name, self.group, ps))

    def snapshot(self):
        with self.lock:
            return list(self.assigned), self.joins

    def run(self):
        try:
            c = KafkaConsumer(bootstrap_servers=self.bootstrap, group_id=self.group, client_id=self.name,
                              enable_auto_commit=False, auto_offset_reset="earliest",
                              session_timeout_ms=10000, heartbeat_interval_ms=500,
                              max_poll_interval_ms=30000, fetch_max_wait_ms=250,
                              request_timeout_ms=30500)
        except Exception as e:
            self.errors.append("constructing: %r" % e)
            self.ready.set()
            return
        try:
            c.subscribe(topics=[self.topic], listener=self)
            self.ready.set()
            while not self.stop.is_set():
                batches = c.poll(timeout_ms=100)
                got = [(self.name, r.partition, r.offset, r.value.decode())
                       for recs in batches.values() for r in recs]
                if got:
                    self.sink.add(got)
                    c.commit()
        except Exception as e:
            self.errors.append(repr(e))
            print("%s: %r" % (self.name, e))
        finally:
            c.close(autocommit=False)

    def leave(self):
        self.stop.set()
        self.thread.join(WAIT_S)
        return not self.thread.is_alive()


def stable_owners(admin, group, names):
    """stable_owners returns partition -> client_id when the group is Stable with exactly
    the members names and every partition assigned to one of them, else None."""
    g = admin.describe_consumer_groups([group])[0]
    if g.state != "Stable" or sorted(m.client_id for m in g.members) != sorted(names):
        return None
    owners = {}
    for m in g.members:
        if not m.member_assignment:
            return None
        for topic, ps in m.member_assignment.assignment:
            for p in ps:
                if p in owners:
                    return None
                owners[p] = m.client_id
    return owners if len(owners) == PARTITIONS else None


def wait_stable(admin, group, members):
    def cond():
        owners = stable_owners(admin, group, [m.name for m in members])
        if owners is None:
            return None
        for m in members:
            ps, _ = m.snapshot()
            if sorted(p for p, o in owners.items() if o == m.name) != ps:
                return None
        return owners
    return wait_for("group %s stable with %s" % (group, [m.name for m in members]), cond)


def produce_batch(producer, topic, tag):
    values = []
    futures = []
    for i in range(BATCH):
        v = "%s-%d" % (tag, i)
        values.append(v)
        futures.append(producer.send(topic, key=v.encode(), value=v.encode(), partition=i % PARTITIONS))
    producer.flush(timeout=WAIT_S)
    for f in futures:
        f.get(timeout=WAIT_S)
    return values


def committed_at_end(admin, consumer, topic, group):
    tps = [TopicPartition(topic, p) for p in range(PARTITIONS)]
    ends = consumer.end_offsets(tps)
    got = admin.list_consumer_group_offsets(group)
    return all(tp in got and got[tp].offset == ends[tp] for tp in tps)


def check_once(c, what, recs, want, owners):
    count = {}
    for r in recs:
        count[r[3]] = count.get(r[3], 0) + 1
    missing = sum(1 for v in want if v not in count)
    dup = sum(1 for v in want if count.get(v, 0) > 1)
    wantset = set(want)
    extra = sum(1 for v in count if v not in wantset)
    c.check(missing == 0 and dup == 0 and extra == 0,
            "%s: %d records each consumed once (missing %d, duplicated %d, unexpected %d)"
            % (what, len(want), missing, dup, extra))
    keys = set((r[1], r[2]) for r in recs)
    c.check(len(keys) == len(recs), "%s: no (partition, offset) delivered twice (%d deliveries, %d distinct)"
            % (what, len(recs), len(keys)))
    if owners is not None:
        seen = {}
        wrong = 0
        for r in recs:
            seen.setdefault(r[1], set()).add(r[0])
            if owners.get(r[1]) != r[0]:
                wrong += 1
        shared = sum(1 for s in seen.values() if len(s) > 1)
        c.check(shared == 0 and wrong == 0, "%s: no partition consumed by two members (%d shared, %d records off their assigned member)"
                % (what, shared, wrong))


def main():
    if len(sys.argv) != 3:
        print("usage: groups_kafka_python.py BOOTSTRAP TOPIC", file=sys.stderr)
        return 2
    bootstrap, topic = sys.argv[1:]
    timer = threading.Timer(RUN_S, lambda: (print("FAIL: whole run exceeded %.0fs" % RUN_S, flush=True), __import__("os")._exit(1)))
    timer.daemon = True
    timer.start()

    c = Checks()
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="admin")
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=5)
    probe = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None, client_id="probe")
    group_a, group_b = topic + "-a", topic + "-b"
    members = []
    try:
        wait_for("%s with %d partitions" % (topic, PARTITIONS),
                 lambda: len(probe.partitions_for_topic(topic) or ()) == PARTITIONS)
        sink_a = Sink()
        t0 = time.monotonic()
        members = [Member(bootstrap, topic, group_a, n, sink_a) for n in ("c1", "c2", "c3")]
        owners = wait_stable(admin, group_a, members)
        print("group %s: 3 members stable in %.0f ms: %s" % (group_a, (time.monotonic() - t0) * 1000, sorted(owners.items())))

        batch1 = produce_batch(producer, topic, "b1")
        t0 = time.monotonic()
        wait_for("%s to consume batch 1" % group_a, lambda: sink_a.count() >= BATCH)
        print("batch 1 consumed in %.0f ms" % ((time.monotonic() - t0) * 1000))
        wait_for("%s commits to reach the end offsets" % group_a, lambda: committed_at_end(admin, probe, topic, group_a))
        check_once(c, "batch 1, 3 members", sink_a.snapshot(), batch1, owners)
        n1 = sink_a.count()

        leaver = members.pop()
        t0 = time.monotonic()
        c.check(leaver.leave(), "%s closed within %.0fs" % (leaver.name, WAIT_S))
        owners = wait_stable(admin, group_a, members)
        print("%s left; 2 members stable in %.0f ms: %s" % (leaver.name, (time.monotonic() - t0) * 1000, sorted(owners.items())))
        c.check(all(m.snapshot()[1] >= 2 for m in members), "remaining members rejoined after %s left" % leaver.name)

        batch2 = produce_batch(producer, topic, "b2")
        t0 = time.monotonic()
        wait_for("%s to consume batch 2" % group_a, lambda: sink_a.count() >= n1 + BATCH)
        print("batch 2 consumed in %.0f ms" % ((time.monotonic() - t0) * 1000))
        wait_for("%s commits to reach the end offsets" % group_a, lambda: committed_at_end(admin, probe, topic, group_a))
        recs = sink_a.snapshot()
        check_once(c, "batch 2, 2 members", recs[n1:], batch2, owners)
        check_once(c, "group %s, both batches" % group_a, recs, batch1 + batch2, None)

        sink_b = Sink()
        t0 = time.monotonic()
        members.append(Member(bootstrap, topic, group_b, "d1", sink_b))
        wait_for("%s to consume both batches" % group_b, lambda: sink_b.count() >= 2 * BATCH)
        print("group %s read %d records in %.0f ms" % (group_b, 2 * BATCH, (time.monotonic() - t0) * 1000))
        check_once(c, "group %s, both batches" % group_b, sink_b.snapshot(), batch1 + batch2, None)
        for m in members + [leaver]:
            c.check(not m.errors, "%s had no errors %s" % (m.name, m.errors))
    finally:
        for m in members:
            if not m.leave():
                print("%s did not stop within %.0fs" % (m.name, WAIT_S))
        producer.close(timeout=10)
        probe.close()
        admin.close()
    timer.cancel()
    if c.failures:
        print("%d check(s) failed" % c.failures)
        return 1
    print("all group checks passed")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Exception as e:
        print("FAIL: %r" % e)
        sys.exit(1)
