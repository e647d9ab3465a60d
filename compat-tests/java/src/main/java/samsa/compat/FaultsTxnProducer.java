package samsa.compat;

import java.util.Properties;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.errors.AuthorizationException;
import org.apache.kafka.common.errors.OutOfOrderSequenceException;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.common.errors.UnsupportedVersionException;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * FaultsTxnProducer is the Java client of the fault test bed's transaction workload
 * (compat-tests/faults/ctxn.go): a transactional producer that runs transactions of size records
 * "t<seq>-<i>" round-robin over the partitions, aborting every abort-every-th on purpose, until
 * SIGTERM ends it between two transactions. seq is (id*100+run)*100000+k for its k-th
 * transaction. It reports on stdout, one line each: "CTX S seq" (begun), "CTX C seq" (committed),
 * "CTX A seq why" (aborted), "CTX U seq error" (outcome unknown: the producer is replaced, and the
 * new one's initTransactions fences it) and "CTX E error" (a client error outside a transaction).
 *
 * <p>Usage: FaultsTxnProducer bootstrap-servers topic partitions id run size abort-every
 * interval-ms
 */
public final class FaultsTxnProducer {
    private FaultsTxnProducer() {}

    private static volatile boolean stopping;

    private static synchronized void say(String line) {
        System.out.println("CTX " + line.replace('\n', ' '));
        System.out.flush();
    }

    private static KafkaProducer<String, String> newProducer(String servers, String txnId, String clientId) {
        long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(3);
        while (!stopping && System.nanoTime() < deadline) {
            Properties props = new Properties();
            props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, servers);
            props.put(ProducerConfig.CLIENT_ID_CONFIG, clientId);
            props.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, txnId);
            props.put(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG, "30000");
            props.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, "5000");
            props.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "25000");
            props.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, "30000");
            props.put(ProducerConfig.METADATA_MAX_AGE_CONFIG, "5000");
            props.put(ProducerConfig.LINGER_MS_CONFIG, "2");
            props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
            props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
            KafkaProducer<String, String> p = new KafkaProducer<>(props);
            try {
                p.initTransactions();
                return p;
            } catch (KafkaException e) {
                say("E initTransactions: " + e);
                p.close();
            }
        }
        return null;
    }

    /** abort aborts the transaction under way; false when it could not. */
    private static boolean abort(KafkaProducer<String, String> p, long seq) {
        for (int attempt = 0; attempt < 3; attempt++) {
            try {
                p.abortTransaction();
                return true;
            } catch (TimeoutException e) {
                say("E abort " + seq + ": " + e);
            } catch (KafkaException e) {
                say("E abort " + seq + ": " + e);
                return false;
            }
        }
        return false;
    }

    public static void main(String[] args) throws Exception {
        String servers = args[0];
        String topic = args[1];
        int partitions = Integer.parseInt(args[2]);
        int id = Integer.parseInt(args[3]);
        int run = Integer.parseInt(args[4]);
        int size = Integer.parseInt(args[5]);
        int abortEvery = Integer.parseInt(args[6]);
        long intervalMs = Long.parseLong(args[7]);
        String txnId = topic + "-txn-" + id;
        String clientId = "java-txn-" + id + "-" + run;
        Thread main = Thread.currentThread();
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            stopping = true;
            try {
                main.join(100_000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }));
        KafkaProducer<String, String> p = newProducer(servers, txnId, clientId);
        long base = ((long) id * 100 + run) * 100_000L;
        for (long k = 0; p != null && !stopping && k < 100_000; k++) {
            Thread.sleep(intervalMs); // the workload's pace
            long seq = base + k;
            try {
                p.beginTransaction();
            } catch (KafkaException e) {
                say("E beginTransaction: " + e);
                p.close();
                p = newProducer(servers, txnId, clientId);
                continue;
            }
            say("S " + seq);
            String why = "asked";
            boolean doAbort = abortEvery > 0 && k % abortEvery == abortEvery - 1;
            try {
                for (int i = 0; i < size; i++) {
                    p.send(new ProducerRecord<>(topic, i % partitions, null, "t" + seq + "-" + i));
                }
            } catch (KafkaException e) {
                why = "send: " + e;
                doAbort = true;
            }
            if (doAbort) {
                if (abort(p, seq)) {
                    say("A " + seq + " " + why);
                } else {
                    say("U " + seq + " abort failed (" + why + ")");
                    p.close();
                    p = newProducer(servers, txnId, clientId);
                }
                continue;
            }
            String outcome = null;
            for (int attempt = 0; outcome == null; attempt++) {
                try {
                    p.commitTransaction();
                    outcome = "C " + seq;
                } catch (TimeoutException e) {
                    // A commit that timed out may be retried.
                    if (attempt >= 2) {
                        outcome = "U " + seq + " commit: " + e;
                    }
                } catch (ProducerFencedException | OutOfOrderSequenceException | AuthorizationException
                        | UnsupportedVersionException e) {
                    outcome = "U " + seq + " commit (fatal): " + e;
                } catch (KafkaException e) {
                    // An abortable error: the commit was not sent.
                    outcome = abort(p, seq) ? "A " + seq + " commit: " + e : "U " + seq + " commit: " + e;
                }
            }
            say(outcome);
            if (outcome.startsWith("U ")) {
                p.close();
                p = newProducer(servers, txnId, clientId);
            }
        }
        if (p != null) {
            p.close();
        }
    }
}
