package controller

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

func userEntity(name *string) []QuotaEntityPart {
	return []QuotaEntityPart{{Type: QuotaEntityUser, Name: name}}
}

// TestAlterClientQuotas follows Kafka's ClientQuotaControlManager: each
// entry is checked on its own, with Kafka's messages, and the entries that
// pass are committed.
func TestAlterClientQuotas(t *testing.T) {
	c := newTestController(t, 1)
	defer c.Close()
	alice := userEntity(ptr("alice"))
	got := c.AlterClientQuotas([]QuotaAlteration{
		{Entity: alice, Ops: []QuotaOp{{Key: QuotaProducerByteRate, Value: 1024}, {Key: QuotaRequestPercentage, Value: 12.5}}},
		{Entity: []QuotaEntityPart{{Type: QuotaEntityUser}, {Type: QuotaEntityClientID, Name: ptr("app")}}, Ops: []QuotaOp{{Key: QuotaConsumerByteRate, Value: 2048}}},
		{Entity: []QuotaEntityPart{{Type: QuotaEntityClientID}}, Ops: []QuotaOp{{Key: QuotaProducerByteRate, Value: 1.5}}},
		{Entity: []QuotaEntityPart{{Type: QuotaEntityClientID, Name: ptr("x")}}, Ops: []QuotaOp{{Key: "retention.ms", Value: 1}}},
		{Entity: []QuotaEntityPart{{Type: QuotaEntityClientID, Name: ptr("y")}}, Ops: []QuotaOp{{Key: QuotaProducerByteRate, Value: 0}}},
		{Entity: []QuotaEntityPart{{Type: "group", Name: ptr("g")}}, Ops: []QuotaOp{{Key: QuotaProducerByteRate, Value: 1}}},
		{Entity: []QuotaEntityPart{{Type: QuotaEntityUser, Name: ptr("")}}, Ops: []QuotaOp{{Key: QuotaProducerByteRate, Value: 1}}},
		{Entity: []QuotaEntityPart{{Type: QuotaEntityIP, Name: ptr("10.0.0.1")}, {Type: QuotaEntityUser, Name: ptr("u")}}, Ops: []QuotaOp{{Key: QuotaConnectionCreationRate, Value: 1}}},
		{Entity: []QuotaEntityPart{{Type: QuotaEntityIP, Name: ptr("10.0.0.1")}}, Ops: []QuotaOp{{Key: QuotaConnectionCreationRate, Value: 5}}},
		{Entity: []QuotaEntityPart{{Type: QuotaEntityIP, Name: ptr("10.0.0.2")}}, Ops: []QuotaOp{{Key: QuotaProducerByteRate, Value: 5}}},
		{Entity: alice, Ops: []QuotaOp{{Key: QuotaConsumerByteRate, Value: 5}}},
		{Entity: nil},
	}, false)
	inv := kerr.InvalidRequest.Code
	want := []int16{0, 0, inv, inv, inv, inv, inv, inv, 0, inv, inv, inv}
	msgs := map[int]string{
		2:  "producer_byte_rate cannot be a fractional value.",
		3:  "Invalid configuration key retention.ms",
		4:  "Quota producer_byte_rate must be greater than 0",
		5:  "Unhandled client quota entity type: group",
		6:  "Empty user not supported",
		7:  "Invalid quota entity combination, IP entity shouldnot be combined with User or ClientId",
		9:  "Invalid configuration key producer_byte_rate",
		10: "Ignoring duplicate entity ClientQuotaEntity(entries={user=alice})",
		11: "Invalid empty client quota entity",
	}
	if len(got) != len(want) {
		t.Fatalf("got %d results: %+v", len(got), got)
	}
	for i, r := range got {
		if r.ErrorCode != want[i] || r.Message != msgs[i] {
			t.Errorf("result %d: got %d %q, want %d %q", i, r.ErrorCode, r.Message, want[i], msgs[i])
		}
	}
	img := c.Image()
	aliceE := QuotaEntity{User: QuotaEntityName{Present: true, Name: "alice"}}
	wantQuotas := map[QuotaEntity]map[string]float64{
		aliceE: {QuotaProducerByteRate: 1024, QuotaRequestPercentage: 12.5},
		{User: QuotaEntityName{Present: true, Default: true}, ClientID: QuotaEntityName{Present: true, Name: "app"}}: {QuotaConsumerByteRate: 2048},
		{IP: QuotaEntityName{Present: true, Name: "10.0.0.1"}}:                                                       {QuotaConnectionCreationRate: 5},
	}
	if !reflect.DeepEqual(img.ClientQuotas, wantQuotas) {
		t.Fatalf("image quotas %+v", img.ClientQuotas)
	}

	// validate_only commits nothing; an unchanged value writes no record;
	// a removal of the last key removes the entity.
	off := img.Offset
	if r := c.AlterClientQuotas([]QuotaAlteration{{Entity: alice, Ops: []QuotaOp{{Key: QuotaProducerByteRate, Remove: true}}}}, true); r[0].ErrorCode != 0 {
		t.Fatal(r)
	}
	if r := c.AlterClientQuotas([]QuotaAlteration{{Entity: alice, Ops: []QuotaOp{{Key: QuotaProducerByteRate, Value: 1024}}}}, false); r[0].ErrorCode != 0 {
		t.Fatal(r)
	}
	if c.Image().Offset != off {
		t.Fatalf("offset moved from %d to %d", off, c.Image().Offset)
	}
	c.AlterClientQuotas([]QuotaAlteration{{Entity: alice, Ops: []QuotaOp{{Key: QuotaProducerByteRate, Remove: true}, {Key: QuotaRequestPercentage, Remove: true}}}}, false)
	if _, ok := c.Image().ClientQuotas[aliceE]; ok {
		t.Fatalf("alice still has quotas: %+v", c.Image().ClientQuotas)
	}
}

// TestClientQuotaSnapshot checks that quotas survive a snapshot and a log
// replay.
func TestClientQuotaSnapshot(t *testing.T) {
	log := NewMemLog()
	c := newTestController(t, 1, func(o *Options) { o.Log = log })
	c.AlterClientQuotas([]QuotaAlteration{
		{Entity: userEntity(nil), Ops: []QuotaOp{{Key: QuotaProducerByteRate, Value: 100}}},
		{Entity: []QuotaEntityPart{{Type: QuotaEntityUser, Name: ptr("u")}, {Type: QuotaEntityClientID}}, Ops: []QuotaOp{{Key: QuotaControllerMutationRate, Value: 0.5}}},
	}, false)
	img := c.Image()
	c.Close()
	var buf bytes.Buffer
	if err := WriteSnapshot(&buf, img); err != nil {
		t.Fatal(err)
	}
	back, err := ReadSnapshot(&buf, EmptyImage(img.ClusterID, img.ControllerID))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back.ClientQuotas, img.ClientQuotas) || len(img.ClientQuotas) != 2 {
		t.Fatalf("snapshot: got %+v want %+v", back.ClientQuotas, img.ClientQuotas)
	}
	c2, err := New(Options{NodeID: 1, ClusterID: "test-cluster", Log: log, Logger: quietLogger})
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if !reflect.DeepEqual(c2.Image().ClientQuotas, img.ClientQuotas) {
		t.Fatalf("replay: got %+v want %+v", c2.Image().ClientQuotas, img.ClientQuotas)
	}
	for _, bad := range []ClientQuotaRecord{{Key: "k"}, {Entity: userEntity(nil)}, {Entity: []QuotaEntityPart{{Type: "x"}}, Key: "k"}} {
		if _, err := Apply(img, bad); err == nil {
			t.Errorf("Apply(%+v) succeeded", bad)
		}
	}
}

// TestDescribeClientQuotas follows Kafka's ClientQuotasImage.describe.
func TestDescribeClientQuotas(t *testing.T) {
	c := newTestController(t, 1)
	defer c.Close()
	c.AlterClientQuotas([]QuotaAlteration{
		{Entity: userEntity(ptr("alice")), Ops: []QuotaOp{{Key: QuotaProducerByteRate, Value: 1}}},
		{Entity: userEntity(nil), Ops: []QuotaOp{{Key: QuotaProducerByteRate, Value: 2}}},
		{Entity: []QuotaEntityPart{{Type: QuotaEntityUser, Name: ptr("alice")}, {Type: QuotaEntityClientID, Name: ptr("app")}}, Ops: []QuotaOp{{Key: QuotaProducerByteRate, Value: 3}}},
		{Entity: []QuotaEntityPart{{Type: QuotaEntityClientID, Name: ptr("app")}}, Ops: []QuotaOp{{Key: QuotaProducerByteRate, Value: 4}}},
		{Entity: []QuotaEntityPart{{Type: QuotaEntityIP}}, Ops: []QuotaOp{{Key: QuotaConnectionCreationRate, Value: 5}}},
	}, false)
	img := c.Image()
	values := func(entries []QuotaEntry) []float64 {
		var out []float64
		for _, e := range entries {
			out = append(out, e.Values[QuotaProducerByteRate]+e.Values[QuotaConnectionCreationRate])
		}
		return out
	}
	for _, tc := range []struct {
		name   string
		comps  []QuotaFilterComponent
		strict bool
		want   []float64
		code   int16
	}{
		{name: "all", want: []float64{5, 4, 2, 1, 3}},
		{name: "strict none", strict: true, want: nil},
		{name: "user alice", comps: []QuotaFilterComponent{{EntityType: QuotaEntityUser, Match: ptr("alice")}}, want: []float64{1, 3}},
		{name: "user alice strict", comps: []QuotaFilterComponent{{EntityType: QuotaEntityUser, Match: ptr("alice")}}, strict: true, want: []float64{1}},
		{name: "default user", comps: []QuotaFilterComponent{{EntityType: QuotaEntityUser, MatchType: QuotaMatchDefault}}, want: []float64{2}},
		{name: "any client", comps: []QuotaFilterComponent{{EntityType: QuotaEntityClientID, MatchType: QuotaMatchSpecified}}, want: []float64{4, 3}},
		{name: "ip", comps: []QuotaFilterComponent{{EntityType: QuotaEntityIP, MatchType: QuotaMatchSpecified}}, want: []float64{5}},
		{name: "ip and user", comps: []QuotaFilterComponent{{EntityType: QuotaEntityIP, MatchType: QuotaMatchSpecified}, {EntityType: QuotaEntityUser, MatchType: QuotaMatchSpecified}}, code: kerr.InvalidRequest.Code},
		{name: "twice", comps: []QuotaFilterComponent{{EntityType: QuotaEntityUser, MatchType: QuotaMatchSpecified}, {EntityType: QuotaEntityUser, MatchType: QuotaMatchDefault}}, code: kerr.InvalidRequest.Code},
		{name: "exact null", comps: []QuotaFilterComponent{{EntityType: QuotaEntityUser}}, code: kerr.InvalidRequest.Code},
		{name: "unknown type", comps: []QuotaFilterComponent{{EntityType: "group", MatchType: QuotaMatchSpecified}}, code: kerr.UnsupportedVersion.Code},
		{name: "empty type", comps: []QuotaFilterComponent{{MatchType: QuotaMatchSpecified}}, code: kerr.InvalidRequest.Code},
		{name: "bad match type", comps: []QuotaFilterComponent{{EntityType: QuotaEntityUser, MatchType: 9}}, code: kerr.InvalidRequest.Code},
	} {
		entries, code, msg := DescribeClientQuotas(img, tc.comps, tc.strict)
		if code != tc.code || (code != 0) != (msg != "") {
			t.Errorf("%s: code %d %q, want %d", tc.name, code, msg, tc.code)
			continue
		}
		if got := values(entries); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: got %v want %v", tc.name, got, tc.want)
		}
	}
}
