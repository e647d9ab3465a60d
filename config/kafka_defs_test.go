package config

import (
	"testing"
)

// deliberateDefaults are samsa's defaults that differ from Kafka 4.4's on
// purpose (doc.go, "Differences from Kafka's defaults"); Kafka's default is
// the value.
var deliberateDefaults = map[string]string{
	"node.id":                               "required",
	"process.roles":                         "required",
	"listeners":                             "PLAINTEXT://:9092",
	"listener.security.protocol.map":        "SASL_SSL:SASL_SSL,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT",
	"queued.max.request.bytes":              "-1",
	"log.dir":                               "/tmp/kafka-logs",
	"group.coordinator.rebalance.protocols": "classic,consumer,streams", // samsa has no streams or share groups
}

func TestBrokerDefsMatchKafka(t *testing.T) {
	for _, d := range BrokerDefs {
		k, ok := kafkaDefs[d.Name]
		if !ok {
			continue
		}
		if d.Type != k.typ {
			t.Errorf("%s: type %s, Kafka %s", d.Name, d.Type, k.typ)
		}
		kd := "null"
		if k.hasDefault {
			kd = k.dflt
		}
		if k.required {
			kd = "required"
		}
		sd := "null"
		if d.HasDefault {
			sd = d.Default
		}
		if k.required && sd == "null" {
			sd = "required" // the same for DescribeConfigs: no default shown
		}
		if want, ok := deliberateDefaults[d.Name]; ok {
			if kd != want {
				t.Errorf("%s: Kafka's default is now %q, not %q", d.Name, kd, want)
			}
			continue
		}
		if sd != kd {
			t.Errorf("%s: default %q, Kafka %q", d.Name, sd, kd)
		}
	}
}
