package handlers

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
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
	resp := ApiVersionsResponse(e.d)
	keys := apiKeys(resp)
	if len(keys) != len(Table()) {
		t.Fatalf("%d keys advertised, table has %d", len(keys), len(Table()))
	}
	if k := keys[int16(kmsg.EndTxn)]; k.MaxVersion != 5 {
		t.Fatalf("EndTxn max %d, want 5 (transaction version 2)", k.MaxVersion)
	}
	fin := finalized(resp)
	if fin["transaction.version"] != 2 || fin["group.version"] != 1 || len(fin) != 2 {
		t.Fatalf("finalized features %v", fin)
	}
	supported := map[string][2]int16{}
	for _, f := range resp.SupportedFeatures {
		supported[f.Name] = [2]int16{f.MinVersion, f.MaxVersion}
	}
	if supported["transaction.version"] != [2]int16{0, 2} || supported["group.version"] != [2]int16{0, 1} {
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
	if len(ApiVersionsResponse(nil).ApiKeys) != len(Table()) {
		t.Fatal("nil deps")
	}
}
