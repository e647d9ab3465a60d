package handlers

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/broker/share"
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
	if fin["transaction.version"] != 2 || fin["group.version"] != 1 || fin["eligible.leader.replicas.version"] != 1 || fin["share.version"] != 2 || len(fin) != 4 {
		t.Fatalf("finalized features %v", fin)
	}
	supported := map[string][2]int16{}
	for _, f := range resp.SupportedFeatures {
		supported[f.Name] = [2]int16{f.MinVersion, f.MaxVersion}
	}
	if supported["transaction.version"] != [2]int16{0, 2} || supported["group.version"] != [2]int16{0, 1} || supported["eligible.leader.replicas.version"] != [2]int16{0, 1} || supported["share.version"] != [2]int16{0, 2} {
		t.Fatalf("supported features %v", supported)
	}
	// The answer encodes at v3+ with the features (tagged fields).
	resp.Version = 3
	var back kmsg.ApiVersionsResponse
	back.Version = 3
	if err := back.ReadFrom(resp.AppendTo(nil)); err != nil || finalized(&back)["transaction.version"] != 2 {
		t.Fatalf("round trip: %v %v", err, back.FinalizedFeatures)
	}

	e.d.Config.GroupCoordinatorRebalanceProtocols = []string{"classic"}
	resp = ApiVersionsResponse(e.d)
	keys = apiKeys(resp)
	for _, k := range []kmsg.Key{kmsg.ConsumerGroupHeartbeat, kmsg.ConsumerGroupDescribe} {
		if _, ok := keys[int16(k)]; ok {
			t.Fatalf("key %d advertised with the consumer protocol off", k)
		}
	}
	if fin := finalized(resp); fin["group.version"] != 0 || fin["transaction.version"] != 2 {
		t.Fatalf("finalized with classic only: %v", fin)
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
