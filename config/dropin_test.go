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

// TestClusterIDValidated: any cluster id is taken, as Kafka 4.4 takes it
// (its storage tool formats with "my.cluster id:x", "abc" or
// "ATuFQF0FTIa0Y0Y/MVALiw", and the broker starts; Kafka 3.x refused ids
// that were not base64url UUIDs, and samsa used to refuse them as well),
// except an id with a control character, which meta.properties cannot hold.
func TestClusterIDValidated(t *testing.T) {
	for _, id := range []string{"4L6g3nShT-eMCtK--X86sw", "MkU3OEVBNTcwNTJENDM2Qg", "MkU3OEVBNTcwNTJENDM2Qg==",
		"abc", "my.cluster.id.is.22chr", "4L6g3nShT-eMCtK--X86sw4L6g3nShT", "4L6g3nShT+eMCtK/-X86sw",
		"industrial-cluster-001", "industrial-streaming-cluster-001", "my.cluster id:x"} {
		if c := mustLoad(t, nil, []string{"CLUSTER_ID=" + id}); c.ClusterID != id {
			t.Errorf("cluster id %q, want %q", c.ClusterID, id)
		}
	}
	for _, id := range []string{"two\nlines", "tab\there"} {
		_, err := Load(nil, []string{"CLUSTER_ID=" + id})
		if !errors.Is(err, ErrInvalidValue) || !strings.Contains(err.Error(), "control character") {
			t.Errorf("CLUSTER_ID=%q: err = %v, want a control character refused", id, err)
		}
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
