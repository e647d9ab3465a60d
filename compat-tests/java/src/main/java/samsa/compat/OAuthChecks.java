package samsa.compat;

import static samsa.compat.Checks.require;

import java.util.Arrays;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.common.errors.SaslAuthenticationException;

/**
 * OAuthChecks drives kafka-clients' OAUTHBEARER login against a broker: the unsecured login
 * (OAuthBearerUnsecuredLoginCallbackHandler, unsecuredLoginStringClaim_sub) against a listener
 * that validates with the unsecured validator, and a signed JWT read from a file
 * (OAuthBearerLoginCallbackHandler with a file: sasl.oauthbearer.token.endpoint.url) against a
 * listener that validates JWTs with a JWKS; an expired JWT is refused with
 * SaslAuthenticationException. The topics exist.
 *
 * <p>Usage: OAuthChecks DEV_BOOTSTRAP JWT_BOOTSTRAP TOKEN_FILE EXPIRED_TOKEN_FILE TOPIC_PREFIX
 * [check...|all].
 */
public final class OAuthChecks {
    private final String dev, jwt, tokenFile, expiredFile, prefix;

    OAuthChecks(String[] a) {
        this.dev = a[0];
        this.jwt = a[1];
        this.tokenFile = a[2];
        this.expiredFile = a[3];
        this.prefix = a[4];
    }

    private static Properties base(String bootstrap) {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("security.protocol", "SASL_PLAINTEXT");
        p.put("sasl.mechanism", "OAUTHBEARER");
        return p;
    }

    Properties unsecured() {
        Properties p = base(dev);
        p.put("sasl.jaas.config", "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required"
                + " unsecuredLoginStringClaim_sub=\"javadev\" unsecuredLoginListClaim_scope=\",kafka\";");
        return p;
    }

    Properties fromFile(String file) {
        // Kafka 4.x fetches tokens only from URLs it is allowed to.
        System.setProperty("org.apache.kafka.sasl.oauthbearer.allowed.urls", "file://" + tokenFile + ",file://" + expiredFile);
        Properties p = base(jwt);
        p.put("sasl.login.callback.handler.class", "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler");
        p.put("sasl.oauthbearer.token.endpoint.url", "file://" + file);
        p.put("sasl.jaas.config", "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;");
        return p;
    }

    void produceConsume(Properties base, String topic) throws Exception {
        RoundTrip.tenRecords(base, topic);
    }

    void expired() throws Exception {
        Properties p = fromFile(expiredFile);
        p.put("request.timeout.ms", "10000");
        p.put("default.api.timeout.ms", "15000");
        try (Admin admin = Admin.create(p)) {
            admin.describeCluster().nodes().get();
            require(false, "describeCluster succeeded with an expired token");
        } catch (ExecutionException e) {
            require(e.getCause() instanceof SaslAuthenticationException, "expired token failed with %s, want SaslAuthenticationException", e.getCause());
            require(e.getCause().getMessage().contains("invalid_token"), "message %s, want the invalid_token status", e.getCause().getMessage());
        }
    }

    public static void main(String[] args) throws Exception {
        if (args.length < 5) {
            System.err.println("usage: OAuthChecks DEV JWT TOKEN_FILE EXPIRED_TOKEN_FILE TOPIC_PREFIX [check...|all]");
            System.exit(2);
        }
        OAuthChecks o = new OAuthChecks(args);
        Checks checks = new Checks();
        checks.add("oauth-unsecured-login", () -> o.produceConsume(o.unsecured(), o.prefix + "-dev"));
        checks.add("oauth-jwt-token-file", () -> o.produceConsume(o.fromFile(o.tokenFile), o.prefix + "-jwt"));
        checks.add("oauth-expired-jwt", o::expired);
        System.exit(checks.run(Arrays.asList(args).subList(5, args.length)) == 0 ? 0 : 1);
    }
}
