package samsa.compat;

import static samsa.compat.Checks.require;

import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.ScramCredentialInfo;
import org.apache.kafka.clients.admin.ScramMechanism;
import org.apache.kafka.clients.admin.UserScramCredentialUpsertion;
import org.apache.kafka.clients.admin.UserScramCredentialsDescription;
import org.apache.kafka.common.errors.SaslAuthenticationException;

/**
 * SecurityChecks drives kafka-clients over a broker's secured listeners: SCRAM credentials made
 * with Admin.alterUserScramCredentials (what kafka-configs --add-config 'SCRAM-SHA-512=[...]'
 * sends), SASL_SSL with SCRAM-SHA-512, a wrong password, and mutual TLS with PEM stores.
 *
 * <p>Usage: SecurityChecks PLAINTEXT_BOOTSTRAP SASL_SSL_BOOTSTRAP SSL_BOOTSTRAP CA_PEM CLIENT_PEM
 * [check...|all], where CLIENT_PEM holds the client's certificate and unencrypted PKCS#8 key.
 */
public final class SecurityChecks {
    private final String plain, saslSsl, ssl, caPem, clientPem, run;

    SecurityChecks(String[] a, String run) {
        this.plain = a[0];
        this.saslSsl = a[1];
        this.ssl = a[2];
        this.caPem = a[3];
        this.clientPem = a[4];
        this.run = run;
    }

    private Properties scram(String password) {
        Properties p = new Properties();
        p.put("bootstrap.servers", saslSsl);
        p.put("security.protocol", "SASL_SSL");
        p.put("sasl.mechanism", "SCRAM-SHA-512");
        p.put("sasl.jaas.config", "org.apache.kafka.common.security.scram.ScramLoginModule required username=\"javauser\" password=\"" + password + "\";");
        p.put("ssl.truststore.type", "PEM");
        p.put("ssl.truststore.location", caPem);
        return p;
    }

    private Properties mtls() {
        Properties p = new Properties();
        p.put("bootstrap.servers", ssl);
        p.put("security.protocol", "SSL");
        p.put("ssl.truststore.type", "PEM");
        p.put("ssl.truststore.location", caPem);
        p.put("ssl.keystore.type", "PEM");
        p.put("ssl.keystore.location", clientPem);
        return p;
    }

    void scramAdmin() throws Exception {
        Properties p = new Properties();
        p.put("bootstrap.servers", plain);
        try (Admin admin = Admin.create(p)) {
            admin.alterUserScramCredentials(List.of(new UserScramCredentialUpsertion("javauser",
                    new ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 8192), "java-secret"))).all().get();
            Map<String, UserScramCredentialsDescription> d = admin.describeUserScramCredentials(List.of("javauser")).all().get();
            List<ScramCredentialInfo> infos = d.get("javauser").credentialInfos();
            require(infos.size() == 1 && infos.get(0).mechanism() == ScramMechanism.SCRAM_SHA_512 && infos.get(0).iterations() == 8192,
                    "described credentials %s", infos);
        }
    }

    void produceConsume(Properties base, String topic) throws Exception {
        try (Admin admin = Admin.create(base)) {
            admin.createTopics(List.of(new NewTopic(topic, 1, (short) 1))).all().get();
        }
        RoundTrip.tenRecords(base, topic);
    }

    void wrongPassword() throws Exception {
        Properties p = scram("not-the-password");
        p.put("request.timeout.ms", "10000");
        p.put("default.api.timeout.ms", "15000");
        try (Admin admin = Admin.create(p)) {
            admin.describeCluster().nodes().get();
            require(false, "describeCluster succeeded with a wrong password");
        } catch (ExecutionException e) {
            require(e.getCause() instanceof SaslAuthenticationException, "wrong password failed with %s, want SaslAuthenticationException", e.getCause());
        }
    }

    public static void main(String[] args) throws Exception {
        if (args.length < 5) {
            System.err.println("usage: SecurityChecks PLAINTEXT SASL_SSL SSL CA_PEM CLIENT_PEM [check...|all]");
            System.exit(2);
        }
        String run = Long.toString(System.currentTimeMillis() % 100_000_000L, 36);
        SecurityChecks s = new SecurityChecks(args, run);
        Checks checks = new Checks();
        checks.add("scram-admin", s::scramAdmin);
        checks.add("sasl-ssl-scram-sha-512", () -> s.produceConsume(s.scram("java-secret"), "java-scram-" + run));
        checks.add("sasl-ssl-wrong-password", s::wrongPassword);
        checks.add("mtls", () -> s.produceConsume(s.mtls(), "java-mtls-" + run));
        System.exit(checks.run(Arrays.asList(args).subList(5, args.length)) == 0 ? 0 : 1);
    }
}
