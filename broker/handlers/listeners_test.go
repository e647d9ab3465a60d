package handlers

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/controller"
	"github.com/samsa-broker/samsa/wire"
)

// callOn is adminEnv.call for a request that came in on listener.
func (e *adminEnv) callOn(t *testing.T, listener string, req kmsg.Request, v int16) kmsg.Response {
	t.Helper()
	req.SetVersion(v)
	var handle Handler
	for _, entry := range Table() {
		if entry.Key == req.Key() {
			handle = entry.Handle
		}
	}
	resp, err := handle(e.d, &Request{Header: wire.RequestHeader{APIKey: req.Key(), APIVersion: v}, Body: req, ListenerName: listener})
	if err != nil {
		t.Fatalf("handler: %v", err)
	}
	return resp
}

// TestAnswersUseTheRequestListener: with the two-listener compose layout
// (PLAINTEXT://kafka:29092 for containers, PLAINTEXT_HOST://localhost:9092
// for the host) Metadata and DescribeCluster always answered with the first
// advertised listener, so host clients were sent to kafka:29092, which
// they cannot resolve. Every listener is now registered (BrokerRegistration
// carries them all) and each answer uses the listener the request came in
// on, falling back to the default listener for a broker that lacks it.
func TestAnswersUseTheRequestListener(t *testing.T) {
	e := newAdminEnv(t)
	reg := kmsg.NewPtrBrokerRegistrationRequest()
	reg.BrokerID, reg.ClusterID = 2, e.d.Controller.Image().ClusterID
	reg.Listeners = []kmsg.BrokerRegistrationRequestListener{
		{Name: "PLAINTEXT", Host: "kafka-2", Port: 29092},
		{Name: "plaintext_host", Host: "localhost", Port: 9094},
	}
	if resp := e.callOn(t, "", reg, 4).(*kmsg.BrokerRegistrationResponse); resp.ErrorCode != 0 {
		t.Fatalf("registration: code %d", resp.ErrorCode)
	}
	b := e.d.Controller.Image().Brokers[2]
	wantL := []controller.BrokerListener{{Name: "PLAINTEXT", Host: "kafka-2", Port: 29092}, {Name: "PLAINTEXT_HOST", Host: "localhost", Port: 9094}}
	if b.Host != "kafka-2" || b.Port != 29092 || len(b.Listeners) != 2 || b.Listeners[0] != wantL[0] || b.Listeners[1] != wantL[1] {
		t.Fatalf("registered %+v", b)
	}
	for _, tc := range []struct {
		listener string
		host     string
		port     int32
	}{
		{"PLAINTEXT", "kafka-2", 29092},
		{"PLAINTEXT_HOST", "localhost", 9094},
		{"OTHER", "kafka-2", 29092}, // the broker lacks it: default listener
		{"", "kafka-2", 29092},
	} {
		md := e.callOn(t, tc.listener, kmsg.NewPtrMetadataRequest(), 12).(*kmsg.MetadataResponse)
		found := false
		for _, rb := range md.Brokers {
			if rb.NodeID == 2 {
				found = true
				if rb.Host != tc.host || rb.Port != tc.port {
					t.Errorf("Metadata on %q: broker 2 at %s:%d, want %s:%d", tc.listener, rb.Host, rb.Port, tc.host, tc.port)
				}
			}
		}
		if !found {
			t.Errorf("Metadata on %q: no broker 2 in %+v", tc.listener, md.Brokers)
		}
		dc := e.callOn(t, tc.listener, kmsg.NewPtrDescribeClusterRequest(), 1).(*kmsg.DescribeClusterResponse)
		for _, rb := range dc.Brokers {
			if rb.NodeID == 2 && (rb.Host != tc.host || rb.Port != tc.port) {
				t.Errorf("DescribeCluster on %q: broker 2 at %s:%d, want %s:%d", tc.listener, rb.Host, rb.Port, tc.host, tc.port)
			}
		}
	}
}

// TestBrokerEndpointOldImage: a registration recorded before listeners
// were (no Listeners) answers every listener with Host:Port.
func TestBrokerEndpointOldImage(t *testing.T) {
	b := controller.Broker{ID: 1, Host: "h", Port: 1}
	if h, p := b.Endpoint("PLAINTEXT_HOST"); h != "h" || p != 1 {
		t.Fatalf("Endpoint = %s:%d", h, p)
	}
}
