package samsa.compat;

import static samsa.compat.Checks.log;
import static samsa.compat.Checks.require;
import static samsa.compat.GroupChecks.PARTITIONS;
import static samsa.compat.GroupChecks.await;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.CooperativeStickyAssignor;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.GroupType;
import org.apache.kafka.common.TopicPartition;

/**
 * MigrationChecks rolls a live group of three consumers from group.protocol=classic to consumer
 * (KIP-848) one member at a time and back, as a rolling restart does, while a producer keeps
 * writing (Kafka's online migration, group.consumer.migration.policy=bidirectional). No member may
 * fail, the live members must split the six partitions after every step, the group must be a
 * consumer group once every member uses KIP-848 and a classic group again at the end, and every
 * record the producer had acknowledged must be consumed, with the committed offsets at the end of
 * every partition.
 */
final class MigrationChecks {
    private final ClientChecks c;
    private final GroupChecks g;

    MigrationChecks(ClientChecks c, GroupChecks g) {
        this.c = c;
        this.g = g;
    }

    /** Producer writes to every partition in turn until stopped, remembering what was acknowledged. */
    final class Producer implements Runnable {
        final String topic;
        final Map<TopicPartition, Set<Long>> acked = new ConcurrentHashMap<>();
        final AtomicLong sent = new AtomicLong();
        final AtomicReference<Throwable> error = new AtomicReference<>();
        volatile boolean stop;
        final Thread thread;

        Producer(String topic) {
            this.topic = topic;
            this.thread = new Thread(this, "migration-producer");
            thread.start();
        }

        @Override
        public void run() {
            try (var p = c.producer(Map.of(ProducerConfig.ACKS_CONFIG, "all"))) {
                for (long i = 0; !stop; i++) {
                    int part = (int) (i % PARTITIONS);
                    byte[] v = ("v" + i).getBytes(StandardCharsets.UTF_8);
                    p.send(new ProducerRecord<>(topic, part, ("k" + i).getBytes(StandardCharsets.UTF_8), v), (md, e) -> {
                        if (e != null) {
                            error.compareAndSet(null, e);
                            return;
                        }
                        acked.computeIfAbsent(new TopicPartition(md.topic(), md.partition()), k -> ConcurrentHashMap.newKeySet()).add(md.offset());
                    });
                    sent.incrementAndGet();
                    if (i % 20 == 19) {
                        p.flush();
                        Thread.sleep(20); // pace: about 1,000 records a second, bounded by the stop flag
                    }
                }
                p.flush();
            } catch (Throwable e) {
                error.compareAndSet(null, e);
            }
        }

        void stopAndJoin() throws InterruptedException {
            stop = true;
            thread.join(TimeUnit.SECONDS.toMillis(60));
            require(!thread.isAlive(), "the producer did not stop within 60 s");
            require(error.get() == null, "the producer failed: %s", error.get());
        }

        long ackedCount() {
            long n = 0;
            for (Set<Long> s : acked.values()) {
                n += s.size();
            }
            return n;
        }
    }

    /** split tells whether the live members own every partition exactly once, each some. */
    static boolean split(List<GroupChecks.Member> live) {
        Set<TopicPartition> u = new HashSet<>();
        int n = 0;
        for (GroupChecks.Member m : live) {
            if (m.assignment.isEmpty()) {
                return false;
            }
            u.addAll(m.assignment);
            n += m.assignment.size();
        }
        return u.size() == PARTITIONS && n == PARTITIONS;
    }

    /** onlineMigration rolls classic members with the Java client's default assignors (range first: eager). */
    void onlineMigration() throws Exception {
        roll("migration", Map.of(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "classic"));
    }

    /** onlineMigrationCooperative rolls classic members using the CooperativeStickyAssignor (owned partitions reported). */
    void onlineMigrationCooperative() throws Exception {
        roll("migration-coop", Map.of(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "classic",
                ConsumerConfig.PARTITION_ASSIGNMENT_STRATEGY_CONFIG, CooperativeStickyAssignor.class.getName()));
    }

    void roll(String kind, Map<String, Object> classic) throws Exception {
        GroupChecks.Run r = g.new Run(kind);
        Map<String, Object> consumer = Map.of(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "consumer");
        Producer prod = new Producer(r.topic);
        List<GroupChecks.Member> live = new ArrayList<>();
        List<GroupChecks.Member> all = new ArrayList<>();
        try {
            for (int i = 1; i <= 3; i++) {
                GroupChecks.Member m = r.member("classic-" + i, classic);
                live.add(m);
                all.add(m);
            }
            await("three classic members to split the partitions", 90, () -> split(live), live);
            describe(r.group, GroupType.CLASSIC, 3);
            // Upgrade, then downgrade, one member at a time.
            String[][] steps = {{"consumer", "classic"}, {"classic", "consumer"}};
            for (String[] step : steps) {
                Map<String, Object> props = step[0].equals("consumer") ? consumer : classic;
                for (int i = 0; i < 3; i++) {
                    GroupChecks.Member old = live.remove(0);
                    old.stopAndJoin();
                    long before = prod.ackedCount();
                    GroupChecks.Member m = r.member(step[0] + "-" + (i + 1), props);
                    live.add(m);
                    all.add(m);
                    await("the group to settle after " + old.name + " was replaced by " + m.name, 120, () -> split(live), live);
                    await("records to keep being produced", 60, () -> prod.ackedCount() > before + 50, prod.ackedCount());
                    log("%s replaced %s: %s", m.name, old.name, live);
                }
                describe(r.group, step[0].equals("consumer") ? GroupType.CONSUMER : GroupType.CLASSIC, 3);
            }
            prod.stopAndJoin();
            await("every acknowledged record to be consumed", 120, () -> allSeen(prod, r), prod.ackedCount(), r.seenCounts(), live);
            await("the committed offsets to reach the end of every partition", 60, () -> committedToEnd(r, prod), live);
            log("produced %d records, all consumed through %d members", prod.ackedCount(), all.size());
        } finally {
            prod.stop = true;
            for (GroupChecks.Member m : live) {
                m.stop = true;
            }
        }
        for (GroupChecks.Member m : live) {
            m.stopAndJoin();
        }
    }

    void describe(String group, GroupType type, int members) throws Exception {
        var d = c.admin.describeConsumerGroups(List.of(group)).all().get(30, TimeUnit.SECONDS).get(group);
        require(d.type() == type && d.members().size() == members, "describeConsumerGroups(%s): type %s with %d members, want %s with %d: %s",
                group, d.type(), d.members().size(), type, members, d);
    }

    static boolean allSeen(Producer prod, GroupChecks.Run r) {
        for (var e : prod.acked.entrySet()) {
            Set<Long> s = r.seen.get(e.getKey());
            if (s == null || !s.containsAll(e.getValue())) {
                return false;
            }
        }
        return true;
    }

    boolean committedToEnd(GroupChecks.Run r, Producer prod) {
        try {
            Map<TopicPartition, OffsetSpec> req = new HashMap<>();
            for (int p = 0; p < PARTITIONS; p++) {
                req.put(new TopicPartition(r.topic, p), OffsetSpec.latest());
            }
            var ends = c.admin.listOffsets(req).all().get(10, TimeUnit.SECONDS);
            var offs = c.admin.listConsumerGroupOffsets(r.group).partitionsToOffsetAndMetadata().get(10, TimeUnit.SECONDS);
            for (var e : ends.entrySet()) {
                var om = offs.get(e.getKey());
                if (om == null || om.offset() != e.getValue().offset()) {
                    return false;
                }
            }
            return true;
        } catch (Exception e) {
            return false;
        }
    }
}
