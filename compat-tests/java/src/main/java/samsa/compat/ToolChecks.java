package samsa.compat;

import static samsa.compat.Checks.log;
import static samsa.compat.Checks.require;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.InputStream;
import java.io.PrintStream;
import java.lang.reflect.InvocationTargetException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.kafka.clients.admin.ListOffsetsResult;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.utils.internals.Exit;

/**
 * ToolChecks runs Kafka 4.4's own command-line tools (the main classes behind bin/kafka-*.sh, from
 * kafka-tools) against one broker, all inside this JVM so that twenty tool runs cost one JVM
 * start. Each run swaps System.in/out/err, turns Exit.exit into an exception carrying the status,
 * and the check asserts on what the tool printed and on the broker's state afterwards (read with
 * the Admin client), not only on the exit status.
 *
 * <p>Usage: {@code java samsa.compat.ToolChecks BOOTSTRAP [check...|all]}.
 */
public final class ToolChecks {
    final ClientChecks c;
    final String bootstrap;

    ToolChecks(ClientChecks c) {
        this.c = c;
        this.bootstrap = c.bootstrap;
    }

    public static void main(String[] args) throws Exception {
        if (args.length < 1) {
            System.err.println("usage: ToolChecks BOOTSTRAP [check...|all]");
            System.exit(2);
        }
        String run = Long.toString(System.currentTimeMillis() % 100_000_000L, 36);
        ClientChecks c = new ClientChecks(args[0], run);
        ToolChecks t = new ToolChecks(c);
        Checks checks = new Checks();
        checks.add("kafka-topics", t::topics);
        checks.add("kafka-configs", t::configs);
        checks.add("kafka-console-producer-consumer", t::console);
        checks.add("kafka-consumer-groups", t::consumerGroups);
        checks.add("kafka-get-offsets-delete-records", t::offsetsAndDeleteRecords);
        checks.add("kafka-transactions", t::transactions);
        checks.add("kafka-perf-tests", t::perfTests);
        runWithTools(c, checks, args);
    }

    /**
     * runWithTools is the main of a check class whose checks run CLI tools (ToolChecks,
     * ShareChecks): it runs the checks named after BOOTSTRAP in args (all when none) with the
     * tools' exits and shutdown hooks captured (tool), closes c's admin client, and halts, with
     * status 0 when every check passed. Tools leave non-daemon threads behind (console consumer
     * shutdown hooks), so main cannot just return.
     */
    static void runWithTools(ClientChecks c, Checks checks, String[] args) {
        Exit.setExitProcedure(ToolChecks::exit);
        Exit.setHaltProcedure(ToolChecks::exit);
        Exit.setShutdownHookAdder((name, hook) -> hooks.add(hook));
        int failed;
        try {
            failed = checks.run(Arrays.asList(args).subList(1, args.length));
        } finally {
            c.admin.close(Duration.ofSeconds(5));
        }
        System.out.flush();
        Runtime.getRuntime().halt(failed == 0 ? 0 : 1);
    }

    /** ToolExit is Exit.exit called by a tool, turned into an exception. */
    static final class ToolExit extends RuntimeException {
        final int status;

        ToolExit(int status, String message) {
            super("exit " + status + (message == null ? "" : ": " + message));
            this.status = status;
        }
    }

    /**
     * firstExit is the status of the first Exit.exit of the running tool, or null. Some tools
     * catch Throwable around a body that ends in Exit.exit(0) and then call Exit.exit(1): the
     * first call is the tool's answer.
     */
    static Integer firstExit;

    /**
     * hooks are the shutdown hooks the running tool registered (the console producer closes,
     * and so flushes, its producer in one); they run when the tool's main returns, as they
     * would at JVM exit.
     */
    static final List<Runnable> hooks = new ArrayList<>();

    static void exit(int status, String message) {
        if (firstExit == null) {
            firstExit = status;
        }
        throw new ToolExit(status, message);
    }

    /** Result is what one tool run printed and its exit status (0 when main returned). */
    record Result(int status, String out, String err) {
        List<String> lines() {
            List<String> l = new ArrayList<>();
            for (String s : out.split("\n")) {
                if (!s.isBlank()) {
                    l.add(s.strip());
                }
            }
            return l;
        }
    }

    static final Map<String, String> CLASSES = Map.ofEntries(
            Map.entry("kafka-topics", "org.apache.kafka.tools.TopicCommand"),
            Map.entry("kafka-configs", "org.apache.kafka.tools.ConfigCommand"),
            Map.entry("kafka-console-producer", "org.apache.kafka.tools.ConsoleProducer"),
            Map.entry("kafka-console-consumer", "org.apache.kafka.tools.consumer.ConsoleConsumer"),
            Map.entry("kafka-consumer-groups", "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand"),
            Map.entry("kafka-share-groups", "org.apache.kafka.tools.consumer.group.ShareGroupCommand"),
            Map.entry("kafka-get-offsets", "org.apache.kafka.tools.GetOffsetShell"),
            Map.entry("kafka-delete-records", "org.apache.kafka.tools.DeleteRecordsCommand"),
            Map.entry("kafka-transactions", "org.apache.kafka.tools.TransactionsCommand"),
            Map.entry("kafka-producer-perf-test", "org.apache.kafka.tools.ProducerPerformance"),
            Map.entry("kafka-consumer-perf-test", "org.apache.kafka.tools.ConsumerPerformance"));

    /** tool runs one CLI tool's main in this JVM with stdin and returns what it printed. */
    static synchronized Result tool(String name, String stdin, String... args) throws Exception {
        Class<?> cls = Class.forName(CLASSES.get(name));
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        PrintStream oldOut = System.out;
        PrintStream oldErr = System.err;
        InputStream oldIn = System.in;
        int status = 0;
        firstExit = null;
        long start = System.nanoTime();
        try {
            System.setOut(new PrintStream(out, true, StandardCharsets.UTF_8));
            System.setErr(new PrintStream(err, true, StandardCharsets.UTF_8));
            System.setIn(new ByteArrayInputStream((stdin == null ? "" : stdin).getBytes(StandardCharsets.UTF_8)));
            cls.getMethod("main", String[].class).invoke(null, (Object) args);
        } catch (InvocationTargetException e) {
            if (e.getCause() instanceof ToolExit) {
                status = firstExit;
            } else {
                throw e;
            }
        } finally {
            runHooks();
            System.out.flush();
            System.err.flush();
            System.setOut(oldOut);
            System.setErr(oldErr);
            System.setIn(oldIn);
        }
        Result r = new Result(status, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
        log("$ %s %s -> exit %d in %d ms, %d lines", name, String.join(" ", args), status,
                (System.nanoTime() - start) / 1_000_000, r.lines().size());
        return r;
    }

    /** runHooks runs the registered shutdown hooks, each in a thread, waiting up to 30 s. */
    static void runHooks() throws InterruptedException {
        List<Thread> threads = new ArrayList<>();
        for (Runnable h : hooks) {
            Thread th = new Thread(h, "tool-shutdown-hook");
            th.setDaemon(true);
            th.start();
            threads.add(th);
        }
        hooks.clear();
        for (Thread th : threads) {
            th.join(30_000);
        }
    }

    /** ok runs a tool that must succeed and returns its result. */
    static Result ok(String name, String... args) throws Exception {
        return okIn(name, null, args);
    }

    static Result okIn(String name, String stdin, String... args) throws Exception {
        Result r = tool(name, stdin, args);
        require(r.status == 0, "%s %s: exit %d\nstdout: %s\nstderr: %s", name, String.join(" ", args), r.status,
                ClientChecks.abbreviate(r.out), ClientChecks.abbreviate(r.err));
        return r;
    }

    String[] withBootstrap(String... args) {
        return bootstrapArgs(bootstrap, args);
    }

    /** bootstrapArgs returns a tool's args with --bootstrap-server bootstrap first. */
    static String[] bootstrapArgs(String bootstrap, String... args) {
        String[] a = new String[args.length + 2];
        a[0] = "--bootstrap-server";
        a[1] = bootstrap;
        System.arraycopy(args, 0, a, 2, args.length);
        return a;
    }

    /**
     * firstColumn is the first cell of a line of a tool's table. The tools pad cells with spaces
     * and separate them with a tab, so an id as wide as its column is followed by the tab alone
     * (a transactional id of 15 characters under "TransactionalId"; the run id in it is 6
     * characters for about 11 hours of every 28).
     */
    static String firstColumn(String line) {
        String[] cells = line.trim().split("\\s+", 2);
        return cells[0];
    }

    static boolean hasLine(Result r, String line) {
        return r.lines().contains(line);
    }

    long endOffset(TopicPartition tp, OffsetSpec spec) throws Exception {
        ListOffsetsResult res = c.admin.listOffsets(Map.of(tp, spec));
        return res.partitionResult(tp).get(30, TimeUnit.SECONDS).offset();
    }

    /** pollUntil calls probe until it returns true or 30 s pass. */
    static boolean pollUntil(Checks.Body probe, java.util.function.BooleanSupplier done) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (true) {
            probe.run();
            if (done.getAsBoolean()) {
                return true;
            }
            if (System.nanoTime() > deadline) {
                return false;
            }
            Thread.sleep(200);
        }
    }

    // ---- kafka-topics ----------------------------------------------------------------------

    void topics() throws Exception {
        String t = c.topic("tool-topics");
        Result r = ok("kafka-topics", withBootstrap("--create", "--topic", t, "--partitions", "3",
                "--replication-factor", "1", "--config", "retention.ms=3600000"));
        require(r.out.contains("Created topic " + t + "."), "create: want 'Created topic %s.', got %s", t, r.out);
        r = tool("kafka-topics", null, withBootstrap("--create", "--topic", t, "--partitions", "3"));
        require(r.status != 0 && (r.out + r.err).contains("already exists"),
                "create again: want a failure saying it already exists, got exit %d: %s %s", r.status, r.out, r.err);
        r = ok("kafka-topics", withBootstrap("--list"));
        require(hasLine(r, t), "list: %s missing from %s", t, r.lines());
        r = ok("kafka-topics", withBootstrap("--describe", "--topic", t));
        require(r.out.contains("PartitionCount: 3") && r.out.contains("retention.ms=3600000"),
                "describe: want PartitionCount: 3 and retention.ms=3600000, got %s", r.out);
        for (int p = 0; p < 3; p++) {
            require(Pattern.compile("Partition: " + p + "\\s+Leader: \\d+\\s+Replicas: \\d+\\s+Isr: \\d+")
                    .matcher(r.out).find(), "describe: no line for partition %d with leader, replicas, isr: %s", p, r.out);
        }
        ok("kafka-topics", withBootstrap("--alter", "--topic", t, "--partitions", "5"));
        r = ok("kafka-topics", withBootstrap("--describe", "--topic", t));
        require(r.out.contains("PartitionCount: 5"), "describe after --alter --partitions 5: %s", r.out);
        r = tool("kafka-topics", null, withBootstrap("--alter", "--topic", t, "--partitions", "2"));
        // Kafka 4.4's message; samsa said "Topic currently has 5 partitions, which is higher
        // than the requested 2." until this check.
        require(r.status != 0 && (r.out + r.err).contains("InvalidPartitionsException")
                && r.out.contains("The topic " + t + " currently has 5 partition(s); 2 would not be an increase."),
                "alter to fewer partitions: want a failure, got exit %d: %s %s", r.status, r.out, r.err);
        r = ok("kafka-topics", withBootstrap("--describe", "--under-replicated-partitions"));
        require(!r.out.contains(t), "under-replicated partitions list %s: %s", t, r.out);
        ok("kafka-topics", withBootstrap("--delete", "--topic", t));
        Result[] last = new Result[1];
        boolean gone = pollUntil(() -> last[0] = ok("kafka-topics", withBootstrap("--list")),
                () -> !hasLine(last[0], t));
        require(gone, "list after --delete still has %s", t);
        r = tool("kafka-topics", null, withBootstrap("--describe", "--topic", t));
        require(r.status != 0, "describe a deleted topic: want a failure, got %s", r.out);
    }

    // ---- kafka-configs ---------------------------------------------------------------------

    void configs() throws Exception {
        String t = c.topic("tool-configs");
        c.createTopic(t, 1, null);
        ok("kafka-configs", withBootstrap("--entity-type", "topics", "--entity-name", t, "--alter",
                "--add-config", "retention.ms=1234567,cleanup.policy=compact,max.message.bytes=200000"));
        Result r = ok("kafka-configs", withBootstrap("--entity-type", "topics", "--entity-name", t, "--describe"));
        for (String kv : List.of("retention.ms=1234567", "cleanup.policy=compact", "max.message.bytes=200000")) {
            require(r.out.contains(kv), "describe after --add-config: %s missing from %s", kv, r.out);
        }
        ok("kafka-configs", withBootstrap("--entity-type", "topics", "--entity-name", t, "--alter",
                "--delete-config", "retention.ms"));
        // Kafka 4.4's broker applies the committed change a little after it
        // answers (seen once in CI), so the describe is polled, as the topic
        // deletion above is.
        Result[] retentionGone = new Result[1];
        pollUntil(() -> retentionGone[0] = ok("kafka-configs", withBootstrap("--entity-type", "topics", "--entity-name", t, "--describe")),
                () -> !retentionGone[0].out.contains("retention.ms=1234567"));
        r = retentionGone[0];
        require(!r.out.contains("retention.ms=1234567") && r.out.contains("cleanup.policy=compact"),
                "describe after --delete-config retention.ms: %s", r.out);
        r = ok("kafka-configs", withBootstrap("--entity-type", "topics", "--entity-name", t, "--describe", "--all"));
        require(r.out.contains("retention.ms=604800000") && r.out.contains("segment.bytes=1073741824"),
                "describe --all: want the defaults retention.ms=604800000 and segment.bytes=1073741824, got %s",
                ClientChecks.abbreviate(r.out));
        r = tool("kafka-configs", null, withBootstrap("--entity-type", "topics", "--entity-name", t, "--alter",
                "--add-config", "retention.ms=notanumber"));
        require(r.status != 0, "alter retention.ms=notanumber: want a failure, got %s", r.out);
        String broker = c.admin.describeCluster().nodes().get(30, TimeUnit.SECONDS).iterator().next().idString();
        r = ok("kafka-configs", withBootstrap("--entity-type", "brokers", "--entity-name", broker, "--describe", "--all"));
        require(r.out.contains("log.retention.hours=168") && r.out.contains("num.partitions=1")
                && r.out.contains("background.threads=10") && r.out.contains("ssl.keystore.password=null"),
                "describe broker %s --all: want log.retention.hours=168, num.partitions=1, background.threads=10"
                        + " and ssl.keystore.password=null, got %s", broker, ClientChecks.abbreviate(r.out));
        // A dynamic broker setting (one samsa stores and describes without acting on it), set and
        // removed per broker; a read-only one refused.
        ok("kafka-configs", withBootstrap("--entity-type", "brokers", "--entity-name", broker, "--alter",
                "--add-config", "log.cleaner.threads=2"));
        // Kafka applies a dynamic setting after its metadata commit: poll.
        Result[] described = new Result[1];
        String[] describe = withBootstrap("--entity-type", "brokers", "--entity-name", broker, "--describe");
        boolean shown = pollUntil(() -> described[0] = ok("kafka-configs", describe),
                () -> described[0].out.contains("log.cleaner.threads=2")
                        && described[0].out.contains("DYNAMIC_BROKER_CONFIG:log.cleaner.threads=2"));
        require(shown, "describe broker %s after --add-config log.cleaner.threads=2: %s", broker, described[0].out);
        ok("kafka-configs", withBootstrap("--entity-type", "brokers", "--entity-name", broker, "--alter",
                "--delete-config", "log.cleaner.threads"));
        boolean gone = pollUntil(() -> described[0] = ok("kafka-configs", describe),
                () -> !described[0].out.contains("log.cleaner.threads=2"));
        require(gone, "describe broker %s after --delete-config: %s", broker, described[0].out);
        r = tool("kafka-configs", null, withBootstrap("--entity-type", "brokers", "--entity-name", broker, "--alter",
                "--add-config", "log.dirs=/x"));
        require(r.status != 0 && (r.out + r.err).contains("Cannot update these configs dynamically"),
                "alter read-only log.dirs: want a failure, got exit %d: %s %s", r.status, r.out, r.err);
        r = ok("kafka-configs", withBootstrap("--entity-type", "broker-loggers", "--entity-name", broker, "--describe"));
        require(r.out.contains("root="), "describe broker-loggers %s: want root, got %s", broker,
                ClientChecks.abbreviate(r.out));
    }

    // ---- console producer and consumer -------------------------------------------------------

    void console() throws Exception {
        String t = c.topic("tool-console");
        c.createTopic(t, 1, null);
        StringBuilder in = new StringBuilder();
        List<String> want = new ArrayList<>();
        for (int i = 0; i < 100; i++) {
            in.append("key-").append(i).append(':').append("value ").append(i).append('\n');
            want.add("key-" + i + "\tvalue " + i);
        }
        Result p = okIn("kafka-console-producer", in.toString(), withBootstrap("--topic", t, "--reader-property", "parse.key=true",
                "--reader-property", "key.separator=:", "--command-property", "acks=all",
                "--command-property", "compression.type=lz4"));
        long end = endOffset(new TopicPartition(t, 0), OffsetSpec.latest());
        require(end == 100, "end offset after console producer: %d, want 100; it printed %s %s", end, p.out, p.err);
        Result r = ok("kafka-console-consumer", withBootstrap("--topic", t, "--from-beginning", "--max-messages", "100",
                "--timeout-ms", "30000", "--formatter-property", "print.key=true"));
        require(r.lines().equals(want), "console consumer printed %d lines, want the 100 key<TAB>value lines: %s",
                r.lines().size(), ClientChecks.abbreviate(r.out));
        r = ok("kafka-console-consumer", withBootstrap("--topic", t, "--partition", "0", "--offset", "95",
                "--max-messages", "5", "--timeout-ms", "30000"));
        require(r.lines().equals(List.of("value 95", "value 96", "value 97", "value 98", "value 99")),
                "console consumer --offset 95: %s", r.lines());
    }

    // ---- kafka-consumer-groups -----------------------------------------------------------------

    void consumerGroups() throws Exception {
        String t = c.topic("tool-groups");
        String g = "tool-group-" + c.run;
        c.createTopic(t, 3, null);
        try (KafkaProducer<byte[], byte[]> p = c.producer(Map.of(ProducerConfig.ACKS_CONFIG, "all"))) {
            for (int i = 0; i < 90; i++) {
                p.send(new ProducerRecord<>(t, i % 3, null, ClientChecks.bytes("v" + i)));
            }
        }
        // Committed offsets 10, 20, 30 against end offsets 30: lag 20, 10, 0.
        Map<TopicPartition, OffsetAndMetadata> commit = new HashMap<>();
        for (int p = 0; p < 3; p++) {
            commit.put(new TopicPartition(t, p), new OffsetAndMetadata(10L * (p + 1)));
        }
        try (KafkaConsumer<byte[], byte[]> k = c.consumer(Map.of("group.id", g))) {
            k.commitSync(commit);
        }
        Result r = ok("kafka-consumer-groups", withBootstrap("--list"));
        require(hasLine(r, g), "--list: %s missing from %s", g, r.lines());
        r = ok("kafka-consumer-groups", withBootstrap("--describe", "--group", g));
        Map<Integer, long[]> rows = describeRows(r, g, t);
        require(rows.size() == 3, "--describe: want 3 rows for %s, got %s", t, r.out);
        for (int p = 0; p < 3; p++) {
            long[] row = rows.get(p);
            long cur = 10L * (p + 1);
            require(row != null && row[0] == cur && row[1] == 30 && row[2] == 30 - cur,
                    "--describe partition %d: want CURRENT-OFFSET %d LOG-END-OFFSET 30 LAG %d, got %s", p, cur,
                    30 - cur, row == null ? "no row" : Arrays.toString(row));
        }
        r = ok("kafka-consumer-groups", withBootstrap("--describe", "--group", g, "--state"));
        require(r.out.contains(g) && r.out.contains("Empty"), "--describe --state: want %s Empty, got %s", g, r.out);

        r = ok("kafka-consumer-groups", withBootstrap("--reset-offsets", "--group", g, "--topic", t, "--to-offset", "5",
                "--dry-run"));
        require(r.out.contains("NEW-OFFSET") && committed(g, t).equals(Map.of(0, 10L, 1, 20L, 2, 30L)),
                "--reset-offsets --dry-run changed the offsets or printed no plan: %s -> %s", r.out, committed(g, t));
        r = ok("kafka-consumer-groups", withBootstrap("--reset-offsets", "--group", g, "--topic", t, "--to-earliest",
                "--execute"));
        require(committed(g, t).equals(Map.of(0, 0L, 1, 0L, 2, 0L)), "--reset-offsets --to-earliest --execute: %s -> %s",
                r.out, committed(g, t));
        ok("kafka-consumer-groups", withBootstrap("--reset-offsets", "--group", g, "--topic", t + ":1", "--shift-by",
                "7", "--execute"));
        require(committed(g, t).equals(Map.of(0, 0L, 1, 7L, 2, 0L)), "--reset-offsets --shift-by 7 on partition 1: %s",
                committed(g, t));
        r = ok("kafka-consumer-groups", withBootstrap("--delete-offsets", "--group", g, "--topic", t + ":2"));
        require(committed(g, t).equals(Map.of(0, 0L, 1, 7L)), "--delete-offsets partition 2: %s -> %s", r.out,
                committed(g, t));
        r = ok("kafka-consumer-groups", withBootstrap("--delete", "--group", g));
        require(r.out.contains("Deletion of requested consumer groups ('" + g + "') was successful."),
                "--delete: %s", r.out);
        r = ok("kafka-consumer-groups", withBootstrap("--list"));
        require(!hasLine(r, g), "--list after --delete still has %s", g);
    }

    Map<Integer, Long> committed(String g, String t) throws Exception {
        Map<Integer, Long> out = new TreeMap<>();
        for (var e : c.admin.listConsumerGroupOffsets(g).partitionsToOffsetAndMetadata().get(30, TimeUnit.SECONDS)
                .entrySet()) {
            if (e.getKey().topic().equals(t) && e.getValue() != null) {
                out.put(e.getKey().partition(), e.getValue().offset());
            }
        }
        return out;
    }

    /** describeRows parses --describe's table into partition -> {current, log end, lag}. */
    static Map<Integer, long[]> describeRows(Result r, String g, String t) {
        Map<Integer, long[]> rows = new TreeMap<>();
        List<String> header = null;
        for (String line : r.lines()) {
            List<String> f = List.of(line.split("\\s+"));
            if (f.contains("LAG") && f.contains("CURRENT-OFFSET")) {
                header = f;
                continue;
            }
            if (header == null || f.size() < header.size() - 3 || !f.get(0).equals(g) || !f.get(1).equals(t)) {
                continue;
            }
            rows.put(Integer.parseInt(f.get(header.indexOf("PARTITION"))), new long[] {
                Long.parseLong(f.get(header.indexOf("CURRENT-OFFSET"))),
                Long.parseLong(f.get(header.indexOf("LOG-END-OFFSET"))),
                Long.parseLong(f.get(header.indexOf("LAG")))});
        }
        return rows;
    }

    // ---- kafka-get-offsets and kafka-delete-records ----------------------------------------------

    void offsetsAndDeleteRecords() throws Exception {
        String t = c.topic("tool-offsets");
        c.createTopic(t, 2, null);
        long base = System.currentTimeMillis() - 3_600_000;
        try (KafkaProducer<byte[], byte[]> p = c.producer(Map.of())) {
            for (int i = 0; i < 40; i++) {
                p.send(new ProducerRecord<>(t, i % 2, base + i, null, ClientChecks.bytes("v" + i)));
            }
        }
        Result r = ok("kafka-get-offsets", withBootstrap("--topic", t, "--time", "-1"));
        require(r.lines().equals(List.of(t + ":0:20", t + ":1:20")), "--time -1 (latest): %s", r.lines());
        r = ok("kafka-get-offsets", withBootstrap("--topic", t, "--time", "-2"));
        require(r.lines().equals(List.of(t + ":0:0", t + ":1:0")), "--time -2 (earliest): %s", r.lines());
        r = ok("kafka-get-offsets", withBootstrap("--topic", t, "--time", Long.toString(base + 10)));
        require(r.lines().equals(List.of(t + ":0:5", t + ":1:5")), "--time BASE+10: %s", r.lines());
        r = ok("kafka-get-offsets", withBootstrap("--topic", t, "--time", "-3"));
        require(r.lines().equals(List.of(t + ":0:19", t + ":1:19")), "--time -3 (max timestamp): %s", r.lines());

        Path json = Files.createTempFile("samsa-delete-records", ".json");
        try {
            Files.writeString(json, "{\"version\":1,\"partitions\":[{\"topic\":\"" + t
                    + "\",\"partition\":0,\"offset\":7},{\"topic\":\"" + t + "\",\"partition\":1,\"offset\":-1}]}");
            r = ok("kafka-delete-records", withBootstrap("--offset-json-file", json.toString()));
            require(r.out.contains("partition: " + t + "-0\tlow_watermark: 7")
                    && r.out.contains("partition: " + t + "-1\tlow_watermark: 20"),
                    "delete-records: want low_watermark 7 and 20, got %s", r.out);
            Files.writeString(json, "{\"version\":1,\"partitions\":[{\"topic\":\"" + t
                    + "\",\"partition\":0,\"offset\":99}]}");
            r = tool("kafka-delete-records", null, withBootstrap("--offset-json-file", json.toString()));
            require(r.out.contains("OffsetOutOfRangeException") || r.out.contains("error"),
                    "delete-records past the end: want an OffsetOutOfRange error, got exit %d %s", r.status, r.out);
        } finally {
            Files.deleteIfExists(json);
        }
        r = ok("kafka-get-offsets", withBootstrap("--topic", t, "--time", "-2"));
        require(r.lines().equals(List.of(t + ":0:7", t + ":1:20")), "--time -2 after delete-records: %s", r.lines());
    }

    // ---- kafka-transactions ---------------------------------------------------------------------

    void transactions() throws Exception {
        String t = c.topic("tool-txn");
        String tid = "tool-tid-" + c.run;
        c.createTopic(t, 1, null);
        try (KafkaProducer<byte[], byte[]> p = c.producer(Map.of(ProducerConfig.TRANSACTIONAL_ID_CONFIG, tid))) {
            p.initTransactions();
            p.beginTransaction();
            p.send(new ProducerRecord<>(t, 0, null, ClientChecks.bytes("committed"))).get(30, TimeUnit.SECONDS);
            p.commitTransaction();
            p.beginTransaction();
            p.send(new ProducerRecord<>(t, 0, null, ClientChecks.bytes("open"))).get(30, TimeUnit.SECONDS);
            p.flush();

            Result r = ok("kafka-transactions", withBootstrap("list"));
            require(r.lines().stream().anyMatch(l -> firstColumn(l).equals(tid) && l.contains("Ongoing")),
                    "list: want %s Ongoing, got %s", tid, r.out);
            r = ok("kafka-transactions", withBootstrap("describe", "--transactional-id", tid));
            require(r.out.contains("Ongoing") && r.out.contains(t + "-0"),
                    "describe --transactional-id: want Ongoing with %s-0, got %s", t, r.out);
            r = ok("kafka-transactions", withBootstrap("describe-producers", "--topic", t, "--partition", "0"));
            List<String> table = r.lines();
            List<String> head = table.isEmpty() ? List.of() : List.of(table.get(0).split("\\s+"));
            int col = head.indexOf("CurrentTransactionStartOffset");
            require(table.size() == 2 && col >= 0 && table.get(1).split("\\s+")[col].equals("2"),
                    "describe-producers: want one producer with CurrentTransactionStartOffset 2 (after the record "
                            + "and the commit marker), got %s", r.out);
            p.commitTransaction();
        }
        Result[] last = new Result[1];
        boolean done = pollUntil(() -> last[0] = ok("kafka-transactions", withBootstrap("describe", "--transactional-id", tid)),
                () -> last[0].out.contains("CompleteCommit") || last[0].out.contains("Empty"));
        require(done, "describe after commit: want CompleteCommit, got %s", last[0].out);
        Result r = ok("kafka-transactions", withBootstrap("list"));
        require(r.lines().stream().anyMatch(l -> firstColumn(l).equals(tid) && !l.contains("Ongoing")),
                "list after commit: want %s not Ongoing, got %s", tid, r.out);
    }

    // ---- perf tests -----------------------------------------------------------------------------

    void perfTests() throws Exception {
        String t = c.topic("tool-perf");
        c.createTopic(t, 3, null);
        int n = 30000;
        Result r = ok("kafka-producer-perf-test", "--topic", t, "--num-records", Integer.toString(n), "--record-size",
                "100", "--throughput", "-1", "--producer-props", "bootstrap.servers=" + bootstrap, "acks=all",
                "linger.ms=5");
        Matcher m = Pattern.compile("(?m)^(\\d+) records sent, [\\d.]+ records/sec").matcher(r.out);
        String last = null;
        while (m.find()) {
            last = m.group(1);
        }
        require(Integer.toString(n).equals(last), "producer-perf-test: want a final '%d records sent' line, got %s", n, r.out);
        long total = 0;
        for (int p = 0; p < 3; p++) {
            total += endOffset(new TopicPartition(t, p), OffsetSpec.latest());
        }
        require(total == n, "end offsets after producer-perf-test sum to %d, want %d", total, n);
        r = ok("kafka-consumer-perf-test", withBootstrap("--topic", t, "--num-records", Integer.toString(n), "--timeout",
                "60000", "--group", "tool-perf-" + c.run));
        List<String> lines = new ArrayList<>(r.lines());
        while (!lines.isEmpty() && !lines.get(0).startsWith("start.time")) {
            lines.remove(0);
        }
        require(lines.size() >= 2 && lines.get(0).contains("data.consumed.in.nMsg"), "consumer-perf-test output: %s", r.out);
        List<String> head = List.of(lines.get(0).split(",\\s*"));
        List<String> row = List.of(lines.get(lines.size() - 1).split(",\\s*"));
        int col = head.indexOf("data.consumed.in.nMsg");
        require(row.size() == head.size() && Long.parseLong(row.get(col).strip()) == n,
                "consumer-perf-test consumed %s messages, want %d: %s", row.size() > col ? row.get(col) : "?", n, r.out);
        log("consumer-perf-test: %s", lines.get(lines.size() - 1));
    }
}
