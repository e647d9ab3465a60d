package handlers

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/broker/share"
	"github.com/samsa-broker/samsa/wire"
)

func apiKeys(resp *kmsg.ApiVersionsResponse) map[int16]kmsg.ApiVersionsResponseApiKey {
	out := map[int16]kmsg.ApiVersionsResponseApiKey{}
	for _, k := range resp.ApiKeys {
		out[k.ApiKey] = k
	}
	return out
}

func finalized(resp *kmsg.ApiVersionsResponse) map[string]int16 {
	out := map[string]int16{}
	for _, f := range resp.FinalizedFeatures {
		if f.MinVersionLevel != f.MaxVersionLevel {
			panic("finalized range")
		}
		out[f.Name] = f.MaxVersionLevel
	}
	return out
}

func TestApiVersionsFeaturesAndConsumerProtocol(t *testing.T) {
	e := newGroupEnv(t)
	// With share groups on (a share manager), every client API is
	// advertised.
	e.d.Shares = share.NewManager(share.Options{})
	t.Cleanup(e.d.Shares.Close)
	resp := ApiVersionsResponse(e.d)
	keys := apiKeys(resp)
	if len(keys) != clientEntries() {
		t.Fatalf("%d keys advertised, table has %d for clients", len(keys), clientEntries())
	}
	if k := keys[int16(kmsg.EndTxn)]; k.MaxVersion != 5 {
		t.Fatalf("EndTxn max %d, want 5 (transaction version 2)", k.MaxVersion)
	}
	fin := finalized(resp)
	// As a fresh Kafka 4.4 cluster with a static quorum (kafka-ref):
	// kraft.version is finalized at 0, so not listed; streams.version at 1.
	if fin["metadata.version"] != 33 || fin["transaction.version"] != 2 || fin["group.version"] != 1 || fin["eligible.leader.replicas.version"] != 1 || fin["share.version"] != 2 || fin["streams.version"] != 1 || len(fin) != 6 {
		t.Fatalf("finalized features %v", fin)
	}
	supported := map[string][2]int16{}
	for _, f := range resp.SupportedFeatures {
		supported[f.Name] = [2]int16{f.MinVersion, f.MaxVersion}
	}
	if supported["metadata.version"] != [2]int16{7, 33} || supported["kraft.version"] != [2]int16{0, 1} ||
		supported["transaction.version"] != [2]int16{0, 2} || supported["group.version"] != [2]int16{0, 1} ||
		supported["eligible.leader.replicas.version"] != [2]int16{0, 1} || supported["share.version"] != [2]int16{0, 2} || supported["streams.version"] != [2]int16{0, 1} || len(supported) != 7 {
		t.Fatalf("supported features %v", supported)
	}
	// The answer encodes at v3+ with the features (tagged fields).
	resp.Version = 3
	var back kmsg.ApiVersionsResponse
	back.Version = 3
	if err := back.ReadFrom(resp.AppendTo(nil)); err != nil || finalized(&back)["transaction.version"] != 2 {
		t.Fatalf("round trip: %v %v", err, back.FinalizedFeatures)
	}

	// Kafka 4.4 with group.coordinator.rebalance.protocols=classic
	// (kafka-ref, session 33) still lists the consumer and streams group
	// APIs and finalizes group.version and streams.version at 1; only
	// the heartbeats answer UNSUPPORTED_VERSION. Until session 33 samsa
	// left the APIs out and the levels at 0, as this test asserted.
	e.d.Config.GroupCoordinatorRebalanceProtocols = []string{"classic"}
	resp = ApiVersionsResponse(e.d)
	keys = apiKeys(resp)
	for _, k := range []kmsg.Key{kmsg.ConsumerGroupHeartbeat, kmsg.ConsumerGroupDescribe, kmsg.StreamsGroupHeartbeat, kmsg.StreamsGroupDescribe, kmsg.StreamsGroupTopologyDescriptionUpdate} {
		if _, ok := keys[int16(k)]; !ok {
			t.Fatalf("key %d not advertised with the consumer and streams protocols off", k)
		}
	}
	if len(keys) != clientEntries() {
		t.Fatalf("%d keys advertised with classic only, table has %d for clients", len(keys), clientEntries())
	}
	if fin := finalized(resp); fin["group.version"] != 1 || fin["streams.version"] != 1 || fin["transaction.version"] != 2 {
		t.Fatalf("finalized with classic only: %v", fin)
	}
	if consumerGroupsOn(e.d) || streamsGroupsOn(e.d) {
		t.Fatal("consumer or streams groups on with classic only")
	}
	if len(ApiVersionsResponse(nil).ApiKeys) != clientEntries() {
		t.Fatal("nil deps")
	}
}

// TestApiVersionsSoftwareNameValidation is the regression test for issue
// 11 item 17: ApiVersions v3+ accepted any client software name and
// version, where Kafka answers INVALID_REQUEST (with no API keys) unless
// both match [a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?. v0-v2 carry no
// names and are not checked.
func TestApiVersionsSoftwareNameValidation(t *testing.T) {
	e := newAdminEnv(t)
	for _, tc := range []struct {
		name, version string
		valid         bool
	}{
		{"apache-kafka-java", "4.0.0", true},
		{"kgo", "v1.22.3", true},
		{"librdkafka", "2.3.0", true},
		{"a", "1", true},
		{"A.b-C9", "0.0.1-SNAPSHOT", true},
		{"", "1.0", false},
		{"kgo", "", false},
		{"-kgo", "1.0", false},
		{"kgo-", "1.0", false},
		{"kgo", ".1", false},
		{"kgo", "1.", false},
		{"k go", "1.0", false},
		{"kgo_client", "1.0", false},
		{"kgo", "1.0+build", false},
		{"kgö", "1.0", false},
		{"kgo", "(devel)", false},
	} {
		for _, v := range []int16{2, 3, 4} {
			req := kmsg.NewPtrApiVersionsRequest()
			req.ClientSoftwareName, req.ClientSoftwareVersion = tc.name, tc.version
			resp := e.call(t, req, v).(*kmsg.ApiVersionsResponse)
			wantValid := tc.valid || v < 3
			if got := resp.ErrorCode == 0; got != wantValid {
				t.Errorf("v%d %q %q: error %d, want valid=%v", v, tc.name, tc.version, resp.ErrorCode, wantValid)
			}
			if !wantValid && (resp.ErrorCode != kerr.InvalidRequest.Code || len(resp.ApiKeys) != 0) {
				t.Errorf("v%d %q %q: error %d with %d keys, want INVALID_REQUEST and none", v, tc.name, tc.version, resp.ErrorCode, len(resp.ApiKeys))
			}
			if wantValid && len(resp.ApiKeys) == 0 {
				t.Errorf("v%d %q %q: no API keys", v, tc.name, tc.version)
			}
		}
	}
}

// clientEntries counts the table's APIs that clients are told about.
func clientEntries() int {
	n := 0
	for _, e := range Table() {
		if !e.ControllerOnly {
			n++
		}
	}
	return n
}

// TestApiVersionsFeaturesByVersion: Kafka 4.4 leaves the supported features
// whose range starts at 0 out of ApiVersions v3 (only metadata.version,
// 7-33, is left) and lists them all from v4; the finalized ones are the
// same at both. kraft.version is finalized at 1 with a dynamic quorum
// (controller.quorum.bootstrap.servers and no voters), as Kafka formats it.
func TestApiVersionsFeaturesByVersion(t *testing.T) {
	e := newAdminEnv(t)
	req := kmsg.NewPtrApiVersionsRequest()
	req.ClientSoftwareName, req.ClientSoftwareVersion = "test", "1.0"
	v3 := e.call(t, req, 3).(*kmsg.ApiVersionsResponse)
	if len(v3.SupportedFeatures) != 1 || v3.SupportedFeatures[0].Name != "metadata.version" || v3.SupportedFeatures[0].MinVersion != 7 || v3.SupportedFeatures[0].MaxVersion != 33 {
		t.Fatalf("v3 supported features %+v", v3.SupportedFeatures)
	}
	v4 := e.call(t, req, 4).(*kmsg.ApiVersionsResponse)
	if len(v4.SupportedFeatures) != 7 {
		t.Fatalf("v4 supported features %+v", v4.SupportedFeatures)
	}
	if len(v3.FinalizedFeatures) != len(v4.FinalizedFeatures) || finalized(v3)["metadata.version"] != 33 {
		t.Fatalf("finalized v3 %v, v4 %v", finalized(v3), finalized(v4))
	}
	if _, ok := finalized(v4)["kraft.version"]; ok {
		t.Fatalf("kraft.version finalized with a static quorum: %v", finalized(v4))
	}
	e.d.Config.QuorumVoters = nil
	e.d.Config.QuorumBootstrapServers = []string{"localhost:9093"}
	if got := finalized(e.call(t, req, 4).(*kmsg.ApiVersionsResponse))["kraft.version"]; got != 1 {
		t.Fatalf("kraft.version %d with a dynamic quorum, want 1", got)
	}
}

// TestApiVersionsClusterCheck covers ApiVersions v5 (KIP-1242) as Kafka
// 4.4 answers it: the cluster id and node id the client believes it talks
// to either both set or both unset (else INVALID_REQUEST), and, set, naming
// this cluster and node (else REBOOTSTRAP_REQUIRED); on a controller
// listener only the first check applies. Errors carry no API keys.
func TestApiVersionsClusterCheck(t *testing.T) {
	e := newAdminEnv(t)
	cluster := e.d.Controller.Image().ClusterID
	node := e.d.Config.NodeID
	other := "another-cluster"
	for _, tc := range []struct {
		name       string
		cluster    *string
		node       int32
		controller bool
		want       int16
	}{
		{"bootstrap", nil, -1, false, 0},
		{"same", &cluster, node, false, 0},
		{"other-cluster", &other, node, false, kerr.RebootstrapRequired.Code},
		{"other-node", &cluster, node + 1, false, kerr.RebootstrapRequired.Code},
		{"cluster-without-node", &cluster, -1, false, kerr.InvalidRequest.Code},
		{"node-without-cluster", nil, node, false, kerr.InvalidRequest.Code},
		{"controller-other-cluster", &other, node, true, 0},
		{"controller-node-without-cluster", nil, node, true, kerr.InvalidRequest.Code},
	} {
		req := kmsg.NewPtrApiVersionsRequest()
		req.Version = 5
		req.ClientSoftwareName, req.ClientSoftwareVersion = "test", "1.0"
		req.ClusterID, req.NodeID = tc.cluster, tc.node
		// Through the wire encoding, as a client sends it.
		decoded := kmsg.NewPtrApiVersionsRequest()
		decoded.Version = 5
		if err := decoded.ReadFrom(req.AppendTo(nil)); err != nil {
			t.Fatal(err)
		}
		got, err := handleApiVersions(e.d, &Request{Header: wire.RequestHeader{APIKey: 18, APIVersion: 5}, Body: decoded, Controller: tc.controller})
		if err != nil {
			t.Fatal(err)
		}
		resp := got.(*kmsg.ApiVersionsResponse)
		if resp.ErrorCode != tc.want || (tc.want != 0) != (len(resp.ApiKeys) == 0) {
			t.Errorf("%s: error %d with %d keys, want %d", tc.name, resp.ErrorCode, len(resp.ApiKeys), tc.want)
		}
	}
	// Before SASL authentication only the pairing is checked, as Kafka's
	// SaslServerAuthenticator does.
	for _, tc := range []struct {
		cluster *string
		node    int32
		want    int16
	}{{&other, node, 0}, {nil, node, kerr.InvalidRequest.Code}} {
		req := kmsg.NewPtrApiVersionsRequest()
		req.Version = 5
		req.ClientSoftwareName, req.ClientSoftwareVersion = "test", "1.0"
		req.ClusterID, req.NodeID = tc.cluster, tc.node
		got, err := handleApiVersions(e.d, &Request{Header: wire.RequestHeader{APIKey: 18, APIVersion: 5}, Body: req, Authenticating: true})
		if err != nil {
			t.Fatal(err)
		}
		if code := got.(*kmsg.ApiVersionsResponse).ErrorCode; code != tc.want {
			t.Errorf("authenticating, cluster %v node %d: error %d, want %d", tc.cluster, tc.node, code, tc.want)
		}
	}
	// Below v5 the fields do not exist: nothing is checked.
	req := kmsg.NewPtrApiVersionsRequest()
	req.ClientSoftwareName, req.ClientSoftwareVersion = "test", "1.0"
	if resp := e.call(t, req, 4).(*kmsg.ApiVersionsResponse); resp.ErrorCode != 0 {
		t.Fatalf("v4: error %d", resp.ErrorCode)
	}
}
