package broker

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func setClientQuota(t *testing.T, c *rawClient, clientID, key string, value float64) {
	t.Helper()
	req := kmsg.NewPtrAlterClientQuotasRequest()
	e := kmsg.NewAlterClientQuotasRequestEntry()
	ent := kmsg.NewAlterClientQuotasRequestEntryEntity()
	ent.Type, ent.Name = "client-id", &clientID
	op := kmsg.NewAlterClientQuotasRequestEntryOp()
	op.Key, op.Value = key, value
	e.Entity, e.Ops = append(e.Entity, ent), append(e.Ops, op)
	req.Entries = append(req.Entries, e)
	resp, err := c.roundTrip(req, 1)
	if err != nil {
		t.Fatal(err)
	}
	if r := resp.(*kmsg.AlterClientQuotasResponse); len(r.Entries) != 1 || r.Entries[0].ErrorCode != 0 {
		t.Fatalf("AlterClientQuotas: %+v", r.Entries)
	}
}

func createTopicsReq(partitions map[string]int32, order ...string) *kmsg.CreateTopicsRequest {
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 30000
	for _, name := range order {
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, partitions[name], 1
		req.Topics = append(req.Topics, rt)
	}
	return req
}

// TestControllerMutationQuota: with controller_mutation_rate 2 a client
// has 22 tokens; CreateTopics v7 (strict) creates topics while the bucket
// is not below zero and refuses the next with THROTTLING_QUOTA_EXCEEDED,
// carrying the throttle, and the connection runs nothing more until the
// throttle has passed; v5 (permissive) creates and only throttles.
func TestControllerMutationQuota(t *testing.T) {
	n := startTestNode(t, t.TempDir())
	defer closeTestNode(t, n)
	c := dialRaw(t, n.Addrs()[0].String())
	setClientQuota(t, c, "raw", "controller_mutation_rate", 2)

	// 20 + 5 partitions: the second topic takes the bucket to -3, the
	// third is refused, and the client must wait 3 / 2 = 1.5 s.
	req := createTopicsReq(map[string]int32{"mq-a": 20, "mq-b": 5, "mq-c": 1}, "mq-a", "mq-b", "mq-c")
	resp, err := c.roundTrip(req, 7)
	if err != nil {
		t.Fatal(err)
	}
	sent := time.Now()
	r := resp.(*kmsg.CreateTopicsResponse)
	if len(r.Topics) != 3 {
		t.Fatalf("topics %+v", r.Topics)
	}
	want := []struct {
		name string
		code int16
	}{{"mq-a", 0}, {"mq-b", 0}, {"mq-c", kerr.ThrottlingQuotaExceeded.Code}}
	for i, w := range want {
		if r.Topics[i].Topic != w.name || r.Topics[i].ErrorCode != w.code {
			t.Errorf("topic %d: %s code %d, want %s code %d", i, r.Topics[i].Topic, r.Topics[i].ErrorCode, w.name, w.code)
		}
	}
	if r.ThrottleMillis < 1400 || r.ThrottleMillis > 1500 {
		t.Errorf("throttle %d ms, want about 1500", r.ThrottleMillis)
	}
	// Muted: the next request is answered only after the throttle.
	if _, err := c.roundTrip(kmsg.NewPtrApiVersionsRequest(), 3); err != nil {
		t.Fatal(err)
	}
	if waited := time.Since(sent); waited < time.Duration(r.ThrottleMillis-100)*time.Millisecond {
		t.Errorf("next request answered after %v, throttle %d ms", waited, r.ThrottleMillis)
	}

	// Permissive (v5): created, and throttled afterwards.
	resp, err = c.roundTrip(createTopicsReq(map[string]int32{"mq-d": 4}, "mq-d"), 5)
	if err != nil {
		t.Fatal(err)
	}
	r = resp.(*kmsg.CreateTopicsResponse)
	if len(r.Topics) != 1 || r.Topics[0].ErrorCode != 0 || r.ThrottleMillis <= 0 {
		t.Errorf("v5: %+v throttle %d", r.Topics, r.ThrottleMillis)
	}
	if img := n.ctrl.Image(); img.Topics["mq-c"] != nil || img.Topics["mq-d"] == nil || img.Topics["mq-a"] == nil {
		t.Errorf("topics in the image: c %v, d %v, a %v", img.Topics["mq-c"] != nil, img.Topics["mq-d"] != nil, img.Topics["mq-a"] != nil)
	}
}
