package samsa.compat;

import static samsa.compat.Checks.log;
import static samsa.compat.Checks.require;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.DescribeClusterOptions;
import org.apache.kafka.clients.admin.DescribeProducersOptions;
import org.apache.kafka.clients.admin.ListGroupsOptions;
import org.apache.kafka.clients.admin.ListTransactionsOptions;
import org.apache.kafka.clients.admin.NewPartitions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.RecordsToDelete;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.admin.TransactionListing;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.GroupState;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.InvalidConfigurationException;
import org.apache.kafka.common.errors.InvalidPartitionsException;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;

/** AdminChecks calls the Admin API of kafka-clients 4.4 for every admin request samsa serves. */
final class AdminChecks {
    private final ClientChecks c;

    AdminChecks(ClientChecks c) {
        this.c = c;
    }

    private static final int T = 30; // seconds per admin call

    /** expectError requires that f fails with an exception of class want (as its cause). */
    static void expectError(String what, Class<? extends Throwable> want, org.apache.kafka.common.KafkaFuture<?> f) throws Exception {
        try {
            f.get(T, TimeUnit.SECONDS);
        } catch (ExecutionException e) {
            require(want.isInstance(e.getCause()), "%s failed with %s, want %s", what, e.getCause(), want.getSimpleName());
            return;
        }
        throw new Checks.CheckFailed(what + " succeeded, want " + want.getSimpleName());
    }

    int brokerId() throws Exception {
        return c.admin.describeCluster().nodes().get(T, TimeUnit.SECONDS).iterator().next().id();
    }

    /** topicsAndPartitions: create (with configs), list, describe, duplicate create, createPartitions, delete. */
    void topicsAndPartitions() throws Exception {
        String t = c.topic("admin-topics");
        NewTopic nt = new NewTopic(t, 2, (short) 1).configs(Map.of("cleanup.policy", "compact", "retention.ms", "3600000"));
        var res = c.admin.createTopics(List.of(nt));
        res.all().get(T, TimeUnit.SECONDS);
        require(res.numPartitions(t).get() == 2, "createTopics numPartitions = %d, want 2", res.numPartitions(t).get());
        Config created = res.config(t).get();
        require("compact".equals(created.get("cleanup.policy").value()), "createTopics config cleanup.policy = %s", created.get("cleanup.policy"));
        c.waitLeaders(t, 2);
        Set<String> names = c.admin.listTopics().names().get(T, TimeUnit.SECONDS);
        require(names.contains(t), "listTopics does not list %s", t);
        expectError("createTopics of an existing topic", TopicExistsException.class, c.admin.createTopics(List.of(new NewTopic(t, 1, (short) 1))).all());
        expectError("createTopics with an invalid config value", InvalidConfigurationException.class,
                c.admin.createTopics(List.of(new NewTopic(c.topic("admin-badcfg"), 1, (short) 1).configs(Map.of("cleanup.policy", "bogus")))).all());

        c.admin.createPartitions(Map.of(t, NewPartitions.increaseTo(5))).all().get(T, TimeUnit.SECONDS);
        c.waitLeaders(t, 5);
        TopicDescription d = c.admin.describeTopics(List.of(t)).allTopicNames().get(T, TimeUnit.SECONDS).get(t);
        require(d.partitions().size() == 5 && !d.isInternal() && d.topicId() != null, "describeTopics after createPartitions: %s", d);
        for (var p : d.partitions()) {
            require(p.leader() != null && p.replicas().size() == 1 && p.isr().size() == 1, "partition %d: %s", p.partition(), p);
        }
        expectError("createPartitions to fewer partitions", InvalidPartitionsException.class,
                c.admin.createPartitions(Map.of(t, NewPartitions.increaseTo(3))).all());

        c.admin.deleteTopics(List.of(t)).all().get(T, TimeUnit.SECONDS);
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (c.admin.listTopics().names().get(T, TimeUnit.SECONDS).contains(t)) {
            require(System.nanoTime() < deadline, "%s still listed 30 s after deleteTopics", t);
            Thread.sleep(50); // polling interval
        }
        expectError("describeTopics of a deleted topic", UnknownTopicOrPartitionException.class,
                c.admin.describeTopics(List.of(t)).allTopicNames());
        log("created %s with 2 partitions and configs, grew it to 5, deleted it", t);
    }

    static Map<String, ConfigEntry> entries(Config cfg) {
        return cfg.entries().stream().collect(Collectors.toMap(ConfigEntry::name, e -> e));
    }

    /** configs: describeConfigs of a topic and the broker, incrementalAlterConfigs SET/DELETE/APPEND/SUBTRACT and validateOnly. */
    void configs() throws Exception {
        String t = c.topic("admin-configs");
        c.createTopic(t, 1, Map.of("retention.ms", "7200000"));
        ConfigResource topic = new ConfigResource(ConfigResource.Type.TOPIC, t);
        ConfigResource broker = new ConfigResource(ConfigResource.Type.BROKER, Integer.toString(brokerId()));
        var both = c.admin.describeConfigs(List.of(topic, broker)).all().get(T, TimeUnit.SECONDS);
        Map<String, ConfigEntry> te = entries(both.get(topic));
        ConfigEntry ret = te.get("retention.ms");
        require(ret != null && "7200000".equals(ret.value()) && ret.source() == ConfigEntry.ConfigSource.DYNAMIC_TOPIC_CONFIG,
                "topic retention.ms = %s, want 7200000 from DYNAMIC_TOPIC_CONFIG", ret);
        ConfigEntry seg = te.get("segment.bytes");
        require(seg != null && seg.source() == ConfigEntry.ConfigSource.DEFAULT_CONFIG && seg.isDefault(),
                "topic segment.bytes = %s, want a DEFAULT_CONFIG entry", seg);
        for (String name : List.of("cleanup.policy", "compression.type", "max.message.bytes", "min.insync.replicas", "message.timestamp.type")) {
            require(te.containsKey(name), "describeConfigs(topic) lacks %s", name);
        }
        Map<String, ConfigEntry> be = entries(both.get(broker));
        for (String name : List.of("log.retention.hours", "num.partitions", "log.segment.bytes", "auto.create.topics.enable")) {
            require(be.containsKey(name), "describeConfigs(broker) lacks %s (has %d entries)", name, be.size());
        }

        // SET two, DELETE the dynamic retention.ms, APPEND to a list config.
        Collection<AlterConfigOp> ops = List.of(
                new AlterConfigOp(new ConfigEntry("max.message.bytes", "2000000"), AlterConfigOp.OpType.SET),
                new AlterConfigOp(new ConfigEntry("cleanup.policy", "compact"), AlterConfigOp.OpType.APPEND),
                new AlterConfigOp(new ConfigEntry("retention.ms", ""), AlterConfigOp.OpType.DELETE));
        c.admin.incrementalAlterConfigs(Map.of(topic, ops)).all().get(T, TimeUnit.SECONDS);
        te = entries(c.admin.describeConfigs(List.of(topic)).all().get(T, TimeUnit.SECONDS).get(topic));
        require("2000000".equals(te.get("max.message.bytes").value()), "max.message.bytes after SET = %s", te.get("max.message.bytes"));
        require(Set.of("delete", "compact").equals(Set.of(te.get("cleanup.policy").value().split(","))),
                "cleanup.policy after APPEND compact = %s, want delete,compact", te.get("cleanup.policy"));
        require(te.get("retention.ms").source() == ConfigEntry.ConfigSource.DEFAULT_CONFIG, "retention.ms after DELETE = %s, want the default", te.get("retention.ms"));
        c.admin.incrementalAlterConfigs(Map.of(topic, List.of(
                new AlterConfigOp(new ConfigEntry("cleanup.policy", "delete"), AlterConfigOp.OpType.SUBTRACT)))).all().get(T, TimeUnit.SECONDS);
        te = entries(c.admin.describeConfigs(List.of(topic)).all().get(T, TimeUnit.SECONDS).get(topic));
        require("compact".equals(te.get("cleanup.policy").value()), "cleanup.policy after SUBTRACT delete = %s", te.get("cleanup.policy"));

        // validateOnly changes nothing; a bad value is rejected.
        c.admin.incrementalAlterConfigs(Map.of(topic, List.of(new AlterConfigOp(new ConfigEntry("segment.ms", "60000"), AlterConfigOp.OpType.SET))),
                new org.apache.kafka.clients.admin.AlterConfigsOptions().validateOnly(true)).all().get(T, TimeUnit.SECONDS);
        te = entries(c.admin.describeConfigs(List.of(topic)).all().get(T, TimeUnit.SECONDS).get(topic));
        require(te.get("segment.ms").source() == ConfigEntry.ConfigSource.DEFAULT_CONFIG, "segment.ms changed by a validateOnly alter: %s", te.get("segment.ms"));
        expectError("incrementalAlterConfigs with cleanup.policy=bogus", InvalidConfigurationException.class,
                c.admin.incrementalAlterConfigs(Map.of(topic, List.of(new AlterConfigOp(new ConfigEntry("cleanup.policy", "bogus"), AlterConfigOp.OpType.SET)))).all());
        log("describeConfigs of %s (%d entries) and broker (%d entries); incrementalAlterConfigs SET/APPEND/DELETE/SUBTRACT/validateOnly", t, te.size(), be.size());
    }

    /** deleteRecords: the low watermark moves, ListOffsets earliest follows it, a consumer starts there. */
    void deleteRecords() throws Exception {
        String t = c.topic("admin-delrec");
        c.createTopic(t, 2, null);
        try (var p = c.producer(Map.of())) {
            ClientChecks.send(p, t, ClientChecks.wants("del", 200, System.currentTimeMillis(), 2));
        }
        TopicPartition p0 = new TopicPartition(t, 0), p1 = new TopicPartition(t, 1);
        var res = c.admin.deleteRecords(Map.of(p0, RecordsToDelete.beforeOffset(40), p1, RecordsToDelete.beforeOffset(-1)));
        long low0 = res.lowWatermarks().get(p0).get(T, TimeUnit.SECONDS).lowWatermark();
        long low1 = res.lowWatermarks().get(p1).get(T, TimeUnit.SECONDS).lowWatermark();
        require(low0 == 40 && low1 == 100, "deleteRecords low watermarks %d and %d, want 40 and 100 (-1 means the high watermark)", low0, low1);
        var earliest = c.admin.listOffsets(Map.of(p0, OffsetSpec.earliest(), p1, OffsetSpec.earliest())).all().get(T, TimeUnit.SECONDS);
        require(earliest.get(p0).offset() == 40 && earliest.get(p1).offset() == 100, "earliest offsets after deleteRecords: %s", earliest);
        var got = c.readAll(t, 2, 60, "read_uncommitted");
        require(got.get(0).size() == 60 && got.get(0).get(0).offset() == 40 && got.get(1).isEmpty(),
                "after deleteRecords, read %d records of partition 0 from offset %s and %d of partition 1; want 60 from 40 and none",
                got.get(0).size(), got.get(0).isEmpty() ? "-" : got.get(0).get(0).offset(), got.get(1).size());
        expectError("deleteRecords beyond the high watermark", org.apache.kafka.common.errors.OffsetOutOfRangeException.class,
                c.admin.deleteRecords(Map.of(p0, RecordsToDelete.beforeOffset(1000))).all());
        log("deleteRecords moved low watermarks to 40 and 100");
    }

    /** groupsAndOffsets: listGroups, describeConsumerGroups, list/alter/delete group offsets, deleteConsumerGroups. */
    void groupsAndOffsets() throws Exception {
        String t = c.topic("admin-groups");
        String group = "java-admin-group-" + c.run;
        c.createTopic(t, 2, null);
        try (var p = c.producer(Map.of())) {
            ClientChecks.send(p, t, ClientChecks.wants("grp", 100, System.currentTimeMillis(), 2));
        }
        TopicPartition p0 = new TopicPartition(t, 0), p1 = new TopicPartition(t, 1);
        try (var consumer = c.consumer(Map.of(ConsumerConfig.GROUP_ID_CONFIG, group, ConsumerConfig.GROUP_PROTOCOL_CONFIG, "classic"))) {
            consumer.subscribe(List.of(t));
            int n = 0;
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (n < 100) {
                require(System.nanoTime() < deadline, "group consumer read %d of 100 records", n);
                n += consumer.poll(Duration.ofMillis(200)).count();
            }
            consumer.commitSync(Map.of(p0, new OffsetAndMetadata(50, "meta-0"), p1, new OffsetAndMetadata(30)));
            var listed = c.admin.listGroups(ListGroupsOptions.forConsumerGroups()).all().get(T, TimeUnit.SECONDS);
            var mine = listed.stream().filter(g -> g.groupId().equals(group)).findFirst();
            require(mine.isPresent() && mine.get().groupState().orElse(null) == GroupState.STABLE,
                    "listGroups: %s, want %s listed STABLE", listed, group);
            var d = c.admin.describeConsumerGroups(List.of(group)).all().get(T, TimeUnit.SECONDS).get(group);
            require(d.groupState() == GroupState.STABLE && d.members().size() == 1 && "range".equals(d.partitionAssignor())
                    && d.coordinator() != null && d.members().iterator().next().assignment().topicPartitions().equals(Set.of(p0, p1)),
                    "describeConsumerGroups: %s", d);
            expectError("deleteConsumerGroups of a non-empty group", org.apache.kafka.common.errors.GroupNotEmptyException.class,
                    c.admin.deleteConsumerGroups(List.of(group)).all());
        }
        var offs = c.admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get(T, TimeUnit.SECONDS);
        require(offs.get(p0).offset() == 50 && "meta-0".equals(offs.get(p0).metadata()) && offs.get(p1).offset() == 30,
                "listConsumerGroupOffsets = %s, want p0=50 (meta-0), p1=30", offs);
        var d = c.admin.describeConsumerGroups(List.of(group)).all().get(T, TimeUnit.SECONDS).get(group);
        require(d.groupState() == GroupState.EMPTY && d.members().isEmpty(), "group after its consumer closed: %s, want EMPTY", d);
        c.admin.alterConsumerGroupOffsets(group, Map.of(p0, new OffsetAndMetadata(10), p1, new OffsetAndMetadata(45))).all().get(T, TimeUnit.SECONDS);
        offs = c.admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get(T, TimeUnit.SECONDS);
        require(offs.get(p0).offset() == 10 && offs.get(p1).offset() == 45, "after alterConsumerGroupOffsets: %s, want 10 and 45", offs);
        c.admin.deleteConsumerGroupOffsets(group, Set.of(p1)).all().get(T, TimeUnit.SECONDS);
        offs = c.admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get(T, TimeUnit.SECONDS);
        require(offs.get(p0) != null && offs.get(p0).offset() == 10 && offs.get(p1) == null, "after deleteConsumerGroupOffsets(p1): %s", offs);
        c.admin.deleteConsumerGroups(List.of(group)).all().get(T, TimeUnit.SECONDS);
        var after = c.admin.listGroups(ListGroupsOptions.forConsumerGroups()).all().get(T, TimeUnit.SECONDS);
        require(after.stream().noneMatch(g -> g.groupId().equals(group)), "group %s still listed after deleteConsumerGroups: %s", group, after);
        expectError("describe of a deleted group's offsets", org.apache.kafka.common.errors.GroupIdNotFoundException.class,
                c.admin.deleteConsumerGroups(List.of(group)).all());
        log("group %s listed, described, offsets listed/altered/deleted, group deleted", group);
    }

    /** transactionsAndProducers: listTransactions, describeTransactions of an open transaction, describeProducers. */
    void transactionsAndProducers() throws Exception {
        String t = c.topic("admin-txn");
        String txid = "java-admin-txn-" + c.run;
        c.createTopic(t, 2, null);
        TopicPartition p0 = new TopicPartition(t, 0), p1 = new TopicPartition(t, 1);
        try (var idem = c.producer(Map.of(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true));
             var p = c.producer(Map.of(ProducerConfig.TRANSACTIONAL_ID_CONFIG, txid))) {
            ClientChecks.send(idem, t, ClientChecks.wants("idem", 10, System.currentTimeMillis()).stream()
                    .map(w -> new ClientChecks.Want(w.i(), 1, w.key(), w.value(), w.timestamp())).toList());
            p.initTransactions();
            p.beginTransaction();
            ClientChecks.send(p, t, ClientChecks.wants("open", 6, System.currentTimeMillis()).stream()
                    .map(w -> new ClientChecks.Want(w.i(), 0, w.key(), w.value(), w.timestamp())).toList());
            Collection<TransactionListing> listed = c.admin.listTransactions().all().get(T, TimeUnit.SECONDS);
            var mine = listed.stream().filter(l -> l.transactionalId().equals(txid)).findFirst();
            require(mine.isPresent() && mine.get().state() == org.apache.kafka.clients.admin.TransactionState.ONGOING,
                    "listTransactions: %s, want %s ONGOING", listed, txid);
            // ListTransactions v2 (KIP-1152): the pattern (re2j) must match the whole id.
            for (var pc : List.of(Map.entry(txid, true), Map.entry("java-admin-txn-.*", true), Map.entry("java-admin-txn", false))) {
                var byPattern = c.admin.listTransactions(new ListTransactionsOptions().filterOnTransactionalIdPattern(pc.getKey()))
                        .all().get(T, TimeUnit.SECONDS);
                boolean found = byPattern.stream().anyMatch(l -> l.transactionalId().equals(txid));
                require(found == pc.getValue(), "listTransactions(pattern %s) = %s, want %s listed: %s", pc.getKey(), byPattern, txid, pc.getValue());
            }
            var desc = c.admin.describeTransactions(List.of(txid)).all().get(T, TimeUnit.SECONDS).get(txid);
            require(desc.state() == org.apache.kafka.clients.admin.TransactionState.ONGOING && desc.topicPartitions().equals(Set.of(p0))
                    && desc.producerId() == mine.get().producerId() && desc.transactionStartTimeMs().isPresent(),
                    "describeTransactions(%s) = %s, want ONGOING on [%s]", txid, desc, p0);
            var producers = c.admin.describeProducers(List.of(p0, p1)).all().get(T, TimeUnit.SECONDS);
            var s0 = producers.get(p0).activeProducers();
            var s1 = producers.get(p1).activeProducers();
            require(s0.size() == 1 && s0.get(0).producerId() == desc.producerId() && s0.get(0).currentTransactionStartOffset().orElse(-1) == 0
                    && s0.get(0).lastSequence() == 5, "describeProducers(%s) = %s, want one producer %d, last sequence 5, transaction from offset 0", p0, s0, desc.producerId());
            require(s1.size() == 1 && s1.get(0).lastSequence() == 9 && s1.get(0).currentTransactionStartOffset().isEmpty(),
                    "describeProducers(%s) = %s, want one idempotent producer with last sequence 9 and no transaction", p1, s1);
            p.commitTransaction();
            // Kafka answers PrepareCommit until the markers are written; poll for CompleteCommit.
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            desc = c.admin.describeTransactions(List.of(txid)).all().get(T, TimeUnit.SECONDS).get(txid);
            while (desc.state() == org.apache.kafka.clients.admin.TransactionState.PREPARE_COMMIT && System.nanoTime() < deadline) {
                Thread.sleep(50); // polling interval
                desc = c.admin.describeTransactions(List.of(txid)).all().get(T, TimeUnit.SECONDS).get(txid);
            }
            require(desc.state() == org.apache.kafka.clients.admin.TransactionState.COMPLETE_COMMIT && desc.topicPartitions().isEmpty(),
                    "describeTransactions after commit = %s, want CompleteCommit with no partitions", desc);
        }
        expectError("describeTransactions of an unknown id", org.apache.kafka.common.errors.TransactionalIdNotFoundException.class,
                c.admin.describeTransactions(List.of("java-no-such-txn-" + c.run)).all());
        log("listTransactions (by state and by whole-id pattern), describeTransactions (ongoing and committed), describeProducers");
    }

    /** logDirsAndCluster: describeCluster and describeLogDirs list this broker and the topic's replicas. */
    void logDirsAndCluster() throws Exception {
        String t = c.topic("admin-logdirs");
        c.createTopic(t, 2, null);
        try (var p = c.producer(Map.of())) {
            ClientChecks.send(p, t, ClientChecks.wants("ld", 100, System.currentTimeMillis(), 2));
        }
        var cl = c.admin.describeCluster();
        var nodes = cl.nodes().get(T, TimeUnit.SECONDS);
        String clusterId = cl.clusterId().get(T, TimeUnit.SECONDS);
        var controller = cl.controller().get(T, TimeUnit.SECONDS);
        require(nodes.size() == 1 && clusterId != null && !clusterId.isEmpty() && controller != null,
                "describeCluster: nodes %s, cluster id %s, controller %s", nodes, clusterId, controller);
        int id = nodes.iterator().next().id();
        // DescribeCluster v2: fenced brokers on request, each marked.
        var withFenced = c.admin.describeCluster(new DescribeClusterOptions().includeFencedBrokers(true)).nodes().get(T, TimeUnit.SECONDS);
        require(withFenced.size() == 1 && withFenced.iterator().next().id() == id && !withFenced.iterator().next().isFenced(),
                "describeCluster(includeFencedBrokers) = %s, want node %d, not fenced", withFenced, id);
        // The feature flags a fresh Kafka 4.4 cluster finalizes (ApiVersions through describeFeatures).
        var features = c.admin.describeFeatures().featureMetadata().get(T, TimeUnit.SECONDS);
        var fin = features.finalizedFeatures();
        require(fin.containsKey("metadata.version") && fin.get("metadata.version").maxVersionLevel() == 33
                && fin.containsKey("transaction.version") && fin.get("transaction.version").maxVersionLevel() == 2
                && features.supportedFeatures().containsKey("kraft.version"),
                "describeFeatures: finalized %s, supported %s", fin, features.supportedFeatures());
        // ListOffsets v11: earliest pending upload is -1 without tiered storage.
        TopicPartition tp0 = new TopicPartition(t, 0);
        var pending = c.admin.listOffsets(Map.of(tp0, OffsetSpec.earliestPendingUpload())).all().get(T, TimeUnit.SECONDS).get(tp0);
        require(pending.offset() == -1, "listOffsets(earliestPendingUpload) = %s, want offset -1", pending);
        var dirs = c.admin.describeLogDirs(List.of(id)).allDescriptions().get(T, TimeUnit.SECONDS).get(id);
        require(dirs != null && !dirs.isEmpty(), "describeLogDirs(%d) = %s", id, dirs);
        List<String> problems = new ArrayList<>();
        long total = 0;
        Map<Integer, Long> sizes = new HashMap<>();
        for (var e : dirs.entrySet()) {
            var ld = e.getValue();
            if (ld.error() != null) {
                problems.add(e.getKey() + ": " + ld.error());
            }
            for (var r : ld.replicaInfos().entrySet()) {
                if (r.getKey().topic().equals(t)) {
                    sizes.put(r.getKey().partition(), r.getValue().size());
                }
            }
            total += ld.totalBytes().orElse(0);
        }
        require(problems.isEmpty(), "describeLogDirs errors: %s", problems);
        require(sizes.size() == 2 && sizes.values().stream().allMatch(s -> s > 0), "describeLogDirs replica sizes of %s = %s, want two non-empty", t, sizes);
        require(total > 0, "describeLogDirs totalBytes not reported");
        log("describeCluster %s (%d node, also with fenced brokers), describeFeatures, listOffsets(earliestPendingUpload), describeLogDirs %s", clusterId, nodes.size(), sizes);
    }
}
