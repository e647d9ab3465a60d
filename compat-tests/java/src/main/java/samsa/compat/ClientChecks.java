package samsa.compat;

import static samsa.compat.Checks.log;
import static samsa.compat.Checks.require;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.consumer.OffsetAndTimestamp;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * ClientChecks exercises kafka-clients 4.4 against one broker: idempotent and transactional
 * producers with every codec, consume-transform-produce, seek/pause/resume/offsetsForTimes.
 * Consumer groups are in {@link GroupChecks}, the Admin API in {@link AdminChecks}.
 *
 * <p>Usage: {@code java samsa.compat.ClientChecks BOOTSTRAP [check...|all]}; every topic, group and
 * transactional id carries a per-run suffix, so runs can share a broker.
 */
public final class ClientChecks {
    static final String[] CODECS = {"none", "gzip", "snappy", "lz4", "zstd"};
    static final int PARTITIONS = 3;
    static final String FILLER = "samsa-java-compat-payload-".repeat(8);

    final String bootstrap;
    final String run;
    final Admin admin;

    ClientChecks(String bootstrap, String run) {
        this.bootstrap = bootstrap;
        this.run = run;
        Properties p = new Properties();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "30000");
        this.admin = Admin.create(p);
    }

    public static void main(String[] args) throws Exception {
        if (args.length < 1) {
            System.err.println("usage: ClientChecks BOOTSTRAP [check...|all]");
            System.exit(2);
        }
        String run = Long.toString(System.currentTimeMillis() % 100_000_000L, 36);
        ClientChecks c = new ClientChecks(args[0], run);
        Checks checks = new Checks();
        for (String codec : CODECS) {
            checks.add("idempotent-" + codec, () -> c.idempotent(codec));
        }
        for (String codec : CODECS) {
            checks.add("transactional-" + codec, () -> c.transactional(codec));
        }
        checks.add("consume-transform-produce", c::consumeTransformProduce);
        checks.add("seek-pause-offsetsForTimes", c::seekPauseOffsetsForTimes);
        GroupChecks g = new GroupChecks(c);
        checks.add("group-classic-eager-range", g::classicEager);
        checks.add("group-classic-cooperative-sticky", g::classicCooperative);
        checks.add("group-classic-static-membership", g::classicStatic);
        checks.add("group-consumer-kip848", g::consumerProtocol);
        MigrationChecks mig = new MigrationChecks(c, g);
        checks.add("group-online-migration", mig::onlineMigration);
        checks.add("group-online-migration-cooperative", mig::onlineMigrationCooperative);
        AdminChecks a = new AdminChecks(c);
        checks.add("admin-topics-partitions", a::topicsAndPartitions);
        checks.add("admin-configs", a::configs);
        checks.add("admin-delete-records", a::deleteRecords);
        checks.add("admin-groups-offsets", a::groupsAndOffsets);
        checks.add("admin-transactions-producers", a::transactionsAndProducers);
        checks.add("admin-log-dirs-cluster", a::logDirsAndCluster);
        int failed;
        try {
            failed = checks.run(Arrays.asList(args).subList(1, args.length));
        } finally {
            c.admin.close(Duration.ofSeconds(5));
        }
        System.exit(failed == 0 ? 0 : 1);
    }

    // ---- clients -------------------------------------------------------------------------

    KafkaProducer<byte[], byte[]> producer(Map<String, Object> extra) {
        Map<String, Object> p = new HashMap<>();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class);
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class);
        p.put(ProducerConfig.LINGER_MS_CONFIG, 5);
        p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, 60000);
        p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, 20000);
        p.putAll(extra);
        return new KafkaProducer<>(p);
    }

    KafkaConsumer<byte[], byte[]> consumer(Map<String, Object> extra) {
        Map<String, Object> p = new HashMap<>();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class);
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class);
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        p.putAll(extra);
        return new KafkaConsumer<>(p);
    }

    String topic(String name) {
        return "java-" + name + "-" + run;
    }

    void createTopic(String name, int partitions, Map<String, String> configs) throws Exception {
        NewTopic t = new NewTopic(name, partitions, (short) 1);
        if (configs != null) {
            t.configs(configs);
        }
        admin.createTopics(List.of(t)).all().get(30, TimeUnit.SECONDS);
        waitLeaders(name, partitions);
    }

    /** waitLeaders polls metadata until every partition of topic has a leader. */
    void waitLeaders(String topic, int partitions) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        String last = "";
        while (System.nanoTime() < deadline) {
            try {
                var d = admin.describeTopics(List.of(topic)).allTopicNames().get(10, TimeUnit.SECONDS).get(topic);
                if (d.partitions().size() == partitions && d.partitions().stream().allMatch(p -> p.leader() != null && p.leader().id() >= 0)) {
                    // Metadata can name a leader before that broker serves the partition (Kafka
                    // answers NOT_LEADER_OR_FOLLOWER for a moment, and an idempotent producer's
                    // first batch failing that way can leave it in OUT_OF_ORDER_SEQUENCE_NUMBER
                    // retries); ListOffsets goes to the leader, so wait until it answers.
                    Map<TopicPartition, OffsetSpec> q = new HashMap<>();
                    for (int p = 0; p < partitions; p++) {
                        q.put(new TopicPartition(topic, p), OffsetSpec.latest());
                    }
                    admin.listOffsets(q).all().get(10, TimeUnit.SECONDS);
                    return;
                }
                last = d.toString();
            } catch (Exception e) {
                last = e.toString();
            }
            Thread.sleep(50); // polling interval; the loop is bounded by the deadline
        }
        throw new Checks.CheckFailed("topic " + topic + " has no leaders for all " + partitions + " partitions after 30 s: " + last);
    }

    static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    static String str(byte[] b) {
        return b == null ? null : new String(b, StandardCharsets.UTF_8);
    }

    static String header(ConsumerRecord<byte[], byte[]> r, String key) {
        Header h = r.headers().lastHeader(key);
        return h == null ? null : str(h.value());
    }

    /** Want is one produced record, identified by its index i. */
    record Want(int i, int partition, String key, String value, long timestamp) {}

    static List<Want> wants(String tag, int n, long base) {
        return wants(tag, n, base, PARTITIONS);
    }

    /** wants returns n records spread round-robin over `partitions` partitions, timestamps base+i. */
    static List<Want> wants(String tag, int n, long base, int partitions) {
        List<Want> out = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            out.add(new Want(i, i % partitions, "key-" + i, tag + "-" + i + "-" + FILLER, base + i));
        }
        return out;
    }

    /** send produces every record of ws and returns their metadata, failing on any error. */
    static List<RecordMetadata> send(KafkaProducer<byte[], byte[]> p, String topic, List<Want> ws) throws Exception {
        List<Future<RecordMetadata>> fs = new ArrayList<>(ws.size());
        for (Want w : ws) {
            RecordHeaders hs = new RecordHeaders();
            hs.add("idx", bytes(Integer.toString(w.i)));
            fs.add(p.send(new ProducerRecord<>(topic, w.partition, w.timestamp, bytes(w.key), bytes(w.value), hs)));
        }
        p.flush();
        List<RecordMetadata> out = new ArrayList<>(fs.size());
        for (Future<RecordMetadata> f : fs) {
            out.add(f.get(60, TimeUnit.SECONDS));
        }
        return out;
    }

    /**
     * readAll assigns every partition of topic from the beginning and polls until it has read
     * `expect` records or the partitions' end offsets are reached, whichever is later; records come
     * back grouped by partition.
     */
    Map<Integer, List<ConsumerRecord<byte[], byte[]>>> readAll(String topic, int partitions, int expect, String isolation) {
        Map<Integer, List<ConsumerRecord<byte[], byte[]>>> got = new TreeMap<>();
        try (var c = consumer(Map.of(ConsumerConfig.ISOLATION_LEVEL_CONFIG, isolation, ConsumerConfig.MAX_POLL_RECORDS_CONFIG, 2000))) {
            List<TopicPartition> tps = new ArrayList<>();
            for (int p = 0; p < partitions; p++) {
                tps.add(new TopicPartition(topic, p));
                got.put(p, new ArrayList<>());
            }
            c.assign(tps);
            c.seekToBeginning(tps);
            Map<TopicPartition, Long> ends = c.endOffsets(tps, Duration.ofSeconds(30));
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            int n = 0;
            while (System.nanoTime() < deadline) {
                boolean atEnd = true;
                for (TopicPartition tp : tps) {
                    atEnd &= c.position(tp, Duration.ofSeconds(30)) >= ends.get(tp);
                }
                if (atEnd && n >= expect) {
                    break;
                }
                for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(200))) {
                    got.get(r.partition()).add(r);
                    n++;
                }
            }
        }
        return got;
    }

    /** verify checks that got holds exactly ws, in order per partition, with their content. */
    static void verify(String what, List<Want> ws, Map<Integer, List<ConsumerRecord<byte[], byte[]>>> got, boolean denseOffsets) {
        Map<Integer, List<Want>> byPart = new TreeMap<>();
        for (Want w : ws) {
            byPart.computeIfAbsent(w.partition, k -> new ArrayList<>()).add(w);
        }
        List<String> problems = new ArrayList<>();
        for (var e : byPart.entrySet()) {
            List<Want> want = e.getValue();
            List<ConsumerRecord<byte[], byte[]>> g = got.getOrDefault(e.getKey(), List.of());
            if (g.size() != want.size()) {
                problems.add(String.format("partition %d: read %d records, want %d", e.getKey(), g.size(), want.size()));
            }
            long prevOffset = -1;
            for (int k = 0; k < Math.min(g.size(), want.size()) && problems.size() < 8; k++) {
                var r = g.get(k);
                Want w = want.get(k);
                List<String> p = new ArrayList<>();
                if (denseOffsets && r.offset() != k) {
                    p.add("offset " + r.offset() + ", want " + k);
                }
                if (r.offset() <= prevOffset) {
                    p.add("offset " + r.offset() + " not above previous " + prevOffset);
                }
                prevOffset = r.offset();
                if (!w.key.equals(str(r.key()))) {
                    p.add("key " + str(r.key()) + ", want " + w.key);
                }
                if (!w.value.equals(str(r.value()))) {
                    p.add("value " + abbreviate(str(r.value())) + ", want " + abbreviate(w.value));
                }
                if (r.timestamp() != w.timestamp) {
                    p.add("timestamp " + r.timestamp() + ", want " + w.timestamp);
                }
                if (!Integer.toString(w.i).equals(header(r, "idx"))) {
                    p.add("header idx=" + header(r, "idx") + ", want " + w.i);
                }
                if (!p.isEmpty()) {
                    problems.add(String.format("partition %d record %d: %s", e.getKey(), k, String.join("; ", p)));
                }
            }
        }
        require(problems.isEmpty(), "%s: %s", what, String.join("\n", problems));
    }

    static String abbreviate(String s) {
        return s == null ? "null" : s.length() > 24 ? s.substring(0, 24) + "..." : s;
    }

    // ---- checks --------------------------------------------------------------------------

    /** idempotent: an idempotent producer (acks=all) writes 3,000 records with one codec; all read back intact at dense offsets. */
    void idempotent(String codec) throws Exception {
        String t = topic("idem-" + codec);
        createTopic(t, PARTITIONS, null);
        List<Want> ws = wants(codec, 3000, System.currentTimeMillis() - 100_000);
        try (var p = producer(Map.of(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true, ProducerConfig.ACKS_CONFIG, "all",
                ProducerConfig.COMPRESSION_TYPE_CONFIG, codec, "max.in.flight.requests.per.connection", 5))) {
            List<RecordMetadata> md = send(p, t, ws);
            int[] next = new int[PARTITIONS];
            for (int k = 0; k < md.size(); k++) {
                RecordMetadata m = md.get(k);
                require(m.partition() == ws.get(k).partition && m.offset() == next[m.partition()],
                        "record %d acked at %d/%d, want %d/%d", k, m.partition(), m.offset(), ws.get(k).partition, next[m.partition()]);
                next[m.partition()]++;
            }
        }
        verify(t, ws, readAll(t, PARTITIONS, ws.size(), "read_uncommitted"), true);
        log("%s: 3000 records acked at dense offsets and read back intact", t);
    }

    /**
     * transactional: one transactional producer with one codec commits 500 records, aborts 200,
     * commits 300. read_committed sees exactly the 800 committed ones in order; read_uncommitted
     * sees all 1,000; the end offsets count the three control markers per partition.
     */
    void transactional(String codec) throws Exception {
        String t = topic("txn-" + codec);
        createTopic(t, PARTITIONS, null);
        long base = System.currentTimeMillis() - 100_000;
        List<Want> all = wants(codec, 1000, base);
        List<Want> first = all.subList(0, 500), aborted = all.subList(500, 700), last = all.subList(700, 1000);
        try (var p = producer(Map.of(ProducerConfig.TRANSACTIONAL_ID_CONFIG, "java-txn-" + codec + "-" + run,
                ProducerConfig.COMPRESSION_TYPE_CONFIG, codec))) {
            p.initTransactions();
            p.beginTransaction();
            send(p, t, first);
            p.commitTransaction();
            p.beginTransaction();
            send(p, t, aborted);
            p.abortTransaction();
            p.beginTransaction();
            send(p, t, last);
            p.commitTransaction();
        }
        List<Want> committed = new ArrayList<>(first);
        committed.addAll(last);
        verify(t + " read_committed", committed, readAll(t, PARTITIONS, committed.size(), "read_committed"), false);
        verify(t + " read_uncommitted", all, readAll(t, PARTITIONS, all.size(), "read_uncommitted"), false);
        Map<TopicPartition, OffsetSpec> q = new HashMap<>();
        for (int p = 0; p < PARTITIONS; p++) {
            q.put(new TopicPartition(t, p), OffsetSpec.latest());
        }
        var ends = admin.listOffsets(q).all().get(30, TimeUnit.SECONDS);
        for (int p = 0; p < PARTITIONS; p++) {
            int part = p;
            long records = all.stream().filter(w -> w.partition == part).count();
            long end = ends.get(new TopicPartition(t, p)).offset();
            require(end == records + 3, "%s/%d end offset %d, want %d records + 3 control markers = %d", t, p, end, records, records + 3);
        }
        log("%s: 800 committed of 1000, 3 markers per partition", t);
    }

    /**
     * consumeTransformProduce: a consumer in a group reads an input topic and a transactional
     * producer writes each record upper-cased to an output topic, committing the consumer's offsets
     * with sendOffsetsToTransaction(groupMetadata) in the same transactions.
     */
    void consumeTransformProduce() throws Exception {
        String in = topic("ctp-in"), out = topic("ctp-out"), group = "java-ctp-" + run;
        createTopic(in, PARTITIONS, null);
        createTopic(out, PARTITIONS, null);
        List<Want> ws = wants("ctp", 900, System.currentTimeMillis() - 100_000);
        try (var p = producer(Map.of(ProducerConfig.ACKS_CONFIG, "all"))) {
            send(p, in, ws);
        }
        int copied = 0;
        try (var c = consumer(Map.of(ConsumerConfig.GROUP_ID_CONFIG, group, ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed",
                ConsumerConfig.MAX_POLL_RECORDS_CONFIG, 100));
             var p = producer(Map.of(ProducerConfig.TRANSACTIONAL_ID_CONFIG, "java-ctp-" + run, ProducerConfig.COMPRESSION_TYPE_CONFIG, "lz4"))) {
            p.initTransactions();
            c.subscribe(List.of(in));
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(90);
            while (copied < ws.size()) {
                require(System.nanoTime() < deadline, "copied only %d of %d records in 90 s", copied, ws.size());
                ConsumerRecords<byte[], byte[]> rs = c.poll(Duration.ofMillis(200));
                if (rs.isEmpty()) {
                    continue;
                }
                p.beginTransaction();
                Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
                for (var r : rs) {
                    p.send(new ProducerRecord<>(out, r.partition(), r.timestamp(), r.key(), bytes(str(r.value()).toUpperCase()), r.headers()));
                    offsets.put(new TopicPartition(r.topic(), r.partition()), new OffsetAndMetadata(r.offset() + 1));
                    copied++;
                }
                p.sendOffsetsToTransaction(offsets, c.groupMetadata());
                p.commitTransaction();
            }
        }
        List<Want> upper = new ArrayList<>();
        for (Want w : ws) {
            upper.add(new Want(w.i, w.partition, w.key, w.value.toUpperCase(), w.timestamp));
        }
        verify(out + " read_committed", upper, readAll(out, PARTITIONS, upper.size(), "read_committed"), false);
        var committed = admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get(30, TimeUnit.SECONDS);
        for (int p = 0; p < PARTITIONS; p++) {
            OffsetAndMetadata om = committed.get(new TopicPartition(in, p));
            require(om != null && om.offset() == ws.size() / PARTITIONS, "group %s committed %s for %s-%d, want %d", group, om, in, p, ws.size() / PARTITIONS);
        }
        log("copied %d records in transactions; group offsets committed through them", copied);
    }

    /** seekPauseOffsetsForTimes: seek, pause/resume, offsetsForTimes, beginning/end offsets on an assigned consumer. */
    void seekPauseOffsetsForTimes() throws Exception {
        String t = topic("seek");
        createTopic(t, PARTITIONS, null);
        long base = System.currentTimeMillis() - 1_000_000;
        // Timestamps rise by 10 ms per record: partition p holds records p, p+3, ... at base+10*i.
        List<Want> ws = new ArrayList<>();
        for (Want w : wants("seek", 600, base)) {
            ws.add(new Want(w.i, w.partition, w.key, w.value, base + 10L * w.i));
        }
        try (var p = producer(Map.of(ProducerConfig.COMPRESSION_TYPE_CONFIG, "zstd"))) {
            send(p, t, ws);
        }
        TopicPartition p0 = new TopicPartition(t, 0), p1 = new TopicPartition(t, 1), p2 = new TopicPartition(t, 2);
        List<TopicPartition> tps = List.of(p0, p1, p2);
        try (var c = consumer(Map.of(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, 50))) {
            c.assign(tps);
            var begin = c.beginningOffsets(tps, Duration.ofSeconds(30));
            var end = c.endOffsets(tps, Duration.ofSeconds(30));
            for (TopicPartition tp : tps) {
                require(begin.get(tp) == 0 && end.get(tp) == 200, "%s beginning %d end %d, want 0 and 200", tp, begin.get(tp), end.get(tp));
            }
            // offsetsForTimes: record at offset 37 of partition 1 is i = 1 + 3*37 = 112.
            long ts = base + 10L * 112;
            Map<TopicPartition, Long> q = new HashMap<>();
            q.put(p0, ts);          // partition 0: first record at or after ts is i=114, offset 38
            q.put(p1, ts);          // exact: offset 37
            q.put(p2, ts - 5);      // partition 2: i=110 is before ts-5? 110*10 < 1115, so i=113, offset 37
            var found = c.offsetsForTimes(q, Duration.ofSeconds(30));
            Map<TopicPartition, Long> want = Map.of(p0, 38L, p1, 37L, p2, 37L);
            for (TopicPartition tp : tps) {
                OffsetAndTimestamp ot = found.get(tp);
                require(ot != null && ot.offset() == want.get(tp), "offsetsForTimes(%s, %d) = %s, want offset %d", tp, q.get(tp), ot, want.get(tp));
            }
            var beyond = c.offsetsForTimes(Map.of(p0, base + 10_000_000L), Duration.ofSeconds(30));
            require(beyond.get(p0) == null, "offsetsForTimes past the last record = %s, want null", beyond.get(p0));

            // seek: the first record after seek(p0, 150) is offset 150.
            c.seek(p0, 150);
            c.seek(p1, 0);
            c.seek(p2, 0);
            c.pause(List.of(p1));
            require(c.paused().equals(Set.of(p1)), "paused() = %s, want [%s]", c.paused(), p1);
            Map<Integer, Long> firstSeen = new HashMap<>();
            Map<Integer, Integer> count = new HashMap<>();
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (count.getOrDefault(0, 0) < 50 || count.getOrDefault(2, 0) < 200) {
                require(System.nanoTime() < deadline, "paused consumer read only %s from partitions 0 and 2", count);
                for (var r : c.poll(Duration.ofMillis(200))) {
                    require(r.partition() != 1, "record from paused partition 1 at offset %d", r.offset());
                    firstSeen.putIfAbsent(r.partition(), r.offset());
                    count.merge(r.partition(), 1, Integer::sum);
                }
            }
            require(firstSeen.get(0) == 150, "first record of partition 0 after seek(150) has offset %d", firstSeen.get(0));
            require(count.get(0) == 50 && count.get(2) == 200, "read %s records from partitions 0 and 2, want 50 and 200", count);
            c.resume(List.of(p1));
            while (count.getOrDefault(1, 0) < 200) {
                require(System.nanoTime() < deadline, "resumed partition 1 gave only %d records", count.getOrDefault(1, 0));
                for (var r : c.poll(Duration.ofMillis(200))) {
                    require(r.partition() == 1, "record from drained partition %d at offset %d", r.partition(), r.offset());
                    firstSeen.putIfAbsent(r.partition(), r.offset());
                    count.merge(r.partition(), 1, Integer::sum);
                }
            }
            require(firstSeen.get(1) == 0 && count.get(1) == 200, "partition 1 after resume: first offset %d, %d records; want 0 and 200", firstSeen.get(1), count.get(1));
            c.seekToEnd(List.of(p2));
            require(c.position(p2) == 200, "position after seekToEnd = %d, want 200", c.position(p2));
            c.seekToBeginning(List.of(p2));
            require(c.position(p2) == 0, "position after seekToBeginning = %d, want 0", c.position(p2));
        }
        log("seek, pause/resume, offsetsForTimes, beginning/end offsets as expected");
    }

    static <T> Set<T> setOf(Collection<T> c) {
        return new HashSet<>(c);
    }
}
