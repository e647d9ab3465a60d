package handlers

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/controller"
)

// TestAlterListeners: a change of the broker's listeners or
// listener.security.protocol.map gets Kafka 4.4's INVALID_REQUEST answers
// where Kafka refuses it (kafka-ref, session 32: a listener without a
// security protocol, advertised.listeners naming a removed listener, a
// listener kept with another protocol); a change Kafka would apply at
// runtime is INVALID_CONFIG with samsa's reason and stores nothing; the
// current value is accepted.
func TestAlterListeners(t *testing.T) {
	e := newAdminEnv(t, "listeners=PLAINTEXT://127.0.0.1:37417,CONTROLLER://127.0.0.1:58685",
		"advertised.listeners=PLAINTEXT://127.0.0.1:37417", "controller.listener.names=CONTROLLER",
		"listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,EXTRA:PLAINTEXT")
	alter := func(kv ...string) kmsg.IncrementalAlterConfigsResponseResource {
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		res := kmsg.NewIncrementalAlterConfigsRequestResource()
		res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeBroker, "1"
		for i := 0; i+1 < len(kv); i += 2 {
			c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
			c.Name, c.Value = kv[i], kmsg.StringPtr(kv[i+1])
			res.Configs = append(res.Configs, c)
		}
		req.Resources = append(req.Resources, res)
		return e.call(t, req, 1).(*kmsg.IncrementalAlterConfigsResponse).Resources[0]
	}
	const refused = "samsa does not add, remove or move listeners at runtime (Kafka 4.4 does): set listeners and listener.security.protocol.map in server.properties and restart the node"
	for _, tc := range []struct {
		name string
		kv   []string
		code int16
		msg  string
	}{
		{"no security protocol", []string{"listeners", "PLAINTEXT://127.0.0.1:37417,CONTROLLER://127.0.0.1:58685,OTHER://127.0.0.1:29494"}, kerr.InvalidRequest.Code,
			"Error creating broker listeners from '[PLAINTEXT://127.0.0.1:37417, CONTROLLER://127.0.0.1:58685, OTHER://127.0.0.1:29494]': No security protocol defined for listener OTHER"},
		{"advertised listener removed", []string{"listeners", "CONTROLLER://127.0.0.1:58685"}, kerr.InvalidRequest.Code,
			"requirement failed: advertised.listeners listener names must be equal to or a subset of the ones defined in listeners. Found PLAINTEXT. The valid options based on the current configuration are CONTROLLER"},
		{"protocol of a listener kept", []string{"listener.security.protocol.map", "PLAINTEXT:SSL,CONTROLLER:PLAINTEXT"}, kerr.InvalidRequest.Code,
			"Invalid value org.apache.kafka.common.config.ConfigException: Security protocol cannot be updated for existing listener ListenerName(PLAINTEXT) for configuration Invalid dynamic configuration"},
		{"listener added", []string{"listeners", "PLAINTEXT://127.0.0.1:37417,CONTROLLER://127.0.0.1:58685,EXTRA://127.0.0.1:29494"}, kerr.InvalidConfig.Code, refused},
		{"listener moved", []string{"listeners", "PLAINTEXT://127.0.0.1:37418,CONTROLLER://127.0.0.1:58685"}, kerr.InvalidConfig.Code, refused},
	} {
		r := alter(tc.kv...)
		if r.ErrorCode != tc.code || r.ErrorMessage == nil || *r.ErrorMessage != tc.msg {
			t.Errorf("%s: %v %v, want %v %q", tc.name, kerr.ErrorForCode(r.ErrorCode), r.ErrorMessage, kerr.ErrorForCode(tc.code), tc.msg)
		}
		if got, ok := e.d.Controller.Image().BrokerConfigs["1"]["listeners"]; ok {
			t.Fatalf("%s: stored listeners=%q", tc.name, got)
		}
	}
	if r := alter("listeners", "PLAINTEXT://127.0.0.1:37417,CONTROLLER://127.0.0.1:58685", "listener.security.protocol.map", "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT"); r.ErrorCode != 0 {
		t.Fatalf("the current listeners: %+v", r)
	}
	// A listener change an older samsa stored does not block changes of
	// other settings of the broker.
	v := "PLAINTEXT://127.0.0.1:37417,CONTROLLER://127.0.0.1:58685,EXTRA://127.0.0.1:29494"
	if code, msg := e.d.Controller.AlterBrokerConfigs("1", []controller.ConfigOp{{Name: "listeners", Value: &v, Op: controller.OpSet}}, false, nil); code != 0 {
		t.Fatalf("store listeners: %d %s", code, msg)
	}
	if r := alter("log.retention.ms", "3600000"); r.ErrorCode != 0 {
		t.Fatalf("another setting with a stored listener change: %+v", r)
	}
}
