package samsa.compat;

import static samsa.compat.Checks.log;
import static samsa.compat.Checks.require;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.stream.Collectors;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.CooperativeStickyAssignor;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.RangeAssignor;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.GroupType;
import org.apache.kafka.common.TopicPartition;

/**
 * GroupChecks runs two or three consumers of one group in their own threads over a six-partition
 * topic, with each group protocol the Java client has: classic with the eager RangeAssignor,
 * classic with the CooperativeStickyAssignor, classic with static membership, and the KIP-848
 * consumer protocol. Every record must be consumed, the partitions split between the members,
 * each member must fetch from its own partitions after the split, and the committed offsets must
 * reach the end of every partition.
 */
final class GroupChecks {
    static final int PARTITIONS = 6;
    static final int BATCH = 600; // records per produced batch, 100 per partition

    private final ClientChecks c;

    GroupChecks(ClientChecks c) {
        this.c = c;
    }

    /** Member is one consumer polling in its own thread; the KafkaConsumer never leaves it. */
    final class Member implements Runnable, ConsumerRebalanceListener {
        final String name;
        final Map<String, Object> props;
        final String topic;
        final Map<TopicPartition, Set<Long>> seen;
        final List<String> events = Collections.synchronizedList(new ArrayList<>());
        final Set<TopicPartition> fetchedAfterSplit = ConcurrentHashMap.newKeySet();
        volatile Set<TopicPartition> assignment = Set.of();
        volatile int generation = -1;
        volatile boolean split;
        volatile boolean stop;
        volatile Throwable error;
        final Thread thread;

        Member(String name, String topic, Map<TopicPartition, Set<Long>> seen, Map<String, Object> props) {
            this.name = name;
            this.topic = topic;
            this.seen = seen;
            this.props = props;
            this.thread = new Thread(this, name);
            thread.start();
        }

        @Override
        public void run() {
            try (KafkaConsumer<byte[], byte[]> consumer = c.consumer(props)) {
                consumer.subscribe(List.of(topic), this);
                while (!stop) {
                    var rs = consumer.poll(Duration.ofMillis(100));
                    for (var r : rs) {
                        TopicPartition tp = new TopicPartition(r.topic(), r.partition());
                        seen.computeIfAbsent(tp, k -> ConcurrentHashMap.newKeySet()).add(r.offset());
                        if (split) {
                            fetchedAfterSplit.add(tp);
                        }
                    }
                    assignment = Set.copyOf(consumer.assignment());
                    generation = consumer.groupMetadata().generationId();
                    if (!rs.isEmpty()) {
                        try {
                            consumer.commitSync(Duration.ofSeconds(30));
                        } catch (org.apache.kafka.common.errors.RebalanceInProgressException
                                 | org.apache.kafka.clients.consumer.CommitFailedException e) {
                            events.add("commit failed: " + e.getClass().getSimpleName());
                        }
                    }
                }
            } catch (Throwable e) {
                error = e;
            }
        }

        void stopAndJoin() throws InterruptedException {
            stop = true;
            thread.join(TimeUnit.SECONDS.toMillis(60));
            require(!thread.isAlive(), "%s did not close within 60 s", name);
            if (error != null) {
                throw new Checks.CheckFailed(name + " failed: " + error);
            }
        }

        @Override
        public void onPartitionsRevoked(Collection<TopicPartition> ps) {
            events.add("revoked " + names(ps));
        }

        @Override
        public void onPartitionsAssigned(Collection<TopicPartition> ps) {
            events.add("assigned " + names(ps));
        }

        @Override
        public void onPartitionsLost(Collection<TopicPartition> ps) {
            events.add("lost " + names(ps));
        }

        List<String> eventsCopy() {
            synchronized (events) {
                return new ArrayList<>(events);
            }
        }

        @Override
        public String toString() {
            return name + "{assignment=" + names(assignment) + ", generation=" + generation + ", events=" + eventsCopy()
                    + (error != null ? ", error=" + error : "") + "}";
        }
    }

    static String names(Collection<TopicPartition> ps) {
        return ps.stream().map(TopicPartition::partition).collect(Collectors.toCollection(TreeSet::new)).toString();
    }

    static void await(String what, int seconds, BooleanSupplier cond, Object... state) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
        while (!cond.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                List<String> s = new ArrayList<>();
                for (Object o : state) {
                    s.add(String.valueOf(o));
                }
                throw new Checks.CheckFailed("timed out after " + seconds + " s waiting for " + what + "; state: " + String.join("; ", s));
            }
            Thread.sleep(50); // polling interval; bounded by the deadline
        }
    }

    static boolean splitBetween(Set<TopicPartition> a, Set<TopicPartition> b) {
        if (a.isEmpty() || b.isEmpty()) {
            return false;
        }
        Set<TopicPartition> u = new HashSet<>(a);
        u.addAll(b);
        return u.size() == PARTITIONS && a.size() + b.size() == PARTITIONS;
    }

    /** Run is the state of one group scenario. */
    final class Run {
        final String topic;
        final String group;
        final Map<TopicPartition, Set<Long>> seen = new ConcurrentHashMap<>();
        int produced;

        Run(String kind) throws Exception {
            topic = c.topic("group-" + kind);
            group = "java-group-" + kind + "-" + c.run;
            c.createTopic(topic, PARTITIONS, null);
        }

        void produce() throws Exception {
            try (var p = c.producer(Map.of(ProducerConfig.ACKS_CONFIG, "all"))) {
                List<ClientChecks.Want> ws = new ArrayList<>();
                long now = System.currentTimeMillis();
                for (int i = 0; i < BATCH; i++) {
                    ws.add(new ClientChecks.Want(produced + i, i % PARTITIONS, "key-" + (produced + i), "v" + (produced + i), now));
                }
                ClientChecks.send(p, topic, ws);
            }
            produced += BATCH;
        }

        Member member(String name, Map<String, Object> extra) {
            Map<String, Object> props = new HashMap<>(extra);
            props.put(ConsumerConfig.GROUP_ID_CONFIG, group);
            props.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, 50);
            return new Member(name, topic, seen, props);
        }

        boolean allSeen() {
            int perPartition = produced / PARTITIONS;
            for (int p = 0; p < PARTITIONS; p++) {
                Set<Long> s = seen.get(new TopicPartition(topic, p));
                if (s == null || s.size() < perPartition) {
                    return false;
                }
            }
            return true;
        }

        boolean committedToEnd() {
            try {
                var offs = c.admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get(10, TimeUnit.SECONDS);
                for (int p = 0; p < PARTITIONS; p++) {
                    var om = offs.get(new TopicPartition(topic, p));
                    if (om == null || om.offset() != produced / PARTITIONS) {
                        return false;
                    }
                }
                return true;
            } catch (Exception e) {
                return false;
            }
        }

        Map<Integer, Integer> seenCounts() {
            Map<Integer, Integer> m = new HashMap<>();
            seen.forEach((tp, s) -> m.put(tp.partition(), s.size()));
            return m;
        }

        /**
         * twoMembers starts m1, waits for it to own all partitions, starts m2, waits for the split,
         * produces a second batch and waits until both are consumed and committed.
         */
        Member[] twoMembers(Map<String, Object> p1, Map<String, Object> p2) throws Exception {
            produce();
            Member m1 = member("m1", p1);
            await("m1 to own all " + PARTITIONS + " partitions", 60, () -> m1.assignment.size() == PARTITIONS, m1);
            Member m2 = member("m2", p2);
            await("the partitions to split between m1 and m2", 60, () -> splitBetween(m1.assignment, m2.assignment), m1, m2);
            await("the first batch to be consumed", 60, this::allSeen, seenCounts());
            m1.split = true;
            m2.split = true;
            produce();
            await("both batches to be consumed", 60, this::allSeen, seenCounts(), m1, m2);
            await("committed offsets to reach the end of every partition", 60, this::committedToEnd, m1, m2);
            for (Member m : new Member[] {m1, m2}) {
                require(!m.fetchedAfterSplit.isEmpty() && m.assignment.containsAll(m.fetchedAfterSplit),
                        "%s fetched partitions %s after the split, want a non-empty subset of its assignment %s", m.name, names(m.fetchedAfterSplit), names(m.assignment));
            }
            return new Member[] {m1, m2};
        }

        void checkDescribed(GroupType type, int members) throws Exception {
            var d = c.admin.describeConsumerGroups(List.of(group)).all().get(30, TimeUnit.SECONDS).get(group);
            require(d.type() == type, "describeConsumerGroups(%s).type = %s, want %s", group, d.type(), type);
            require(d.members().size() == members, "describeConsumerGroups(%s) lists %d members, want %d: %s", group, d.members().size(), members, d);
            Set<TopicPartition> assigned = new HashSet<>();
            for (var m : d.members()) {
                assigned.addAll(m.assignment().topicPartitions());
            }
            require(assigned.size() == PARTITIONS, "describeConsumerGroups(%s) assigns %s, want all %d partitions", group, names(assigned), PARTITIONS);
        }
    }

    /** classicEager: group.protocol=classic with the RangeAssignor: m2's join revokes all of m1's partitions first. */
    void classicEager() throws Exception {
        Run r = new Run("eager");
        Map<String, Object> p = Map.of(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "classic",
                ConsumerConfig.PARTITION_ASSIGNMENT_STRATEGY_CONFIG, RangeAssignor.class.getName());
        Member[] ms = r.twoMembers(p, p);
        r.checkDescribed(GroupType.CLASSIC, 2);
        List<String> ev = ms[0].eventsCopy();
        require(ev.contains("revoked [0, 1, 2, 3, 4, 5]"), "eager m1 never revoked all six partitions: %s", ev);
        ms[1].stopAndJoin();
        ms[0].stopAndJoin();
        log("eager: %s / %s", ms[0], ms[1]);
    }

    /** classicCooperative: with the CooperativeStickyAssignor m1 gives up only the partitions that move. */
    void classicCooperative() throws Exception {
        Run r = new Run("coop");
        Map<String, Object> p = Map.of(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "classic",
                ConsumerConfig.PARTITION_ASSIGNMENT_STRATEGY_CONFIG, CooperativeStickyAssignor.class.getName());
        Member[] ms = r.twoMembers(p, p);
        r.checkDescribed(GroupType.CLASSIC, 2);
        checkIncremental(ms[0]);
        ms[1].stopAndJoin();
        ms[0].stopAndJoin();
        log("cooperative: %s / %s", ms[0], ms[1]);
    }

    /** checkIncremental requires that m revoked only some of its partitions, never all six. */
    static void checkIncremental(Member m) {
        List<String> ev = m.eventsCopy();
        boolean partial = false;
        for (String e : ev) {
            require(!e.equals("revoked [0, 1, 2, 3, 4, 5]") && !e.startsWith("lost"), "%s: incremental protocol revoked/lost everything: %s", m.name, ev);
            partial |= e.startsWith("revoked [") && !e.equals("revoked []");
        }
        require(partial, "%s never revoked the partitions that moved to m2: %s", m.name, ev);
    }

    /**
     * classicStatic: static members (group.instance.id). When the static m2 closes (no LeaveGroup)
     * and a new consumer rejoins with its instance id, it gets m2's partitions back without a
     * rebalance: m1 keeps its generation and sees no callback.
     */
    void classicStatic() throws Exception {
        Run r = new Run("static");
        Map<String, Object> base = Map.of(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "classic",
                ConsumerConfig.PARTITION_ASSIGNMENT_STRATEGY_CONFIG, RangeAssignor.class.getName(),
                ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, 45000);
        Map<String, Object> p1 = new HashMap<>(base), p2 = new HashMap<>(base);
        p1.put(ConsumerConfig.GROUP_INSTANCE_ID_CONFIG, "static-1");
        p2.put(ConsumerConfig.GROUP_INSTANCE_ID_CONFIG, "static-2");
        Member[] ms = r.twoMembers(p1, p2);
        var d = c.admin.describeConsumerGroups(List.of(r.group)).all().get(30, TimeUnit.SECONDS).get(r.group);
        Set<String> ids = d.members().stream().map(m -> m.groupInstanceId().orElse("<none>")).collect(Collectors.toSet());
        require(ids.equals(Set.of("static-1", "static-2")), "group instance ids %s, want [static-1, static-2]: %s", ids, d);
        Set<TopicPartition> a2 = ms[1].assignment;
        int gen = ms[0].generation;
        int events = ms[0].eventsCopy().size();
        ms[1].stopAndJoin();
        Member m3 = r.member("m2-again", p2);
        await("the rejoined static-2 to get its partitions " + names(a2) + " back", 40, () -> m3.assignment.equals(a2), m3, ms[0]);
        require(ms[0].generation == gen, "m1's generation moved from %d to %d on a static rejoin (a rebalance happened): %s", gen, ms[0].generation, ms[0]);
        List<String> ev = ms[0].eventsCopy();
        List<String> after = ev.subList(events, ev.size());
        require(after.isEmpty(), "m1 saw %s when static-2 rejoined, want no rebalance", after);
        r.produce();
        await("records produced after the rejoin to be consumed", 60, r::allSeen, r.seenCounts(), m3, ms[0]);
        await("committed offsets to reach the end", 60, r::committedToEnd, m3, ms[0]);
        m3.stopAndJoin();
        ms[0].stopAndJoin();
        log("static: m1 generation %d unchanged, static-2 rejoined with %s", gen, names(a2));
    }

    /** consumerProtocol: group.protocol=consumer (KIP-848), server-side assignment, incremental revocation. */
    void consumerProtocol() throws Exception {
        Run r = new Run("kip848");
        Map<String, Object> p = Map.of(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "consumer");
        Member[] ms = r.twoMembers(p, p);
        r.checkDescribed(GroupType.CONSUMER, 2);
        checkIncremental(ms[0]);
        ms[1].stopAndJoin();
        await("m1 to take back all partitions after m2 left", 60, () -> ms[0].assignment.size() == PARTITIONS, ms[0]);
        ms[0].stopAndJoin();
        log("consumer protocol: %s / %s", ms[0], ms[1]);
    }
}
