package handlers

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
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

// TestNotLeaderEndpointsUseTheRequestListener: a Fetch (v16+) or Produce
// (v10+) of a partition another broker leads answers NOT_LEADER_OR_FOLLOWER
// with CurrentLeader and the leader's endpoint (KIP-951), which clients put
// in place of the leader's node in their metadata. That endpoint was the
// broker's default listener whatever listener the request came in on: a
// Java consumer on an SSL or SASL_SSL listener was given the PLAINTEXT
// port, fetched the partition through a second Node of the same id whose
// fetches and the first Node's undid each other's fetch session, and read
// nothing more of it until its next metadata refresh (the systests'
// replication hard bounce over SSL, session 32). It is now the endpoint on
// the request's listener, as Kafka's getCurrentLeader.
func TestNotLeaderEndpointsUseTheRequestListener(t *testing.T) {
	e := newAdminEnv(t)
	e.d.Init()
	if err := e.d.Controller.RegisterBroker(controller.Broker{ID: 2, Host: "n2", Port: 9092, Listeners: []controller.BrokerListener{
		{Name: "PLAINTEXT", Host: "n2", Port: 9092}, {Name: "SSL", Host: "n2", Port: 9093}}}); err != nil {
		t.Fatal(err)
	}
	res := e.d.Controller.CreateTopics([]controller.CreateTopic{{Name: "elsewhere", NumPartitions: -1, ReplicationFactor: -1,
		Assignment: map[int32][]int32{0: {2}}}}, false)
	if len(res) != 1 || res[0].ErrorCode != 0 {
		t.Fatalf("create: %+v", res)
	}
	fetch := func(listener string) *kmsg.FetchResponse {
		req := kmsg.NewPtrFetchRequest()
		req.ReplicaID, req.ReplicaState.ID, req.MaxBytes, req.SessionEpoch = -1, -1, 1<<20, -1
		rt := kmsg.NewFetchRequestTopic()
		rt.TopicID = res[0].ID
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = 1<<20, -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		return e.callOn(t, listener, req, 16).(*kmsg.FetchResponse)
	}
	produce := func(listener string) *kmsg.ProduceResponse {
		req := kmsg.NewPtrProduceRequest()
		req.Acks, req.TimeoutMillis = -1, 1000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = "elsewhere"
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Records = []byte{} // not read: the partition is not led here
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		return e.callOn(t, listener, req, 10).(*kmsg.ProduceResponse)
	}
	for _, tc := range []struct {
		listener string
		port     int32
	}{{"SSL", 9093}, {"PLAINTEXT", 9092}} {
		f := fetch(tc.listener)
		p := f.Topics[0].Partitions[0]
		if p.ErrorCode != kerr.NotLeaderForPartition.Code || p.CurrentLeader.LeaderID != 2 || p.CurrentLeader.LeaderEpoch != 0 ||
			len(f.Brokers) != 1 || f.Brokers[0].NodeID != 2 || f.Brokers[0].Host != "n2" || f.Brokers[0].Port != tc.port {
			t.Errorf("Fetch on %s: %+v, brokers %+v; want leader 2 at n2:%d", tc.listener, p, f.Brokers, tc.port)
		}
		pr := produce(tc.listener)
		pp := pr.Topics[0].Partitions[0]
		if pp.ErrorCode != kerr.NotLeaderForPartition.Code || pp.CurrentLeader.LeaderID != 2 ||
			len(pr.Brokers) != 1 || pr.Brokers[0].NodeID != 2 || pr.Brokers[0].Host != "n2" || pr.Brokers[0].Port != tc.port {
			t.Errorf("Produce on %s: %+v, brokers %+v; want leader 2 at n2:%d", tc.listener, pp, pr.Brokers, tc.port)
		}
	}
}
