package config

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

// TestSecuritySettingsFailClosed is the regression test for issue 11 item
// 16: settings that restrict access were logged as "accepted but not
// implemented" while samsa served anonymous PLAINTEXT clients, so a broker
// its operator believed protected was open to everyone. Settings samsa
// still does not implement (the authorizer, mechanisms other than PLAIN and
// SCRAM, TLS or SASL settings of a listener that does not use them) refuse
// to start with a message naming the setting and its origin.
func TestSecuritySettingsFailClosed(t *testing.T) {
	refused := []struct {
		args []string
		env  []string
		name string
	}{
		{env: []string{"KAFKA_SSL_CLIENT_AUTH=required"}, name: "ssl.client.auth"},
		{args: []string{"--override", "ssl.client.auth=requested"}, name: "ssl.client.auth"},
		{env: []string{"KAFKA_LISTENER_NAME_PLAINTEXT_SSL_CLIENT_AUTH=required"}, name: "listener.name.plaintext.ssl.client.auth"},
		{env: []string{"KAFKA_LISTENER_NAME_PLAINTEXT_SSL_KEYSTORE_LOCATION=/ks.jks"}, name: "listener.name.plaintext.ssl.keystore.location"},
		{env: []string{"KAFKA_LISTENER_NAME_PLAINTEXT_SASL_ENABLED_MECHANISMS=PLAIN"}, name: "listener.name.plaintext.sasl.enabled.mechanisms"},
		{args: []string{"--override", "listener.name.plaintext.plain.sasl.jaas.config=x"}, name: "listener.name.plaintext.plain.sasl.jaas.config"},
		{args: []string{"--override", "ssl.engine.factory.class=com.example.Engine"}, name: "ssl.engine.factory.class"},
		// A SASL listener with Kafka's default mechanism (GSSAPI), which
		// samsa does not implement, or OAUTHBEARER without a validator
		// chosen (Kafka's default is the unsecured one).
		{env: []string{"KAFKA_LISTENERS=SASL_PLAINTEXT://:9092"}, name: "sasl.enabled.mechanisms"},
		{env: []string{"KAFKA_LISTENERS=SASL_PLAINTEXT://:9092", "KAFKA_SASL_ENABLED_MECHANISMS=PLAIN,OAUTHBEARER"}, name: "listener.name.sasl_plaintext.oauthbearer.sasl.server.callback.handler.class"},
		{env: []string{"KAFKA_LISTENERS=SASL_PLAINTEXT://:9092", "KAFKA_SASL_ENABLED_MECHANISMS=OAUTHBEARER",
			"KAFKA_LISTENER_NAME_SASL__PLAINTEXT_OAUTHBEARER_SASL_SERVER_CALLBACK_HANDLER_CLASS=com.example.MyHandler"}, name: "listener.name.sasl_plaintext.oauthbearer.sasl.server.callback.handler.class"},
	}
	for _, tc := range refused {
		_, err := Load(tc.args, tc.env)
		if !errors.Is(err, ErrUnsupported) {
			t.Errorf("%s: Load = %v, want ErrUnsupported", tc.name, err)
			continue
		}
		if msg := err.Error(); !strings.Contains(msg, tc.name+"=") || !strings.Contains(msg, "refusing to start") {
			t.Errorf("%s: message does not name the setting: %s", tc.name, msg)
		}
	}
	// A secret is not repeated in the message.
	if _, err := Load([]string{"--override", `listener.name.plaintext.plain.sasl.jaas.config=x required user_a="hunter2";`}, nil); err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("JAAS configuration in the message: %v", err)
	}
	// A file names its line.
	if _, err := Load([]string{writeFile(t, "# x\nssl.engine.factory.class=a.B\n")}, nil); err == nil || !strings.Contains(err.Error(), "server.properties:2") {
		t.Errorf("file: %v", err)
	}
	// A TLS listener needs a keystore.
	if _, err := Load([]string{"--override", "listeners=SSL://:9093"}, nil); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "keystore") {
		t.Errorf("SSL listener without keystore: %v", err)
	}

	// Settings that no listener uses stay warnings, as Kafka ignores them.
	harmless := [][]string{
		{"KAFKA_SSL_CLIENT_AUTH=none"},
		{"KAFKA_SSL_KEYSTORE_LOCATION=/ks.jks"},
		{"KAFKA_SASL_ENABLED_MECHANISMS=PLAIN"},                               // SASL listeners only
		{"KAFKA_LISTENER_NAME_SASL__PLAINTEXT_SASL_ENABLED_MECHANISMS=PLAIN"}, // not a configured listener
		{"KAFKA_LISTENER_NAME_EXTERNAL_SSL_KEYSTORE_LOCATION=/ks.jks"},        // not a configured listener
	}
	for _, env := range harmless {
		c, err := Load(nil, env)
		if err != nil {
			t.Errorf("%v: %v", env, err)
			continue
		}
		if len(c.Warnings) != 1 {
			t.Errorf("%v: warnings %v", env, c.Warnings)
		}
	}
	// A later source wins: an override clears what the file set.
	file := writeFile(t, "authorizer.class.name=x\n")
	if _, err := Load([]string{file, "--override", "authorizer.class.name="}, nil); err != nil {
		t.Errorf("override clearing the authorizer: %v", err)
	}
}

// TestListenerSecurity resolves each listener's settings: listener-prefixed
// settings win over broker-wide ones, JAAS users and credentials come from
// listener.name.<l>.<mechanism>.sasl.jaas.config, and
// security.inter.broker.protocol picks the inter-broker listener.
func TestListenerSecurity(t *testing.T) {
	c := mustLoad(t, nil, []string{
		"KAFKA_LISTENERS=PLAINTEXT://:9092,SSL://:9093,SASL_SSL://:9094,SASL_PLAINTEXT://:9095",
		"KAFKA_SECURITY_INTER_BROKER_PROTOCOL=SASL_PLAINTEXT",
		"KAFKA_SSL_KEYSTORE_LOCATION=/etc/ks.p12",
		"KAFKA_SSL_KEYSTORE_TYPE=PKCS12",
		"KAFKA_LISTENER_NAME_SSL_SSL_CLIENT_AUTH=required",
		"KAFKA_LISTENER_NAME_SASL__SSL_SSL_KEYSTORE_LOCATION=/etc/other.pem",
		"KAFKA_LISTENER_NAME_SASL__SSL_SSL_ENABLED_PROTOCOLS=TLSv1.3",
		"KAFKA_SASL_ENABLED_MECHANISMS=PLAIN,SCRAM-SHA-512",
		"KAFKA_SASL_MECHANISM_INTER_BROKER_PROTOCOL=PLAIN",
		`KAFKA_LISTENER_NAME_SASL__PLAINTEXT_PLAIN_SASL_JAAS_CONFIG=org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice pw";`,
		`KAFKA_LISTENER_NAME_SASL__PLAINTEXT_SCRAM___SHA___512_SASL_JAAS_CONFIG=org.apache.kafka.common.security.scram.ScramLoginModule required username="broker" password="b";`,
		"KAFKA_CONNECTIONS_MAX_REAUTH_MS=60000",
	})
	if c.InterBrokerListenerName != "SASL_PLAINTEXT" || c.Security.ReauthMs != 60000 || c.Security.InterBrokerMechanism != "PLAIN" {
		t.Errorf("inter-broker %s reauth %d mechanism %s", c.InterBrokerListenerName, c.Security.ReauthMs, c.Security.InterBrokerMechanism)
	}
	ls := c.Security.Listeners
	if ls["PLAINTEXT"].UsesTLS() || ls["PLAINTEXT"].UsesSASL() {
		t.Errorf("PLAINTEXT: %+v", ls["PLAINTEXT"])
	}
	if s := ls["SSL"]; !s.UsesTLS() || s.UsesSASL() || s.TLS.ClientAuth != "required" || s.TLS.KeystoreLocation != "/etc/ks.p12" || s.TLS.KeystoreType != "PKCS12" {
		t.Errorf("SSL: %+v %+v", s, s.TLS)
	}
	if s := ls["SASL_SSL"]; !s.UsesTLS() || !s.UsesSASL() || s.TLS.ClientAuth != "none" || s.TLS.KeystoreLocation != "/etc/other.pem" ||
		!reflect.DeepEqual(s.TLS.EnabledProtocols, []string{"TLSv1.3"}) || !reflect.DeepEqual(s.SASL.Mechanisms, []string{"PLAIN", "SCRAM-SHA-512"}) {
		t.Errorf("SASL_SSL: %+v %+v %+v", s, s.TLS, s.SASL)
	}
	s := ls["SASL_PLAINTEXT"]
	if s.UsesTLS() || !s.UsesSASL() {
		t.Fatalf("SASL_PLAINTEXT: %+v", s)
	}
	if want := map[string]string{"admin": "admin-secret", "alice": "alice pw"}; !reflect.DeepEqual(s.SASL.PlainUsers, want) {
		t.Errorf("plain users %v", s.SASL.PlainUsers)
	}
	if want := (map[string]SASLCredential{"PLAIN": {"admin", "admin-secret"}, "SCRAM-SHA-512": {"broker", "b"}}); !reflect.DeepEqual(s.SASL.Credentials, want) {
		t.Errorf("credentials %v", s.SASL.Credentials)
	}
	if len(c.Warnings) != 0 {
		t.Errorf("warnings %v", c.Warnings)
	}

	// The inter-broker mechanism must be enabled there.
	if _, err := Load(nil, []string{"KAFKA_LISTENERS=SASL_PLAINTEXT://:9092", "KAFKA_SASL_ENABLED_MECHANISMS=PLAIN"}); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "sasl.mechanism.inter.broker.protocol") {
		t.Errorf("inter-broker GSSAPI: %v", err)
	}
	// A JAAS module of the wrong mechanism is refused.
	if _, err := Load(nil, []string{"KAFKA_LISTENERS=SASL_PLAINTEXT://:9092", "KAFKA_SASL_ENABLED_MECHANISMS=PLAIN", "KAFKA_SASL_MECHANISM_INTER_BROKER_PROTOCOL=PLAIN",
		`KAFKA_LISTENER_NAME_SASL__PLAINTEXT_PLAIN_SASL_JAAS_CONFIG=org.apache.kafka.common.security.scram.ScramLoginModule required;`}); !errors.Is(err, ErrInvalidValue) {
		t.Errorf("wrong module: %v", err)
	}
	// Both inter-broker settings at once are refused, as Kafka does.
	if _, err := Load(nil, []string{"KAFKA_SECURITY_INTER_BROKER_PROTOCOL=PLAINTEXT", "KAFKA_INTER_BROKER_LISTENER_NAME=PLAINTEXT"}); !errors.Is(err, ErrInvalid) {
		t.Errorf("both inter-broker settings: %v", err)
	}
}

// TestBitnamiUsers: the bitnami image's KAFKA_CLIENT_USERS and
// KAFKA_CLIENT_PASSWORDS become PLAIN users of the client SASL listener
// and SCRAM users; KAFKA_INTER_BROKER_USER the inter-broker credentials.
func TestBitnamiUsers(t *testing.T) {
	c := mustLoad(t, nil, []string{
		"KAFKA_CFG_LISTENERS=CLIENT://:9092,INTERNAL://:9094",
		"KAFKA_CFG_LISTENER_SECURITY_PROTOCOL_MAP=CLIENT:SASL_PLAINTEXT,INTERNAL:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT",
		"KAFKA_CFG_INTER_BROKER_LISTENER_NAME=INTERNAL",
		"KAFKA_CFG_SASL_ENABLED_MECHANISMS=PLAIN,SCRAM-SHA-256",
		"KAFKA_CFG_SASL_MECHANISM_INTER_BROKER_PROTOCOL=PLAIN",
		"KAFKA_CLIENT_USERS=alice,bob",
		"KAFKA_CLIENT_PASSWORDS=a1,b2",
		"KAFKA_INTER_BROKER_USER=inter",
		"KAFKA_INTER_BROKER_PASSWORD=ipw",
	})
	ls := c.Security.Listeners
	if want := map[string]string{"alice": "a1", "bob": "b2"}; !reflect.DeepEqual(ls["CLIENT"].SASL.PlainUsers, want) {
		t.Errorf("client users %v", ls["CLIENT"].SASL.PlainUsers)
	}
	if want := map[string]string{"inter": "ipw"}; !reflect.DeepEqual(ls["INTERNAL"].SASL.PlainUsers, want) {
		t.Errorf("internal users %v", ls["INTERNAL"].SASL.PlainUsers)
	}
	if cr := ls["INTERNAL"].SASL.Credentials["PLAIN"]; cr.Username != "inter" || cr.Password != "ipw" {
		t.Errorf("inter-broker credentials %v", cr)
	}
	if want := map[string]string{"alice": "a1", "bob": "b2", "inter": "ipw"}; !reflect.DeepEqual(c.Security.ScramUsers, want) {
		t.Errorf("scram users %v", c.Security.ScramUsers)
	}
	if _, err := Load(nil, []string{"KAFKA_CLIENT_USERS=a,b", "KAFKA_CLIENT_PASSWORDS=x"}); !errors.Is(err, ErrInvalid) {
		t.Errorf("unpaired users: %v", err)
	}
}

func TestParseJAAS(t *testing.T) {
	got, err := ParseJAAS(`org.apache.kafka.common.security.plain.PlainLoginModule required
		username="admin" password="a\"b" user_x=bare;`)
	if err != nil {
		t.Fatal(err)
	}
	want := []JAASEntry{{Module: PlainLoginModule, Flag: "required", Options: map[string]string{"username": "admin", "password": `a"b`, "user_x": "bare"}}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v", got)
	}
	for _, bad := range []string{"", "Mod", "Mod sometimes;", `Mod required user;`, `Mod required user=;`, `Mod required u="x`} {
		if _, err := ParseJAAS(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestPrincipalMapping(t *testing.T) {
	rules, err := ParsePrincipalMappingRules(`RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/,RULE:^CN=(.*?),OU=(.*?),O=(.*?).*$/$1@$2/L,
		DEFAULT`)
	if err != nil {
		t.Fatal(err)
	}
	for dn, want := range map[string]string{
		"CN=kafka-svc,OU=ServiceUsers,O=Example": "kafka-svc",
		"CN=Duke,OU=JavaSoft,O=Sun":              "duke@javasoft",
		"CN=plain":                               "CN=plain",
	} {
		if got, err := MapPrincipal(rules, dn); err != nil || got != want {
			t.Errorf("%s: %q %v, want %q", dn, got, err, want)
		}
	}
	strict, _ := ParsePrincipalMappingRules(`RULE:^CN=([a-z]+)$/$1/U`)
	if got, _ := MapPrincipal(strict, "CN=bob"); got != "BOB" {
		t.Errorf("upper: %q", got)
	}
	if _, err := MapPrincipal(strict, "CN=Bob1"); !errors.Is(err, ErrNoMatchingRule) {
		t.Errorf("no match: %v", err)
	}
	if _, err := ParsePrincipalMappingRules("RULE:x"); err == nil {
		t.Error("bad rule accepted")
	}
}

// TestJAASFile: a JAAS file named in KAFKA_OPTS
// (-Djava.security.auth.login.config, as Confluent's images are set up)
// gives the users of SASL listeners without a listener JAAS setting: the
// section <listener>.KafkaServer first, else KafkaServer.
func TestJAASFile(t *testing.T) {
	file := writeFile(t, `// users
KafkaServer {
   org.apache.kafka.common.security.plain.PlainLoginModule required
   username="admin"
   password="admin-secret"
   user_admin="admin-secret"
   user_alice="alice-secret";
   org.apache.kafka.common.security.scram.ScramLoginModule required username="admin" password="s";
};
sasl_plaintext.KafkaServer {
   org.apache.kafka.common.security.plain.PlainLoginModule required user_bob="bob-secret";
};
`)
	c := mustLoad(t, nil, []string{
		"KAFKA_LISTENERS=SASL_SSL://:9093,SASL_PLAINTEXT://:9094",
		"KAFKA_SSL_KEYSTORE_LOCATION=/ks.pem",
		"KAFKA_SASL_ENABLED_MECHANISMS=PLAIN,SCRAM-SHA-256",
		"KAFKA_SASL_MECHANISM_INTER_BROKER_PROTOCOL=PLAIN",
		"KAFKA_INTER_BROKER_LISTENER_NAME=SASL_SSL",
		"KAFKA_OPTS=-Xmx1g -Djava.security.auth.login.config=" + file,
	})
	ssl := c.Security.Listeners["SASL_SSL"].SASL
	if want := map[string]string{"admin": "admin-secret", "alice": "alice-secret"}; !reflect.DeepEqual(ssl.PlainUsers, want) {
		t.Errorf("KafkaServer users %v", ssl.PlainUsers)
	}
	if cr := ssl.Credentials["SCRAM-SHA-256"]; cr.Username != "admin" || cr.Password != "s" {
		t.Errorf("SCRAM credentials %v", ssl.Credentials)
	}
	if want := map[string]string{"bob": "bob-secret"}; !reflect.DeepEqual(c.Security.Listeners["SASL_PLAINTEXT"].SASL.PlainUsers, want) {
		t.Errorf("listener section users %v", c.Security.Listeners["SASL_PLAINTEXT"].SASL.PlainUsers)
	}
	if _, err := Load(nil, []string{"KAFKA_OPTS=-Djava.security.auth.login.config=/nonexistent/jaas.conf"}); err == nil {
		t.Error("a missing JAAS file was ignored")
	}
	if _, err := ParseJAASFile("KafkaServer { x required a=b;"); err == nil {
		t.Error("unclosed section accepted")
	}
}

// TestReauthPerListenerMechanism: connections.max.reauth.ms may be set per
// listener and per listener and mechanism, looked up as Kafka 4.4's
// SaslChannelBuilder does (listener.name.<l>.<mechanism>. first, then
// listener.name.<l>., then the broker-wide value); a negative value is
// accepted as Kafka's unvalidated long and means no re-authentication.
func TestReauthPerListenerMechanism(t *testing.T) {
	jaas := `org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" user_admin="admin-secret";`
	c := mustLoad(t, []string{
		"--override", "listeners=SASL_PLAINTEXT://:9092,OTHER://:9093,PLAINTEXT://:9094",
		"--override", "listener.security.protocol.map=SASL_PLAINTEXT:SASL_PLAINTEXT,OTHER:SASL_PLAINTEXT,PLAINTEXT:PLAINTEXT",
		"--override", "inter.broker.listener.name=PLAINTEXT",
		"--override", "sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256",
		"--override", "listener.name.sasl_plaintext.plain.sasl.jaas.config=" + jaas,
		"--override", "listener.name.other.plain.sasl.jaas.config=" + jaas,
		"--override", "connections.max.reauth.ms=60000",
		"--override", "listener.name.sasl_plaintext.connections.max.reauth.ms=30000",
		"--override", "listener.name.sasl_plaintext.scram-sha-256.connections.max.reauth.ms=5000",
	}, nil)
	if c.Security.ReauthMs != 60000 {
		t.Errorf("broker-wide %d", c.Security.ReauthMs)
	}
	if got, want := c.Security.Listeners["SASL_PLAINTEXT"].SASL.ReauthMs, map[string]int64{"PLAIN": 30000, "SCRAM-SHA-256": 5000}; !reflect.DeepEqual(got, want) {
		t.Errorf("SASL_PLAINTEXT: %v, want %v", got, want)
	}
	if got := c.Security.Listeners["OTHER"].SASL.ReauthMs; len(got) != 0 {
		t.Errorf("OTHER: %v, want the broker-wide value", got)
	}
	if len(c.Warnings) != 0 || len(c.Ignored) != 0 {
		t.Errorf("warnings %v ignored %v", c.Warnings, c.Ignored)
	}
	if c := mustLoad(t, []string{"--override", "connections.max.reauth.ms=-5"}, nil); c.Security.ReauthMs != 0 {
		t.Errorf("negative: %d", c.Security.ReauthMs)
	}
	if _, err := Load([]string{"--override", "connections.max.reauth.ms=soon"}, nil); !errors.Is(err, ErrInvalidValue) {
		t.Errorf("not a number: %v", err)
	}
}
