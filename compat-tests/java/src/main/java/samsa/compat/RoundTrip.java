package samsa.compat;

import static samsa.compat.Checks.require;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/** RoundTrip is the security checks' proof that a configured client can use the cluster. */
final class RoundTrip {
    private RoundTrip() {}

    /**
     * tenRecords produces ten records to topic (a one-partition topic) with the client settings in base,
     * each acknowledged, then reads them back from the beginning with a consumer made from the
     * same settings (within 30 s).
     */
    static void tenRecords(Properties base, String topic) throws Exception {
        Properties pp = new Properties();
        pp.putAll(base);
        pp.put("key.serializer", StringSerializer.class.getName());
        pp.put("value.serializer", StringSerializer.class.getName());
        try (KafkaProducer<String, String> prod = new KafkaProducer<>(pp)) {
            for (int i = 0; i < 10; i++) {
                prod.send(new ProducerRecord<>(topic, "k" + i, "v" + i)).get();
            }
        }
        Properties cp = new Properties();
        cp.putAll(base);
        cp.put("key.deserializer", StringDeserializer.class.getName());
        cp.put("value.deserializer", StringDeserializer.class.getName());
        try (KafkaConsumer<String, String> cons = new KafkaConsumer<>(cp)) {
            TopicPartition tp = new TopicPartition(topic, 0);
            cons.assign(List.of(tp));
            cons.seekToBeginning(List.of(tp));
            List<String> got = new ArrayList<>();
            long deadline = System.currentTimeMillis() + 30_000;
            while (got.size() < 10 && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, String> r : cons.poll(Duration.ofMillis(500))) {
                    got.add(r.value());
                }
            }
            require(got.size() == 10 && got.get(9).equals("v9"), "consumed %s", got);
        }
    }
}
