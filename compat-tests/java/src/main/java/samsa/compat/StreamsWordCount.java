package samsa.compat;

import java.time.Duration;
import java.util.Arrays;
import java.util.Locale;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;

/**
 * StreamsWordCount is a Kafka Streams 4.4 word count with processing.guarantee=exactly_once_v2:
 * lines from INPUT are split into words, re-keyed by word (a repartition topic), counted in a
 * persistent state store named "counts" (its changelog topic) and every new count goes to OUTPUT
 * as word -> count (a long). The record cache is off, so each input word yields exactly one
 * output update and, read with read_committed, the updates of one word are 1, 2, 3, ... with no
 * gap or repeat even across a crash. compat-tests/streams_test.go runs it, SIGKILLs it mid-run,
 * restarts it with an empty state directory (so the store is restored from its changelog) and
 * checks that.
 *
 * <p>Usage: {@code java samsa.compat.StreamsWordCount BOOTSTRAP APPLICATION_ID INPUT OUTPUT STATE_DIR
 * [GROUP_PROTOCOL]}: GROUP_PROTOCOL "streams" makes it a member of a KIP-1071 streams group
 * (group.protocol=streams, StreamsGroupHeartbeat) instead of a classic consumer group. It prints
 * "STATE from -> to" on each state change and runs until killed.
 */
public final class StreamsWordCount {
    public static void main(String[] args) throws Exception {
        if (args.length != 5 && args.length != 6) {
            System.err.println("usage: StreamsWordCount BOOTSTRAP APPLICATION_ID INPUT OUTPUT STATE_DIR [GROUP_PROTOCOL]");
            System.exit(2);
        }
        Properties p = new Properties();
        p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        p.put(StreamsConfig.APPLICATION_ID_CONFIG, args[1]);
        p.put(StreamsConfig.STATE_DIR_CONFIG, args[4]);
        p.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
        p.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, 2);
        p.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0);
        p.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 200);
        // Purge consumed repartition records (DeleteRecords) soon after each commit.
        p.put(StreamsConfig.REPARTITION_PURGE_INTERVAL_MS_CONFIG, 500);
        // Small internal-topic segments, so the broker can roll and compact the changelog while
        // the test runs.
        p.put(StreamsConfig.topicPrefix("segment.ms"), "1000");
        p.put(StreamsConfig.topicPrefix("min.cleanable.dirty.ratio"), "0.01");
        p.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        p.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        if (args.length == 6) {
            // The session timeout and heartbeat interval of a streams group are the broker's
            // (group.streams.*), so the consumer settings below stay with the classic protocol.
            p.put(StreamsConfig.GROUP_PROTOCOL_CONFIG, args[5]);
        } else {
            p.put(StreamsConfig.consumerPrefix("session.timeout.ms"), 10000);
            p.put(StreamsConfig.consumerPrefix("heartbeat.interval.ms"), 1000);
        }

        StreamsBuilder b = new StreamsBuilder();
        b.<String, String>stream(args[2])
                .flatMapValues(line -> Arrays.asList(line.toLowerCase(Locale.ROOT).split("\\s+")))
                .filter((k, w) -> !w.isEmpty())
                .groupBy((k, w) -> w, Grouped.with("words", Serdes.String(), Serdes.String()))
                .count(Materialized.as("counts"))
                .toStream()
                .to(args[3], Produced.with(Serdes.String(), Serdes.Long()));

        KafkaStreams streams = new KafkaStreams(b.build(), p);
        CountDownLatch dead = new CountDownLatch(1);
        streams.setStateListener((to, from) -> {
            System.out.println("STATE " + from + " -> " + to);
            System.out.flush();
            if (to == KafkaStreams.State.ERROR || to == KafkaStreams.State.NOT_RUNNING) {
                dead.countDown();
            }
        });
        streams.setUncaughtExceptionHandler(e -> {
            System.out.println("UNCAUGHT " + e);
            e.printStackTrace(System.out);
            return org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse
                    .REPLACE_THREAD;
        });
        Runtime.getRuntime().addShutdownHook(new Thread(() -> streams.close(Duration.ofSeconds(20))));
        streams.start();
        dead.await();
        System.exit(1);
    }
}
