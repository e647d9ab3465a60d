package samsa.compat;

import static samsa.compat.Checks.require;

import java.time.Duration;
import java.util.List;
import java.util.Properties;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * ReauthChecks keeps a producer and a consumer of kafka-clients busy over SASL_PLAINTEXT for longer
 * than several session lifetimes of a broker with connections.max.reauth.ms set (KIP-368): the
 * clients must re-authenticate their connections in place; the Go test counts the re-authentications
 * on the broker's metrics.
 *
 * <p>Arguments: bootstrap mechanism user password topic seconds. For OAUTHBEARER the password is
 * ignored and the unsecured login module makes a token for the user with scope "kafka".
 */
public final class ReauthChecks {
    private ReauthChecks() {}

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], mech = args[1], user = args[2], pass = args[3], topic = args[4];
        long seconds = Long.parseLong(args[5]);
        Properties base = new Properties();
        base.put("bootstrap.servers", bootstrap);
        base.put("security.protocol", "SASL_PLAINTEXT");
        base.put("sasl.mechanism", mech);
        String jaas;
        switch (mech) {
            case "PLAIN":
                jaas = "org.apache.kafka.common.security.plain.PlainLoginModule required username=\"" + user + "\" password=\"" + pass + "\";";
                break;
            case "OAUTHBEARER":
                jaas = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required unsecuredLoginStringClaim_sub=\"" + user
                        + "\" unsecuredLoginListClaim_scope=\",kafka\";";
                break;
            default:
                jaas = "org.apache.kafka.common.security.scram.ScramLoginModule required username=\"" + user + "\" password=\"" + pass + "\";";
        }
        base.put("sasl.jaas.config", jaas);
        Checks checks = new Checks();
        checks.add("reauth-" + mech, () -> keepBusy(base, topic, seconds));
        System.exit(checks.run(List.of("all")) == 0 ? 0 : 1);
    }

    /**
     * keepBusy produces records one at a time for the given seconds, each acknowledged, while a
     * consumer assigned the topic's partition reads them; every record must be read, in order.
     */
    private static void keepBusy(Properties base, String topic, long seconds) throws Exception {
        Properties pp = new Properties();
        pp.putAll(base);
        pp.put("key.serializer", StringSerializer.class.getName());
        pp.put("value.serializer", StringSerializer.class.getName());
        Properties cp = new Properties();
        cp.putAll(base);
        cp.put("key.deserializer", StringDeserializer.class.getName());
        cp.put("value.deserializer", StringDeserializer.class.getName());
        cp.put("auto.offset.reset", "earliest");
        TopicPartition tp = new TopicPartition(topic, 0);
        long sent = 0, read = 0;
        try (KafkaProducer<String, String> prod = new KafkaProducer<>(pp);
                KafkaConsumer<String, String> cons = new KafkaConsumer<>(cp)) {
            cons.assign(List.of(tp));
            cons.seekToBeginning(List.of(tp));
            long end = System.nanoTime() + seconds * 1_000_000_000L;
            while (System.nanoTime() < end) {
                prod.send(new ProducerRecord<>(topic, "k", Long.toString(sent))).get();
                sent++;
                for (ConsumerRecord<String, String> r : cons.poll(Duration.ofMillis(100))) {
                    require(r.value().equals(Long.toString(read)), "record " + read + " is " + r.value());
                    read++;
                }
            }
            long deadline = System.nanoTime() + 30_000_000_000L;
            while (read < sent && System.nanoTime() < deadline) {
                for (ConsumerRecord<String, String> r : cons.poll(Duration.ofMillis(500))) {
                    require(r.value().equals(Long.toString(read)), "record " + read + " is " + r.value());
                    read++;
                }
            }
        }
        System.out.println("produced " + sent + ", read " + read + " over " + seconds + " s");
        require(read == sent && sent > 0, "read " + read + " of " + sent + " records");
    }
}
