package config

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

// TestListenersDerivedFromAdvertised: a compose file that sets only
// KAFKA_ADVERTISED_LISTENERS (the two-listener layout) used to stop with
// "advertised.listeners: listener PLAINTEXT_HOST is not in listeners".
// The apache/kafka image derives listeners from it (same names and ports,
// all interfaces); samsa does too, and adds this node's controller listener
// from controller.quorum.voters when the advertised list lacks it.
func TestListenersDerivedFromAdvertised(t *testing.T) {
	tests := []struct {
		name string
		env  []string
		want []Listener
		adv  []Listener
	}{
		{
			name: "two listeners, controller from voters",
			env: []string{
				"KAFKA_NODE_ID=1",
				"KAFKA_PROCESS_ROLES=broker,controller",
				"KAFKA_ADVERTISED_LISTENERS=PLAINTEXT://kafka:29092,PLAINTEXT_HOST://localhost:9092",
				"KAFKA_LISTENER_SECURITY_PROTOCOL_MAP=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,PLAINTEXT_HOST:PLAINTEXT",
				"KAFKA_CONTROLLER_LISTENER_NAMES=CONTROLLER",
				"KAFKA_CONTROLLER_QUORUM_VOTERS=1@kafka:29093",
				"KAFKA_INTER_BROKER_LISTENER_NAME=PLAINTEXT",
			},
			want: []Listener{{"PLAINTEXT", "", 29092}, {"PLAINTEXT_HOST", "", 9092}, {"CONTROLLER", "", 29093}},
			adv:  []Listener{{"PLAINTEXT", "kafka", 29092}, {"PLAINTEXT_HOST", "localhost", 9092}},
		},
		{
			name: "advertised controller listener kept, not given to clients",
			env: []string{
				"KAFKA_NODE_ID=2",
				"KAFKA_ADVERTISED_LISTENERS=PLAINTEXT://kafka-2:9092,CONTROLLER://kafka-2:9093",
				"KAFKA_CONTROLLER_LISTENER_NAMES=CONTROLLER",
				"KAFKA_CONTROLLER_QUORUM_VOTERS=2@kafka-2:19093",
			},
			want: []Listener{{"PLAINTEXT", "", 9092}, {"CONTROLLER", "", 9093}},
			adv:  []Listener{{"PLAINTEXT", "kafka-2", 9092}},
		},
		{
			name: "broker only: no controller listener added",
			env: []string{
				"KAFKA_PROCESS_ROLES=broker",
				"KAFKA_ADVERTISED_LISTENERS=PLAINTEXT://kafka:9092",
				"KAFKA_CONTROLLER_LISTENER_NAMES=CONTROLLER",
				"KAFKA_CONTROLLER_QUORUM_VOTERS=1@kafka:9093",
			},
			want: []Listener{{"PLAINTEXT", "", 9092}},
			adv:  []Listener{{"PLAINTEXT", "kafka", 9092}},
		},
		{
			name: "listeners given: not derived",
			env: []string{
				"KAFKA_LISTENERS=PLAINTEXT://127.0.0.1:9092,PLAINTEXT_HOST://127.0.0.1:9094",
				"KAFKA_ADVERTISED_LISTENERS=PLAINTEXT_HOST://localhost:9094",
				"KAFKA_LISTENER_SECURITY_PROTOCOL_MAP=PLAINTEXT:PLAINTEXT,PLAINTEXT_HOST:PLAINTEXT",
			},
			want: []Listener{{"PLAINTEXT", "127.0.0.1", 9092}, {"PLAINTEXT_HOST", "127.0.0.1", 9094}},
			adv:  []Listener{{"PLAINTEXT_HOST", "localhost", 9094}},
		},
		{
			name: "empty advertised means unset: default listeners",
			env:  []string{"KAFKA_ADVERTISED_LISTENERS="},
			want: []Listener{{"PLAINTEXT", "localhost", 9092}},
			adv:  []Listener{{"PLAINTEXT", "localhost", 9092}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := mustLoad(t, nil, tt.env)
			if !reflect.DeepEqual(c.Listeners, tt.want) {
				t.Errorf("Listeners = %v, want %v", c.Listeners, tt.want)
			}
			if !reflect.DeepEqual(c.AdvertisedListeners, tt.adv) {
				t.Errorf("AdvertisedListeners = %v, want %v", c.AdvertisedListeners, tt.adv)
			}
			if got, want := c.Values["listeners"], joinListeners(tt.want); got != want {
				t.Errorf("Values[listeners] = %q, want %q", got, want)
			}
		})
	}
}

// TestClusterIDValidated: CLUSTER_ID used to be taken as any string and
// written to meta.properties, where Kafka refuses anything but a base64
// UUID; a compose file that works on samsa must work on Kafka too, and
// the other way round. The messages keep Kafka's wording.
func TestClusterIDValidated(t *testing.T) {
	for _, id := range []string{"4L6g3nShT-eMCtK--X86sw", "MkU3OEVBNTcwNTJENDM2Qg", "MkU3OEVBNTcwNTJENDM2Qg=="} {
		if c := mustLoad(t, nil, []string{"CLUSTER_ID=" + id}); c.ClusterID != id {
			t.Errorf("cluster id %q, want %q", c.ClusterID, id)
		}
	}
	bad := []struct{ id, msg string }{
		{"abc", "Input string `abc` decoded as 2 bytes, which is not equal to the expected 16 bytes of a base64-encoded UUID"},
		{"my.cluster.id.is.22chr", "Illegal base64 character 2e"},
		{"4L6g3nShT-eMCtK--X86sw4L6g3nShT", "Input string with prefix `4L6g3nShT-eMCtK--X86sw4L` is too long to be decoded as a base64 UUID"},
		{"4L6g3nShT+eMCtK/-X86sw", "Illegal base64 character 2b"},
	}
	for _, tt := range bad {
		_, err := Load(nil, []string{"CLUSTER_ID=" + tt.id})
		if !errors.Is(err, ErrInvalidValue) || !strings.Contains(err.Error(), "Cluster ID string "+tt.id+" does not appear to be a valid UUID: "+tt.msg) {
			t.Errorf("CLUSTER_ID=%s: err = %v, want it to contain %q", tt.id, err, tt.msg)
		}
	}
	// A descriptive 22-character name that happens to be valid base64url
	// decodes to 16 bytes: Kafka accepts it as well, and so does samsa.
	if c := mustLoad(t, nil, []string{"CLUSTER_ID=industrial-cluster-001"}); c.ClusterID != "industrial-cluster-001" {
		t.Errorf("cluster id %q", c.ClusterID)
	}
}

// Regression (issue 17, the apache/kafka "isolated" example): a
// controller-only node with KAFKA_INTER_BROKER_LISTENER_NAME=PLAINTEXT and
// only a CONTROLLER listener was refused ("inter.broker.listener.name
// PLAINTEXT is not in listeners"); Kafka checks it for brokers only.
func TestControllerOnlyIgnoresInterBrokerListener(t *testing.T) {
	env := []string{
		"KAFKA_NODE_ID=1", "KAFKA_PROCESS_ROLES=controller", "KAFKA_LISTENERS=CONTROLLER://:9093",
		"KAFKA_INTER_BROKER_LISTENER_NAME=PLAINTEXT", "KAFKA_CONTROLLER_LISTENER_NAMES=CONTROLLER",
		"KAFKA_CONTROLLER_QUORUM_VOTERS=1@controller-1:9093,2@controller-2:9093,3@controller-3:9093",
	}
	if _, err := Load(nil, env); err != nil {
		t.Fatalf("controller-only node refused: %v", err)
	}
	broker := append([]string{}, env...)
	broker[1], broker[2] = "KAFKA_PROCESS_ROLES=broker", "KAFKA_LISTENERS=OTHER://:9092"
	if _, err := Load(nil, append(broker, "KAFKA_LISTENER_SECURITY_PROTOCOL_MAP=OTHER:PLAINTEXT,CONTROLLER:PLAINTEXT")); err == nil ||
		!strings.Contains(err.Error(), "inter.broker.listener.name PLAINTEXT is not in listeners") {
		t.Fatalf("broker without its inter-broker listener: %v", err)
	}
}
