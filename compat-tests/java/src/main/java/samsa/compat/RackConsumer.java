package samsa.compat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.Metric;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.StringDeserializer;

/**
 * RackConsumer is the Java client of compat-tests/replication_rack_test.go (KIP-392): a
 * consumer with client.rack set reads every partition of a topic from its start (assigned, no
 * group) until it has the given number of records, printing "RECORD partition offset key" for
 * each, then "NODE id bytes" with the bytes it received from each broker (the consumer's
 * consumer-node-metrics incoming-byte-total), then "DONE count".
 *
 * <p>Usage: RackConsumer bootstrap-servers topic rack count
 */
public final class RackConsumer {
    private RackConsumer() {}

    public static void main(String[] args) throws Exception {
        Properties props = new Properties();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        props.put(ConsumerConfig.CLIENT_RACK_CONFIG, args[2]);
        props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        String topic = args[1];
        int want = Integer.parseInt(args[3]);
        int n = 0;
        try (KafkaConsumer<String, byte[]> consumer = new KafkaConsumer<>(props)) {
            List<TopicPartition> tps = new ArrayList<>();
            for (PartitionInfo pi : consumer.partitionsFor(topic, Duration.ofSeconds(60))) {
                tps.add(new TopicPartition(topic, pi.partition()));
            }
            consumer.assign(tps);
            consumer.seekToBeginning(tps);
            long deadline = System.currentTimeMillis() + 120_000;
            while (n < want && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, byte[]> r : consumer.poll(Duration.ofMillis(500))) {
                    System.out.println("RECORD " + r.partition() + " " + r.offset() + " " + r.key());
                    n++;
                }
            }
            for (Map.Entry<MetricName, ? extends Metric> e : consumer.metrics().entrySet()) {
                MetricName m = e.getKey();
                if (m.group().equals("consumer-node-metrics") && m.name().equals("incoming-byte-total")) {
                    Object v = e.getValue().metricValue();
                    long bytes = v instanceof Number ? ((Number) v).longValue() : -1;
                    System.out.println("NODE " + m.tags().get("node-id") + " " + bytes);
                }
            }
        }
        System.out.println("DONE " + n);
        System.out.flush();
    }
}
