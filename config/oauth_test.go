package config

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

// TestOAuthSettings: OAUTHBEARER is served only with a validator chosen on
// purpose; the JWT validator needs a JWKS URL and, as Kafka 4.4, an
// expected audience and issuer unless explicitly waived.
func TestOAuthSettings(t *testing.T) {
	base := []string{"KAFKA_LISTENERS=PLAINTEXT://:9092,SASL_PLAINTEXT://:9094", "KAFKA_SASL_ENABLED_MECHANISMS=OAUTHBEARER"}
	jwt := "KAFKA_LISTENER_NAME_SASL__PLAINTEXT_OAUTHBEARER_SASL_SERVER_CALLBACK_HANDLER_CLASS=" + OAuthValidatorHandler
	load := func(env ...string) (*Config, error) { return Load(nil, append(append([]string{}, base...), env...)) }

	c, err := load(jwt,
		"KAFKA_SASL_OAUTHBEARER_JWKS_ENDPOINT_URL=https://idp.example/jwks",
		"KAFKA_SASL_OAUTHBEARER_EXPECTED_AUDIENCE=kafka,other",
		"KAFKA_LISTENER_NAME_SASL__PLAINTEXT_OAUTHBEARER_SASL_OAUTHBEARER_EXPECTED_ISSUER=https://idp.example",
		"KAFKA_SASL_OAUTHBEARER_SUB_CLAIM_NAME=client_id",
		"KAFKA_SASL_OAUTHBEARER_CLOCK_SKEW_SECONDS=5",
		"KAFKA_SASL_OAUTHBEARER_JWKS_ENDPOINT_REFRESH_MS=60000",
		`KAFKA_LISTENER_NAME_SASL__PLAINTEXT_OAUTHBEARER_SASL_JAAS_CONFIG=`+OAuthBearerLoginModule+` required ssl.truststore.location="/ca.pem" ssl.truststore.type="PEM";`,
	)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Ignored) != 0 {
		t.Errorf("ignored: %v", c.Ignored)
	}
	got := c.Security.Listeners["SASL_PLAINTEXT"].SASL.OAuth
	want := &OAuthSettings{
		JWKSURL: "https://idp.example/jwks", JWKSRefreshMs: 60000, JWKSRetryBackoffMaxMs: 10000, ExpectedAudience: []string{"kafka", "other"},
		ExpectedIssuer: "https://idp.example", SubClaim: "client_id", ScopeClaim: "scope", ClockSkewSeconds: 5,
		JWKSTruststoreLocation: "/ca.pem", JWKSTruststoreType: "PEM", UnsecuredPrincipalClaim: "sub", UnsecuredScopeClaim: "scope",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("OAuth settings\n got %+v\nwant %+v", got, want)
	}

	c, err = load("KAFKA_LISTENER_NAME_SASL__PLAINTEXT_OAUTHBEARER_SASL_SERVER_CALLBACK_HANDLER_CLASS="+OAuthUnsecuredValidatorClass,
		`KAFKA_LISTENER_NAME_SASL__PLAINTEXT_OAUTHBEARER_SASL_JAAS_CONFIG=`+OAuthBearerLoginModule+` required unsecuredValidatorRequiredScope="a b" unsecuredValidatorAllowableClockSkewMs="1000";`)
	if err != nil {
		t.Fatal(err)
	}
	if o := c.Security.Listeners["SASL_PLAINTEXT"].SASL.OAuth; !o.Unsecured || !reflect.DeepEqual(o.UnsecuredRequiredScope, []string{"a", "b"}) || o.UnsecuredClockSkewMs != 1000 {
		t.Errorf("unsecured settings: %+v", o)
	}

	for _, tc := range []struct {
		env  []string
		want string
	}{
		{[]string{jwt}, "sasl.oauthbearer.jwks.endpoint.url"},
		{[]string{jwt, "KAFKA_SASL_OAUTHBEARER_JWKS_ENDPOINT_URL=ftp://x/jwks", "KAFKA_SASL_OAUTHBEARER_ALLOW_UNVERIFIED_AUDIENCE=true", "KAFKA_SASL_OAUTHBEARER_ALLOW_UNVERIFIED_ISSUER=true"}, "https://"},
		{[]string{jwt, "KAFKA_SASL_OAUTHBEARER_JWKS_ENDPOINT_URL=file:/jwks.json", "KAFKA_SASL_OAUTHBEARER_EXPECTED_ISSUER=i"}, "sasl.oauthbearer.expected.audience"},
		{[]string{jwt, "KAFKA_SASL_OAUTHBEARER_JWKS_ENDPOINT_URL=file:/jwks.json", "KAFKA_SASL_OAUTHBEARER_EXPECTED_AUDIENCE=a"}, "sasl.oauthbearer.expected.issuer"},
		{[]string{jwt, "KAFKA_SASL_OAUTHBEARER_JWKS_ENDPOINT_URL=file:/jwks.json", "KAFKA_SASL_OAUTHBEARER_EXPECTED_AUDIENCE=a", "KAFKA_SASL_OAUTHBEARER_EXPECTED_ISSUER=i", "KAFKA_SASL_OAUTHBEARER_CLOCK_SKEW_SECONDS=-1"}, "sasl.oauthbearer.clock.skew.seconds"},
	} {
		_, err := load(tc.env...)
		if !errors.Is(err, ErrInvalid) && !errors.Is(err, ErrInvalidValue) || err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: Load = %v, want an error naming %s", tc.env, err, tc.want)
		}
	}
	// Waived checks load.
	if _, err := load(jwt, "KAFKA_SASL_OAUTHBEARER_JWKS_ENDPOINT_URL=file:/jwks.json", "KAFKA_SASL_OAUTHBEARER_ALLOW_UNVERIFIED_AUDIENCE=true", "KAFKA_SASL_OAUTHBEARER_ALLOW_UNVERIFIED_ISSUER=true"); err != nil {
		t.Errorf("waived audience and issuer: %v", err)
	}
}
