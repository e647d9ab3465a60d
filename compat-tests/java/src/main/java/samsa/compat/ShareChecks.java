package samsa.compat;

import static samsa.compat.Checks.log;
import static samsa.compat.Checks.require;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.ListShareGroupOffsetsSpec;
import org.apache.kafka.clients.admin.ShareGroupDescription;
import org.apache.kafka.clients.admin.ShareMemberDescription;
import org.apache.kafka.clients.admin.SharePartitionOffsetInfo;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.GroupState;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * ShareChecks exercises Kafka 4.4's share groups (KIP-932, "queues for Kafka") against one broker
 * with the Java client's KafkaShareConsumer, the Admin client and the kafka-share-groups tool:
 * explicit acknowledgement (accept, release, reject) with the delivery count rising on
 * redelivery, implicit acknowledgement, two consumers sharing one partition without duplicates,
 * redelivery after the acquisition lock times out, archiving at the delivery count limit, a new
 * consumer continuing where the group was, and every kafka-share-groups action.
 *
 * <p>Every check sets share.auto.offset.reset=earliest on its own group first (Kafka's default
 * is latest). Usage: {@code java samsa.compat.ShareChecks BOOTSTRAP [check...|all]}; names carry
 * a per-run suffix, so runs can share a broker.
 */
public final class ShareChecks {
    /** DEADLINE bounds every wait of a check for the broker (generous: 2 cores, loaded CI). */
    static final Duration DEADLINE = Duration.ofSeconds(90);

    final ClientChecks c;

    ShareChecks(ClientChecks c) {
        this.c = c;
    }

    public static void main(String[] args) throws Exception {
        if (args.length == 4 && args[0].equals("--hold")) {
            hold(args[1], args[2], args[3]);
            return;
        }
        if (args.length < 1) {
            System.err.println("usage: ShareChecks BOOTSTRAP [check...|all]");
            System.exit(2);
        }
        String run = Long.toString(System.currentTimeMillis() % 100_000_000L, 36);
        ClientChecks c = new ClientChecks(args[0], run);
        ShareChecks s = new ShareChecks(c);
        Checks checks = new Checks();
        checks.add("share-explicit-accept-release-reject", s::explicitAcks);
        checks.add("share-implicit", s::implicitAcks);
        checks.add("share-two-consumers-one-partition", s::twoConsumers);
        checks.add("share-lock-timeout-redelivery", s::lockTimeout);
        checks.add("share-delivery-limit-archives", s::deliveryLimit);
        checks.add("share-restart-continues", s::restartContinues);
        checks.add("share-kill-releases", s::killReleases);
        checks.add("kafka-share-groups", s::shareGroupsTool);
        ToolChecks.runWithTools(c, checks, args);
    }

    // ---- helpers ---------------------------------------------------------------------------

    KafkaShareConsumer<byte[], byte[]> consumer(String group, String ackMode) {
        Map<String, Object> p = new HashMap<>();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, c.bootstrap);
        p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class);
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class);
        p.put(ConsumerConfig.SHARE_ACKNOWLEDGEMENT_MODE_CONFIG, ackMode);
        p.put(ConsumerConfig.CLIENT_ID_CONFIG, group + "-" + ackMode);
        return new KafkaShareConsumer<>(p);
    }

    /** setGroupConfigs sets share.* group configs (name, value, name, value...) on group. */
    void setGroupConfigs(String group, String... kv) throws Exception {
        List<AlterConfigOp> ops = new ArrayList<>();
        for (int i = 0; i + 1 < kv.length; i += 2) {
            ops.add(new AlterConfigOp(new ConfigEntry(kv[i], kv[i + 1]), AlterConfigOp.OpType.SET));
        }
        c.admin.incrementalAlterConfigs(Map.of(new ConfigResource(ConfigResource.Type.GROUP, group), ops))
                .all().get(30, TimeUnit.SECONDS);
    }

    /** produce sends values to partition 0 of topic, one batch per element of batches. */
    void produce(String topic, List<List<String>> batches) throws Exception {
        try (KafkaProducer<byte[], byte[]> p = c.producer(Map.of())) {
            for (List<String> batch : batches) {
                for (String v : batch) {
                    p.send(new ProducerRecord<>(topic, 0, null, v.getBytes(StandardCharsets.UTF_8)));
                }
                p.flush();
            }
        }
    }

    static List<String> values(String prefix, int from, int to) {
        List<String> l = new ArrayList<>();
        for (int i = from; i < to; i++) {
            l.add(prefix + i);
        }
        return l;
    }

    static String value(ConsumerRecord<byte[], byte[]> r) {
        return new String(r.value(), StandardCharsets.UTF_8);
    }

    static short deliveryCount(ConsumerRecord<byte[], byte[]> r) {
        Optional<Short> d = r.deliveryCount();
        require(d.isPresent(), "record at offset %d has no delivery count", r.offset());
        return d.get();
    }

    /**
     * pollUntil polls until done says so, handing every record to each; it fails after DEADLINE.
     * In explicit mode, each must acknowledge every record (the client refuses the next poll
     * otherwise); the acknowledgements are committed after each poll, and any error fails.
     */
    static void pollUntil(KafkaShareConsumer<byte[], byte[]> consumer, boolean explicit, String what,
            Consumer<ConsumerRecord<byte[], byte[]>> each, BooleanSupplier done) {
        long deadline = System.nanoTime() + DEADLINE.toNanos();
        while (!done.getAsBoolean()) {
            require(System.nanoTime() < deadline, "timed out after %s waiting for %s", DEADLINE, what);
            var rs = consumer.poll(Duration.ofMillis(200));
            for (var r : rs) {
                each.accept(r);
            }
            if (explicit && !rs.isEmpty()) {
                commit(consumer);
            }
        }
    }

    static void commit(KafkaShareConsumer<byte[], byte[]> consumer) {
        Map<TopicIdPartition, Optional<KafkaException>> res = consumer.commitSync(Duration.ofSeconds(30));
        for (var e : res.entrySet()) {
            require(e.getValue().isEmpty(), "commitSync of %s: %s", e.getKey(), e.getValue());
        }
    }

    static void waitFor(String what, BooleanSupplier cond) throws InterruptedException {
        long deadline = System.nanoTime() + DEADLINE.toNanos();
        while (!cond.getAsBoolean()) {
            require(System.nanoTime() < deadline, "timed out after %s waiting for %s", DEADLINE, what);
            Thread.sleep(200);
        }
    }

    /** shareOffsets returns the group's share-partition offsets (Admin listShareGroupOffsets). */
    Map<TopicPartition, SharePartitionOffsetInfo> shareOffsets(String group, TopicPartition tp) {
        try {
            var spec = new ListShareGroupOffsetsSpec().topicPartitions(List.of(tp));
            return c.admin.listShareGroupOffsets(Map.of(group, spec)).partitionsToOffsetInfo(group)
                    .get(30, TimeUnit.SECONDS);
        } catch (Exception e) {
            throw new Checks.CheckFailed("listShareGroupOffsets " + group + ": " + e);
        }
    }

    /**
     * waitLag0 waits until the share-partition's lag is 0 (nothing left to deliver) and fails
     * naming the last offsets the broker reported. Kafka 4.4 persists the start offset lazily:
     * after everything is acknowledged it may still report the first offset of the last
     * acknowledged batch (with lag 0), so checks of a consumed partition assert the lag, and the
     * start offset exactly only after a reset.
     */
    void waitLag0(String group, TopicPartition tp, String why) throws InterruptedException {
        long deadline = System.nanoTime() + DEADLINE.toNanos();
        while (true) {
            SharePartitionOffsetInfo info = shareOffsets(group, tp).get(tp);
            if (info != null && info.lag().isPresent() && info.lag().get() == 0) {
                return;
            }
            require(System.nanoTime() < deadline, "timed out after %s waiting for share-partition lag 0 (%s); last: %s",
                    DEADLINE, why, info);
            Thread.sleep(200);
        }
    }

    long startOffset(String group, TopicPartition tp) {
        SharePartitionOffsetInfo info = shareOffsets(group, tp).get(tp);
        return info == null ? -1 : info.startOffset();
    }

    /** describe returns the group's description, null while the group does not exist. */
    ShareGroupDescription describe(String group) {
        try {
            return c.admin.describeShareGroups(List.of(group)).describedGroups().get(group).get(30, TimeUnit.SECONDS);
        } catch (java.util.concurrent.ExecutionException e) {
            if (e.getCause() instanceof org.apache.kafka.common.errors.GroupIdNotFoundException) {
                return null;
            }
            throw new Checks.CheckFailed("describeShareGroups " + group + ": " + e);
        } catch (Exception e) {
            throw new Checks.CheckFailed("describeShareGroups " + group + ": " + e);
        }
    }

    String newTopic(String name) throws Exception {
        String t = c.topic(name);
        c.createTopic(t, 1, null);
        return t;
    }

    // ---- checks ----------------------------------------------------------------------------

    /**
     * explicitAcks: nine records; first deliveries are accepted (offset%3 == 0), released (1) or
     * rejected (2). Exactly the released ones come back, with delivery count 2; after they are
     * accepted nothing else is redelivered before a later marker record.
     */
    void explicitAcks() throws Exception {
        String t = newTopic("share-explicit");
        String g = "share-explicit-" + c.run;
        setGroupConfigs(g, "share.auto.offset.reset", "earliest");
        produce(t, List.of(values("e", 0, 9)));
        Map<Long, List<Short>> deliveries = new TreeMap<>();
        try (var consumer = consumer(g, "explicit")) {
            consumer.subscribe(List.of(t));
            pollUntil(consumer, true, "9 first deliveries and 3 redeliveries", r -> {
                short n = deliveryCount(r);
                deliveries.computeIfAbsent(r.offset(), k -> new ArrayList<>()).add(n);
                AcknowledgeType type = AcknowledgeType.ACCEPT;
                if (n == 1 && r.offset() % 3 == 1) {
                    type = AcknowledgeType.RELEASE;
                } else if (n == 1 && r.offset() % 3 == 2) {
                    type = AcknowledgeType.REJECT;
                }
                consumer.acknowledge(r, type);
            }, () -> deliveries.size() == 9 && deliveries.entrySet().stream()
                    .filter(e -> e.getKey() % 3 == 1).allMatch(e -> e.getValue().size() >= 2));
            log("deliveries by offset: %s", deliveries);
            for (var e : deliveries.entrySet()) {
                List<Short> want = e.getKey() % 3 == 1 ? List.of((short) 1, (short) 2) : List.of((short) 1);
                require(e.getValue().equals(want), "offset %d: delivery counts %s, want %s", e.getKey(), e.getValue(), want);
            }
            produce(t, List.of(List.of("marker")));
            pollUntil(consumer, true, "the marker at offset 9", r -> {
                deliveries.computeIfAbsent(r.offset(), k -> new ArrayList<>()).add(deliveryCount(r));
                consumer.acknowledge(r, AcknowledgeType.ACCEPT);
            }, () -> deliveries.containsKey(9L));
            require(deliveries.size() == 10 && deliveries.get(9L).equals(List.of((short) 1)),
                    "after the marker: deliveries %s (an accepted or rejected record came back)", deliveries);
        }
        TopicPartition tp = new TopicPartition(t, 0);
        waitLag0(g, tp, "everything accepted or rejected");
        require(startOffset(g, tp) >= 0 && startOffset(g, tp) <= 10, "start offset %d, want 0-10", startOffset(g, tp));
    }

    /**
     * implicitAcks: in implicit mode every delivered record is accepted by the next poll or
     * commitSync; a second consumer of the group after the first closed gets only new records.
     */
    void implicitAcks() throws Exception {
        String t = newTopic("share-implicit");
        String g = "share-implicit-" + c.run;
        setGroupConfigs(g, "share.auto.offset.reset", "earliest");
        produce(t, List.of(values("i", 0, 10), values("i", 10, 20)));
        Map<Long, Integer> seen = new TreeMap<>();
        try (var consumer = consumer(g, "implicit")) {
            consumer.subscribe(List.of(t));
            pollUntil(consumer, false, "20 records", r -> seen.merge(r.offset(), 1, Integer::sum), () -> seen.size() == 20);
            commit(consumer);
        }
        require(seen.values().stream().allMatch(n -> n == 1), "deliveries per offset %s: a record came twice", seen);
        produce(t, List.of(List.of("marker")));
        Map<Long, Integer> second = new TreeMap<>();
        try (var consumer = consumer(g, "implicit")) {
            consumer.subscribe(List.of(t));
            pollUntil(consumer, false, "the marker at offset 20", r -> second.merge(r.offset(), 1, Integer::sum),
                    () -> second.containsKey(20L));
            commit(consumer);
        }
        require(second.equals(Map.of(20L, 1)), "second consumer got %s, want only the marker at offset 20", second);
    }

    /**
     * twoConsumers: two members share a one-partition topic (both are assigned partition 0);
     * 300 records in 30 batches are each delivered exactly once across the two.
     */
    void twoConsumers() throws Exception {
        String t = newTopic("share-two");
        String g = "share-two-" + c.run;
        setGroupConfigs(g, "share.auto.offset.reset", "earliest");
        Map<Long, AtomicInteger> seen = new ConcurrentHashMap<>();
        Map<String, AtomicInteger> perMember = new ConcurrentHashMap<>();
        List<Thread> threads = new ArrayList<>();
        List<Throwable> errors = new ArrayList<>();
        var stop = new java.util.concurrent.atomic.AtomicBoolean();
        for (String name : List.of("a", "b")) {
            Thread th = new Thread(() -> {
                try (var consumer = consumer(g, "implicit")) {
                    consumer.subscribe(List.of(t));
                    while (!stop.get()) {
                        for (var r : consumer.poll(Duration.ofMillis(100))) {
                            seen.computeIfAbsent(r.offset(), k -> new AtomicInteger()).incrementAndGet();
                            perMember.computeIfAbsent(name, k -> new AtomicInteger()).incrementAndGet();
                        }
                    }
                    commit(consumer);
                } catch (Throwable e) {
                    synchronized (errors) {
                        errors.add(e);
                    }
                }
            }, "share-two-" + name);
            th.start();
            threads.add(th);
        }
        try {
            TopicPartition tp = new TopicPartition(t, 0);
            waitFor("both members assigned partition 0", () -> {
                ShareGroupDescription d = describe(g);
                if (d == null) {
                    return false;
                }
                Collection<ShareMemberDescription> ms = d.members();
                return ms.size() == 2 && ms.stream().allMatch(m -> m.assignment().topicPartitions().equals(Set.of(tp)));
            });
            List<List<String>> batches = new ArrayList<>();
            for (int b = 0; b < 30; b++) {
                batches.add(values("t", b * 10, b * 10 + 10));
            }
            produce(t, batches);
            waitFor("300 distinct offsets", () -> seen.size() == 300 || !errors.isEmpty());
        } finally {
            stop.set(true);
            for (Thread th : threads) {
                th.join(60_000);
            }
        }
        require(errors.isEmpty(), "consumer thread failed: %s", errors);
        log("records per member: %s", perMember);
        Map<Long, Integer> dups = new TreeMap<>();
        seen.forEach((o, n) -> {
            if (n.get() != 1) {
                dups.put(o, n.get());
            }
        });
        require(seen.size() == 300 && dups.isEmpty(), "%d distinct offsets; delivered more than once: %s", seen.size(), dups);
    }

    /**
     * hold is the body of the holding JVM of {@link #lockTimeout}: it acquires the three records
     * of topic with an explicit-mode consumer, prints them and the lock timeout, and then waits
     * to be frozen (SIGSTOP) and killed by the check, never acknowledging.
     */
    static void hold(String bootstrap, String group, String topic) throws Exception {
        ClientChecks c = new ClientChecks(bootstrap, "hold");
        var consumer = new ShareChecks(c).consumer(group, "explicit");
        consumer.subscribe(List.of(topic));
        Map<Long, Short> got = new TreeMap<>();
        long deadline = System.nanoTime() + DEADLINE.toNanos();
        while (got.size() < 3 && System.nanoTime() < deadline) {
            for (var r : consumer.poll(Duration.ofMillis(200))) {
                got.put(r.offset(), deliveryCount(r));
            }
        }
        System.out.println("HELD " + got + " lock " + consumer.acquisitionLockTimeoutMs().orElse(-1));
        System.out.flush();
        // Waiting here is the holder's whole job: the check freezes and then kills this JVM.
        while (true) {
            Thread.sleep(60_000);
        }
    }

    /**
     * startHolder starts consumer A of group g on topic t in its own JVM (this class's --hold
     * mode): it acquires records and prints them on a HELD line.
     */
    private Process startHolder(String g, String t) throws Exception {
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        return new ProcessBuilder(java, "-cp", System.getProperty("java.class.path"),
                ShareChecks.class.getName(), "--hold", c.bootstrap, g, t)
                .redirectError(ProcessBuilder.Redirect.DISCARD).start();
    }

    /**
     * readHeld reads the holding JVM's output up to its HELD line, requires one, logs it and
     * returns it.
     */
    private String readHeld(Process holder) throws Exception {
        String held = null;
        var out = new BufferedReader(new InputStreamReader(holder.getInputStream(), StandardCharsets.UTF_8));
        for (String line; (line = out.readLine()) != null; ) {
            if (line.startsWith("HELD ")) {
                held = line;
                break;
            }
        }
        require(held != null, "the holding JVM exited without acquiring the records (exit %s)",
                holder.isAlive() ? "none" : Integer.toString(holder.exitValue()));
        log("consumer A: %s", held);
        return held;
    }

    /**
     * lockTimeout: consumer A, in its own JVM, acquires three records and is then frozen
     * (SIGSTOP: its connection stays open, it neither acknowledges nor fetches again, so it
     * cannot take the records back when their locks expire). After share.record.lock.duration.ms
     * (15 s, the smallest the broker allows by default) consumer B gets the same records with
     * delivery count 2. (With A running in this JVM instead, A's client fetches in the background
     * and re-acquires the expired records itself about half the time: B then sees count 3.)
     */
    void lockTimeout() throws Exception {
        String t = newTopic("share-lock");
        String g = "share-lock-" + c.run;
        setGroupConfigs(g, "share.auto.offset.reset", "earliest", "share.record.lock.duration.ms", "15000");
        produce(t, List.of(values("l", 0, 3)));
        Map<Long, Short> second = new TreeMap<>();
        Process holder = startHolder(g, t);
        try {
            String held = readHeld(holder);
            long acquired = System.nanoTime();
            require(held.equals("HELD {0=1, 1=1, 2=1} lock 15000"), "consumer A: %s, want offsets 0-2 once each and lock 15000", held);
            Process stop = new ProcessBuilder("kill", "-STOP", Long.toString(holder.pid())).inheritIO().start();
            require(stop.waitFor() == 0, "kill -STOP %d failed", holder.pid());
            try (var b = consumer(g, "explicit")) {
                b.subscribe(List.of(t));
                pollUntil(b, true, "B to get offsets 0-2 after A's locks expired", r -> {
                    second.put(r.offset(), deliveryCount(r));
                    b.acknowledge(r, AcknowledgeType.ACCEPT);
                }, () -> second.size() == 3);
                Optional<Integer> lock = b.acquisitionLockTimeoutMs();
                require(lock.isPresent() && lock.get() == 15000, "B's acquisition lock timeout %s, want 15000", lock);
            }
            long waited = (System.nanoTime() - acquired) / 1_000_000;
            log("B got %s %d ms after A reported them", second, waited);
            require(second.equals(Map.of(0L, (short) 2, 1L, (short) 2, 2L, (short) 2)), "B's deliveries %s, want count 2 each", second);
            // The broker acquired the records before A printed them, so the bound is loose.
            require(waited >= 5000, "B got A's records %d ms after A acquired them, before the 15 s lock could expire", waited);
        } finally {
            holder.destroyForcibly();
            holder.waitFor(30, TimeUnit.SECONDS);
        }
    }

    /**
     * killReleases: consumer A, in its own JVM, acquires three records and is killed (SIGKILL:
     * its connection closes without a ShareAcknowledge or ShareFetch closing its share session).
     * The partition leader closes the share session of a connection that closes and releases its
     * member's records (Kafka 4.4), so consumer B gets them with delivery count 2 well before
     * their acquisition locks (60 s here, the longest a group may set) could expire.
     */
    void killReleases() throws Exception {
        String t = newTopic("share-kill");
        String g = "share-kill-" + c.run;
        setGroupConfigs(g, "share.auto.offset.reset", "earliest", "share.record.lock.duration.ms", "60000");
        produce(t, List.of(values("x", 0, 3)));
        Map<Long, Short> second = new TreeMap<>();
        Process holder = startHolder(g, t);
        try {
            String held = readHeld(holder);
            require(held.equals("HELD {0=1, 1=1, 2=1} lock 60000"), "consumer A: %s, want offsets 0-2 once each and lock 60000", held);
            holder.destroyForcibly();
            require(holder.waitFor(30, TimeUnit.SECONDS), "the holding JVM did not die");
            long killed = System.nanoTime();
            try (var b = consumer(g, "explicit")) {
                b.subscribe(List.of(t));
                pollUntil(b, true, "B to get offsets 0-2 after A was killed", r -> {
                    second.put(r.offset(), deliveryCount(r));
                    b.acknowledge(r, AcknowledgeType.ACCEPT);
                }, () -> second.size() == 3);
            }
            long waited = (System.nanoTime() - killed) / 1_000_000;
            log("B got %s %d ms after A was killed", second, waited);
            require(second.equals(Map.of(0L, (short) 2, 1L, (short) 2, 2L, (short) 2)), "B's deliveries %s, want count 2 each", second);
            // B's own join and first fetches take a few seconds (0.1-5 s measured); the locks,
            // taken just before A printed them, expire 60 s after: 50 s leaves room for a slow
            // join on a loaded machine and still tells a release from an expiry.
            require(waited < 50_000, "B got A's records %d ms after A was killed: they waited for the 60 s lock, not released when A's connection closed", waited);
        } finally {
            holder.destroyForcibly();
            holder.waitFor(30, TimeUnit.SECONDS);
        }
    }

    /**
     * deliveryLimit: with share.delivery.count.limit=3 a record released on every delivery is
     * delivered three times (counts 1, 2, 3) and then archived: never delivered again, and the
     * share-partition start offset moves past it.
     */
    void deliveryLimit() throws Exception {
        String t = newTopic("share-limit");
        String g = "share-limit-" + c.run;
        setGroupConfigs(g, "share.auto.offset.reset", "earliest", "share.delivery.count.limit", "3");
        produce(t, List.of(List.of("poison")));
        List<String> got = new ArrayList<>();
        try (var consumer = consumer(g, "explicit")) {
            consumer.subscribe(List.of(t));
            pollUntil(consumer, true, "three deliveries of offset 0", r -> {
                got.add(r.offset() + "#" + deliveryCount(r));
                consumer.acknowledge(r, AcknowledgeType.RELEASE);
            }, () -> got.size() >= 3);
            require(got.equals(List.of("0#1", "0#2", "0#3")), "deliveries %s, want 0#1 0#2 0#3", got);
            produce(t, List.of(List.of("marker")));
            pollUntil(consumer, true, "the marker at offset 1", r -> {
                got.add(r.offset() + "#" + deliveryCount(r));
                consumer.acknowledge(r, AcknowledgeType.ACCEPT);
            }, () -> got.contains("1#1"));
            require(got.equals(List.of("0#1", "0#2", "0#3", "1#1")), "deliveries %s: the archived record came back", got);
        }
        TopicPartition tp = new TopicPartition(t, 0);
        waitLag0(g, tp, "0 archived, 1 accepted");
    }

    /**
     * restartContinues: consumer 1 accepts offsets 0-4 of ten and closes holding 5-9 without
     * acknowledging them; consumer 2 of the same group gets 5-9 and the new records 10-14, never
     * 0-4. close() releases 5-9: consumer 2 gets them long before their 60 s locks expire.
     */
    void restartContinues() throws Exception {
        String t = newTopic("share-restart");
        String g = "share-restart-" + c.run;
        setGroupConfigs(g, "share.auto.offset.reset", "earliest", "share.record.lock.duration.ms", "60000");
        produce(t, List.of(values("r", 0, 10)));
        Map<Long, Short> first = new TreeMap<>();
        try (var consumer = consumer(g, "explicit")) {
            consumer.subscribe(List.of(t));
            long deadline = System.nanoTime() + DEADLINE.toNanos();
            while (first.size() < 10) {
                require(System.nanoTime() < deadline, "consumer 1 got %s, want offsets 0-9", first);
                var rs = consumer.poll(Duration.ofMillis(200));
                for (var r : rs) {
                    first.put(r.offset(), deliveryCount(r));
                }
                // Accept what is below 5 at once; the rest stays acquired until close.
                for (var r : rs) {
                    if (r.offset() < 5) {
                        consumer.acknowledge(r, AcknowledgeType.ACCEPT);
                    }
                }
                if (first.size() < 10) {
                    for (var r : rs) {
                        if (r.offset() >= 5) {
                            consumer.acknowledge(r, AcknowledgeType.RELEASE);
                            first.remove(r.offset());
                        }
                    }
                }
                if (!rs.isEmpty()) {
                    commit(consumer);
                }
            }
            log("consumer 1 holds %s and closes", first);
        }
        long closed = System.nanoTime();
        produce(t, List.of(values("r", 10, 15)));
        Map<Long, Short> second = new TreeMap<>();
        try (var consumer = consumer(g, "implicit")) {
            consumer.subscribe(List.of(t));
            pollUntil(consumer, false, "offsets 5-14", r -> second.put(r.offset(), deliveryCount(r)),
                    () -> second.keySet().containsAll(List.of(5L, 6L, 7L, 8L, 9L, 10L, 11L, 12L, 13L, 14L)));
            commit(consumer);
        }
        long waited = (System.nanoTime() - closed) / 1_000_000;
        log("consumer 2 got %s %d ms after consumer 1 closed", second, waited);
        // Consumer 1 acquired 5-9 just before it closed: their 60 s locks would expire later
        // than 50 s after the close (measured: 0.1 s samsa, 0.9 s Kafka 4.4).
        require(waited < 50_000, "consumer 2 got 5-9 %d ms after consumer 1 closed: close() did not release them (60 s locks)", waited);
        require(second.keySet().stream().allMatch(o -> o >= 5 && o < 15), "consumer 2 got %s: offsets 0-4 were accepted", second.keySet());
        TopicPartition tp = new TopicPartition(t, 0);
        waitLag0(g, tp, "0-14 accepted");
        require(startOffset(g, tp) >= 5 && startOffset(g, tp) <= 15, "start offset %d, want 5-15", startOffset(g, tp));
    }

    // ---- kafka-share-groups ------------------------------------------------------------------

    static ToolChecks.Result tool(String... args) throws Exception {
        return ToolChecks.tool("kafka-share-groups", null, args);
    }

    ToolChecks.Result ok(String... args) throws Exception {
        ToolChecks.Result r = ToolChecks.ok("kafka-share-groups", withBootstrap(args));
        log("%s", r.out().strip().replace("\n", "\n    "));
        return r;
    }

    String[] withBootstrap(String... args) {
        return ToolChecks.bootstrapArgs(c.bootstrap, args);
    }

    /** row returns the whitespace-separated fields of the first output line starting with first. */
    static List<String> row(ToolChecks.Result r, String first) {
        for (String l : r.lines()) {
            List<String> f = List.of(l.split("\\s+"));
            if (!f.isEmpty() && f.get(0).equals(first)) {
                return f;
            }
        }
        return List.of();
    }

    /**
     * shareGroupsTool runs every kafka-share-groups action against a group with one active member
     * and then an empty one, and checks each against the Admin client's view.
     */
    void shareGroupsTool() throws Exception {
        String t = newTopic("share-tool");
        String g = "share-tool-" + c.run;
        TopicPartition tp = new TopicPartition(t, 0);
        setGroupConfigs(g, "share.auto.offset.reset", "earliest");
        produce(t, List.of(values("k", 0, 10)));
        Map<Long, Integer> seen = new TreeMap<>();
        long start;
        try (var consumer = consumer(g, "implicit")) {
            consumer.subscribe(List.of(t));
            pollUntil(consumer, false, "10 records", r -> seen.merge(r.offset(), 1, Integer::sum), () -> seen.size() == 10);
            commit(consumer);
            waitLag0(g, tp, "after the commit");
            start = startOffset(g, tp);

            ToolChecks.Result r = ok("--list");
            require(r.lines().contains(g), "--list does not name %s", g);
            r = ok("--list", "--state");
            require(row(r, g).equals(List.of(g, "Stable")), "--list --state row %s, want [%s, Stable]", row(r, g), g);
            r = ok("--describe", "--group", g);
            String s0 = Long.toString(start);
            require(row(r, g).equals(List.of(g, t, "0", s0, "0")), "--describe row %s, want [%s, %s, 0, %s, 0]", row(r, g), g, t, s0);
            r = ok("--describe", "--group", g, "--offsets", "--verbose");
            require(row(r, g).equals(List.of(g, t, "0", "0", s0, "0")), "--describe --offsets --verbose row %s", row(r, g));
            r = ok("--describe", "--group", g, "--members");
            List<String> m = row(r, g);
            String memberId = describe(g).members().iterator().next().consumerId();
            require(m.size() >= 5 && m.get(1).equals(memberId) && m.contains(g + "-implicit") && r.out().contains(t + ":0"),
                    "--describe --members row %s (member %s, topic %s:0)", m, memberId, t);
            r = ok("--describe", "--group", g, "--state");
            List<String> st = row(r, g);
            require(st.size() >= 2 && st.get(st.size() - 2).equals("Stable") && st.get(st.size() - 1).equals("1"),
                    "--describe --state row %s, want state Stable and 1 member", st);
            r = tool(withBootstrap("--reset-offsets", "--group", g, "--topic", t, "--to-earliest", "--execute"));
            log("reset of an active group: exit %d: %s%s", r.status(), r.out().strip(), r.err().strip());
            require(r.out().contains("Error") || r.err().contains("Error") || r.status() != 0,
                    "--reset-offsets --execute of an active group did not fail: %s", r.out());
            require(startOffset(g, tp) == start, "the refused reset changed the start offset from %d to %d", start, startOffset(g, tp));
        }
        waitFor("the group to be Empty", () -> describe(g) != null && describe(g).groupState() == GroupState.EMPTY);

        ToolChecks.Result r = ok("--reset-offsets", "--group", g, "--topic", t, "--to-earliest", "--dry-run");
        require(row(r, g).equals(List.of(g, t, "0", "0")), "--to-earliest --dry-run row %s", row(r, g));
        require(startOffset(g, tp) == start, "--dry-run changed the start offset from %d to %d", start, startOffset(g, tp));
        r = ok("--reset-offsets", "--group", g, "--topic", t, "--to-earliest", "--execute");
        require(row(r, g).equals(List.of(g, t, "0", "0")), "--to-earliest --execute row %s", row(r, g));
        require(startOffset(g, tp) == 0, "start offset %d after --to-earliest", startOffset(g, tp));
        r = ok("--reset-offsets", "--group", g, "--topic", t, "--to-latest", "--execute");
        require(row(r, g).equals(List.of(g, t, "0", "10")), "--to-latest row %s", row(r, g));
        require(startOffset(g, tp) == 10, "start offset %d after --to-latest", startOffset(g, tp));
        r = ok("--reset-offsets", "--group", g, "--topic", t, "--to-offset", "7", "--execute");
        require(row(r, g).equals(List.of(g, t, "0", "7")), "--to-offset 7 row %s", row(r, g));
        require(startOffset(g, tp) == 7, "start offset %d after --to-offset 7", startOffset(g, tp));
        r = ok("--describe", "--group", g);
        require(row(r, g).equals(List.of(g, t, "0", "7", "3")), "--describe after --to-offset 7: row %s, want start 7 lag 3", row(r, g));

        // A consumer after the reset starts at 7.
        Map<Long, Integer> again = new TreeMap<>();
        try (var consumer = consumer(g, "implicit")) {
            consumer.subscribe(List.of(t));
            pollUntil(consumer, false, "offsets 7-9 after the reset", r2 -> again.merge(r2.offset(), 1, Integer::sum),
                    () -> again.size() >= 3);
            commit(consumer);
        }
        require(again.equals(Map.of(7L, 1, 8L, 1, 9L, 1)), "after --to-offset 7 a consumer got %s, want 7, 8, 9", again);
        waitFor("the group to be Empty again", () -> describe(g) != null && describe(g).groupState() == GroupState.EMPTY);

        r = ok("--delete-offsets", "--group", g, "--topic", t);
        require(row(r, t).equals(List.of(t, "Successful")), "--delete-offsets row %s", row(r, t));
        require(shareOffsets(g, tp).get(tp) == null || startOffset(g, tp) == -1,
                "after --delete-offsets the group still has %s", shareOffsets(g, tp));
        r = ok("--delete", "--group", g);
        require(r.out().contains("Deletion of requested share groups ('" + g + "') was successful."), "--delete printed %s", r.out());
        r = ok("--list");
        require(!r.lines().contains(g), "--list still names %s after --delete", g);
    }
}
