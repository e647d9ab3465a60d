package config

import (
	"errors"
	"strings"
	"testing"
)

// TestSecuritySettingsFailClosed is the regression test for issue 11 item
// 16: settings that restrict access (an authorizer, super users, required
// TLS client authentication, SASL on a listener, a secure inter-broker
// protocol) were logged as "accepted but not implemented" while samsa
// served anonymous PLAINTEXT clients, so a broker its operator believed
// protected was open to everyone. Until samsa implements security, each
// refuses to start with a message naming the setting and its origin.
func TestSecuritySettingsFailClosed(t *testing.T) {
	refused := []struct {
		args []string
		env  []string
		name string
	}{
		{args: []string{"--override", "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer"}, name: "authorizer.class.name"},
		{env: []string{"KAFKA_SUPER_USERS=User:admin"}, name: "super.users"},
		{env: []string{"KAFKA_ALLOW_EVERYONE_IF_NO_ACL_FOUND=false"}, name: "allow.everyone.if.no.acl.found"},
		{env: []string{"KAFKA_SSL_CLIENT_AUTH=required"}, name: "ssl.client.auth"},
		{args: []string{"--override", "ssl.client.auth=requested"}, name: "ssl.client.auth"},
		{env: []string{"KAFKA_SECURITY_INTER_BROKER_PROTOCOL=SSL"}, name: "security.inter.broker.protocol"},
		{env: []string{"KAFKA_LISTENER_NAME_PLAINTEXT_SSL_CLIENT_AUTH=required"}, name: "listener.name.plaintext.ssl.client.auth"},
		{env: []string{"KAFKA_LISTENER_NAME_PLAINTEXT_SSL_KEYSTORE_LOCATION=/ks.jks"}, name: "listener.name.plaintext.ssl.keystore.location"},
		{env: []string{"KAFKA_LISTENER_NAME_PLAINTEXT_SASL_ENABLED_MECHANISMS=PLAIN"}, name: "listener.name.plaintext.sasl.enabled.mechanisms"},
		{args: []string{"--override", "listener.name.plaintext.plain.sasl.jaas.config=x"}, name: "listener.name.plaintext.plain.sasl.jaas.config"},
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
	// A file names its line.
	if _, err := Load([]string{writeFile(t, "# x\nsuper.users=User:a\n")}, nil); err == nil || !strings.Contains(err.Error(), "server.properties:2") {
		t.Errorf("file: %v", err)
	}
	// SSL and SASL listeners were refused already.
	if _, err := Load([]string{"--override", "listeners=SSL://:9093"}, nil); !errors.Is(err, ErrUnsupported) {
		t.Errorf("SSL listener: %v", err)
	}

	// Settings that restrict nothing on the listeners samsa serves stay
	// warnings, as Kafka ignores them there.
	harmless := [][]string{
		{"KAFKA_ALLOW_EVERYONE_IF_NO_ACL_FOUND=true"},
		{"KAFKA_SSL_CLIENT_AUTH=none"},
		{"KAFKA_AUTHORIZER_CLASS_NAME="},
		{"KAFKA_SECURITY_INTER_BROKER_PROTOCOL=PLAINTEXT"},
		{"KAFKA_SSL_KEYSTORE_LOCATION=/ks.jks"},
		{"KAFKA_SASL_ENABLED_MECHANISMS=PLAIN"},                               // SASL listeners only; samsa has none
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
