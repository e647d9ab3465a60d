package samsa.compat;

import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.consumer.RangeAssignor;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.AuthorizationException;
import org.apache.kafka.common.errors.OutOfOrderSequenceException;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.common.errors.UnsupportedVersionException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * FaultsCtpMember is the Java client's consume-transform-produce member of the fault test bed
 * (compat-tests/faults/eos_child.go): a KafkaConsumer in the workload's group (read_committed, no
 * auto commit, the range assignor) and a transactional KafkaProducer; per poll, one transaction
 * writes each record's value v as "out:v" to the output topic and commits the polled offsets with
 * sendOffsetsToTransaction(offsets, consumer.groupMetadata()). After any transaction that did not
 * commit it closes both clients and opens new ones (the new consumer resumes from the group's
 * committed offsets; the new producer's initTransactions fences the old one), until SIGTERM ends it
 * after the transaction under way. It reports on stdout, one line each: "CTP S" (session opened),
 * "CTP B n" (a transaction of n records begun), "CTP C n" (committed), "CTP A n why" (aborted),
 * "CTP U n why" (outcome unknown) and "CTP E error" (a client error outside a transaction).
 *
 * <p>Usage: FaultsCtpMember bootstrap-servers input output group transactional-id client-id
 */
public final class FaultsCtpMember {
    private FaultsCtpMember() {}

    private static volatile boolean stopping;

    private static synchronized void say(String line) {
        System.out.println("CTP " + line.replace('\n', ' '));
        System.out.flush();
    }

    private static KafkaProducer<byte[], String> newProducer(String servers, String txnId, String clientId) {
        long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(2);
        while (!stopping && System.nanoTime() < deadline) {
            Properties props = new Properties();
            props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, servers);
            props.put(ProducerConfig.CLIENT_ID_CONFIG, clientId);
            props.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, txnId);
            props.put(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG, "20000");
            props.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, "5000");
            props.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "15000");
            props.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, "30000");
            props.put(ProducerConfig.METADATA_MAX_AGE_CONFIG, "5000");
            props.put(ProducerConfig.LINGER_MS_CONFIG, "2");
            props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
            props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
            KafkaProducer<byte[], String> p = new KafkaProducer<>(props);
            try {
                p.initTransactions();
                return p;
            } catch (KafkaException e) {
                say("E initTransactions: " + e);
                p.close(Duration.ofSeconds(5));
            }
        }
        return null;
    }

    private static KafkaConsumer<byte[], String> newConsumer(String servers, String group, String clientId) {
        Properties props = new Properties();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, servers);
        props.put(ConsumerConfig.CLIENT_ID_CONFIG, clientId);
        props.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        props.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        props.put(ConsumerConfig.PARTITION_ASSIGNMENT_STRATEGY_CONFIG, RangeAssignor.class.getName());
        props.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, "10000");
        props.put(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, "1000");
        props.put(ConsumerConfig.REQUEST_TIMEOUT_MS_CONFIG, "10000");
        props.put(ConsumerConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "30000");
        props.put(ConsumerConfig.METADATA_MAX_AGE_CONFIG, "5000");
        props.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, "200");
        props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        return new KafkaConsumer<>(props);
    }

    /** abort aborts the transaction under way; false when it could not. */
    private static boolean abort(KafkaProducer<byte[], String> p) {
        for (int attempt = 0; attempt < 3; attempt++) {
            try {
                p.abortTransaction();
                return true;
            } catch (TimeoutException e) {
                say("E abort: " + e);
            } catch (KafkaException e) {
                say("E abort: " + e);
                return false;
            }
        }
        return false;
    }

    /**
     * transform runs one transaction for records and returns its report line ("C n", "A n why" or
     * "U n why").
     */
    private static String transform(KafkaConsumer<byte[], String> c, KafkaProducer<byte[], String> p,
            ConsumerRecords<byte[], String> records, String output) {
        int n = records.count();
        p.beginTransaction();
        say("B " + n);
        try {
            Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
            for (TopicPartition tp : records.partitions()) {
                List<ConsumerRecord<byte[], String>> rs = records.records(tp);
                for (ConsumerRecord<byte[], String> r : rs) {
                    p.send(new ProducerRecord<>(output, r.key(), "out:" + r.value()));
                }
                offsets.put(tp, new OffsetAndMetadata(rs.get(rs.size() - 1).offset() + 1));
            }
            p.sendOffsetsToTransaction(offsets, c.groupMetadata());
        } catch (ProducerFencedException | OutOfOrderSequenceException | AuthorizationException
                | UnsupportedVersionException e) {
            return "U " + n + " send (fatal): " + e;
        } catch (KafkaException e) {
            return abort(p) ? "A " + n + " send: " + e : "U " + n + " send: " + e;
        }
        for (int attempt = 0; ; attempt++) {
            try {
                p.commitTransaction();
                return "C " + n;
            } catch (TimeoutException e) {
                // A commit that timed out may be retried.
                if (attempt >= 2) {
                    return "U " + n + " commit: " + e;
                }
            } catch (ProducerFencedException | OutOfOrderSequenceException | AuthorizationException
                    | UnsupportedVersionException e) {
                return "U " + n + " commit (fatal): " + e;
            } catch (KafkaException e) {
                // An abortable error: the commit was not sent.
                return abort(p) ? "A " + n + " commit: " + e : "U " + n + " commit: " + e;
            }
        }
    }

    public static void main(String[] args) throws Exception {
        String servers = args[0];
        String input = args[1];
        String output = args[2];
        String group = args[3];
        String txnId = args[4];
        String clientId = args[5];
        Thread main = Thread.currentThread();
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            stopping = true;
            try {
                main.join(50_000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }));
        long backoffMs = 250;
        while (!stopping) {
            boolean committed = false;
            KafkaConsumer<byte[], String> c = null;
            KafkaProducer<byte[], String> p = null;
            try {
                c = newConsumer(servers, group, clientId);
                c.subscribe(List.of(input));
                p = newProducer(servers, txnId, clientId);
                if (p != null) {
                    say("S");
                }
                while (p != null && !stopping) {
                    ConsumerRecords<byte[], String> records = c.poll(Duration.ofMillis(500));
                    if (records.isEmpty()) {
                        continue;
                    }
                    String outcome = transform(c, p, records, output);
                    say(outcome);
                    if (!outcome.startsWith("C ")) {
                        break;
                    }
                    committed = true;
                }
            } catch (KafkaException e) {
                say("E session: " + e);
            } finally {
                if (p != null) {
                    p.close(Duration.ofSeconds(5));
                }
                if (c != null) {
                    try {
                        c.close(Duration.ofSeconds(10)); // leaves the group
                    } catch (KafkaException e) {
                        say("E consumer close: " + e);
                    }
                }
            }
            backoffMs = committed ? 250 : Math.min(2 * backoffMs, 4000);
            if (!stopping) {
                Thread.sleep(backoffMs); // the pace of session replacements
            }
        }
    }
}
