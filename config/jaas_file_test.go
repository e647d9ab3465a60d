package config

import (
	"os"
	"reflect"
	"testing"
)

// TestJAASFileEmptySection: kafka-python's integration fixture (its
// servers/resources/default/kafka_server_jaas.conf) ends with "Client {};",
// a section without login modules. Java's ConfigFile parser accepts it and
// Kafka 4.4 starts with the file; samsa refused it ("section Client: jaas:
// no login module") and did not start.
func TestJAASFileEmptySection(t *testing.T) {
	file := writeFile(t, `KafkaServer {
    org.apache.kafka.common.security.plain.PlainLoginModule required username="alice" password="alice-secret" user_alice="alice-secret";

};
Client {};
Other {
};
`)
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	sections, err := ParseJAASFile(string(data))
	if err != nil {
		t.Fatalf("ParseJAASFile: %v", err)
	}
	for _, name := range []string{"Client", "Other"} {
		if e, ok := sections[name]; !ok || len(e) != 0 {
			t.Errorf("section %s = %v, %v; want present and empty", name, e, ok)
		}
	}
	c := mustLoad(t, nil, []string{
		"KAFKA_LISTENERS=SASL_PLAINTEXT://:9094",
		"KAFKA_SASL_ENABLED_MECHANISMS=PLAIN",
		"KAFKA_INTER_BROKER_LISTENER_NAME=SASL_PLAINTEXT",
		"KAFKA_SASL_MECHANISM_INTER_BROKER_PROTOCOL=PLAIN",
		"KAFKA_OPTS=-Djava.security.auth.login.config=" + file,
	})
	if want := map[string]string{"alice": "alice-secret"}; !reflect.DeepEqual(c.Security.Listeners["SASL_PLAINTEXT"].SASL.PlainUsers, want) {
		t.Errorf("users %v, want %v", c.Security.Listeners["SASL_PLAINTEXT"].SASL.PlainUsers, want)
	}
	// A sasl.jaas.config value still needs a login module, as Kafka's
	// JaasConfig requires one.
	if _, err := ParseJAAS(""); err == nil {
		t.Error("ParseJAAS accepted a value without a login module")
	}
}
