package samsa.compat;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * FaultProducer is the Java client of compat-tests/replication_clients_test.go: an idempotent
 * acks=all producer that sends one record per "SEND key value" line of stdin, waits for its
 * answer and prints "ACK partition offset" or "FAIL message"; "CLOSE" (or the end of stdin)
 * closes it. The Go test kills and pauses brokers between and during the sends.
 *
 * <p>Usage: FaultProducer bootstrap-servers topic
 */
public final class FaultProducer {
    private FaultProducer() {}

    public static void main(String[] args) throws Exception {
        Properties props = new Properties();
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        props.put(ProducerConfig.ACKS_CONFIG, "all");
        props.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
        props.put(ProducerConfig.LINGER_MS_CONFIG, "0");
        // A paused leader costs a few seconds, not the default 30.
        props.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, "5000");
        props.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "120000");
        props.put(ProducerConfig.METADATA_MAX_AGE_CONFIG, "5000");
        props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        String topic = args[1];
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(props)) {
            String line;
            while ((line = in.readLine()) != null) {
                String[] f = line.trim().split(" ");
                if (f.length == 1 && f[0].equals("CLOSE")) {
                    break;
                }
                if (f.length != 3 || !f[0].equals("SEND")) {
                    System.out.println("FAIL bad command: " + line);
                    System.out.flush();
                    continue;
                }
                try {
                    RecordMetadata md = producer.send(new ProducerRecord<>(topic, f[1], f[2])).get();
                    System.out.println("ACK " + md.partition() + " " + md.offset());
                } catch (ExecutionException e) {
                    System.out.println("FAIL " + e.getCause());
                }
                System.out.flush();
            }
        }
    }
}
