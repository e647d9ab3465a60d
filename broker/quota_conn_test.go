package broker

import (
	"log/slog"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/broker/quota"
	"github.com/samsa-broker/samsa/config"
	"github.com/samsa-broker/samsa/wire"
)

func setClientQuota(t *testing.T, c *rawClient, clientID, key string, value float64) {
	t.Helper()
	if code := alterClientQuota(t, c, clientID, key, value); code != 0 {
		t.Fatalf("AlterClientQuotas: error %d", code)
	}
}

// alterClientQuota sets one quota of a client id and returns the entry's
// error code.
func alterClientQuota(t *testing.T, c *rawClient, clientID, key string, value float64) int16 {
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
	r := resp.(*kmsg.AlterClientQuotasResponse)
	if len(r.Entries) != 1 {
		t.Fatalf("AlterClientQuotas: %+v", r.Entries)
	}
	return r.Entries[0].ErrorCode
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
	// (The mute began before the response reached us: allow for its
	// trip on a loaded machine.)
	if waited := time.Since(sent); waited < time.Duration(r.ThrottleMillis-500)*time.Millisecond {
		t.Errorf("next request answered after %v, throttle %d ms", waited, r.ThrottleMillis)
	}

	// Permissive (v5): created, and throttled afterwards (30 partitions
	// are more than a full bucket).
	resp, err = c.roundTrip(createTopicsReq(map[string]int32{"mq-d": 30}, "mq-d"), 5)
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

// TestClientQuotasForwarded: AlterClientQuotas sent to a node that is not
// the active controller is forwarded, the quota reaches every node's
// image and DescribeClientQuotas, and a CreateTopics through that node is
// held by the mutation quota there (its refused topic put back into the
// forwarded response).
func TestClientQuotasForwarded(t *testing.T) {
	c := startTestCluster(t, 2)
	leader := c.activeController(20 * time.Second)
	follower := 1 - leader
	raw := dialRaw(t, c.addr(follower))
	// NOT_CONTROLLER (which clients retry) until the follower reaches
	// the active controller.
	if !poll(20*time.Second, func() bool {
		return alterClientQuota(t, raw, "raw", "controller_mutation_rate", 1) != kerr.NotController.Code
	}) {
		t.Fatal("AlterClientQuotas answered NOT_CONTROLLER for 20 s")
	}
	for i := range c.nodes {
		if !poll(10*time.Second, func() bool { return len(c.nodes[i].ctrl.Image().ClientQuotas) == 1 }) {
			t.Fatalf("node %d never saw the quota", i+1)
		}
		resp, err := dialRaw(t, c.addr(i)).roundTrip(kmsg.NewPtrDescribeClientQuotasRequest(), 1)
		if err != nil {
			t.Fatal(err)
		}
		r := resp.(*kmsg.DescribeClientQuotasResponse)
		if r.ErrorCode != 0 || len(r.Entries) != 1 || len(r.Entries[0].Values) != 1 || r.Entries[0].Values[0].Key != "controller_mutation_rate" || r.Entries[0].Values[0].Value != 1 {
			t.Fatalf("node %d describes %+v", i+1, r)
		}
	}
	// 11 tokens: 12 partitions take the bucket to -1, the next topic is
	// refused.
	resp, err := raw.roundTrip(createTopicsReq(map[string]int32{"fq-a": 12, "fq-b": 1}, "fq-a", "fq-b"), 7)
	if err != nil {
		t.Fatal(err)
	}
	r := resp.(*kmsg.CreateTopicsResponse)
	if len(r.Topics) != 2 || r.Topics[0].Topic != "fq-a" || r.Topics[0].ErrorCode != 0 ||
		r.Topics[1].Topic != "fq-b" || r.Topics[1].ErrorCode != kerr.ThrottlingQuotaExceeded.Code || r.ThrottleMillis < 900 {
		t.Fatalf("forwarded CreateTopics: %+v throttle %d", r.Topics, r.ThrottleMillis)
	}
}

// TestQuotaWindowConfig: quota.window.* and controller.quota.window.*
// reach the quota manager's options, with Kafka's defaults.
func TestQuotaWindowConfig(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want quota.Options
	}{
		{nil, quota.Options{Window: time.Second, Samples: 11, MutationWindow: time.Second, MutationSamples: 11}},
		{[]string{"--override", "quota.window.num=5", "--override", "quota.window.size.seconds=2",
			"--override", "controller.quota.window.num=3", "--override", "controller.quota.window.size.seconds=4"},
			quota.Options{Window: 2 * time.Second, Samples: 5, MutationWindow: 4 * time.Second, MutationSamples: 3}},
	} {
		cfg, err := config.Load(tc.args, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := serverOptions(cfg, nil, slog.New(slog.DiscardHandler)).Quotas; got != tc.want {
			t.Errorf("%v: %+v, want %+v", tc.args, got, tc.want)
		}
	}
	if _, err := config.Load([]string{"--override", "quota.window.num=0"}, nil); err == nil {
		t.Error("quota.window.num=0 accepted")
	}
}

// TestRequestPercentageQuota: a request quota far below what the
// client's requests take throttles it, at most one window (1 s) per
// response, on the APIs the quota counts, never on ApiVersions.
//
// The throttles show in the request metrics and the per-client quota
// metrics (kafka_server_request_throttle_time).
func TestRequestPercentageQuota(t *testing.T) {
	n := startTestNode(t, t.TempDir(), "samsa.http.listener=127.0.0.1:0")
	defer closeTestNode(t, n)
	c := dialRaw(t, n.Addrs()[0].String())
	setClientQuota(t, c, "raw", "request_percentage", 0.0001)
	throttled := false
	deadline := time.Now().Add(30 * time.Second)
	for !throttled && time.Now().Before(deadline) {
		resp, err := c.roundTrip(kmsg.NewPtrMetadataRequest(), 12)
		if err != nil {
			t.Fatal(err)
		}
		ms := resp.(*kmsg.MetadataResponse).ThrottleMillis
		if ms > 1000 {
			t.Fatalf("request quota throttle %d ms, more than one window", ms)
		}
		throttled = ms > 0
	}
	if !throttled {
		t.Fatal("Metadata never throttled under a request_percentage of 0.0001")
	}
	resp, err := c.roundTrip(kmsg.NewPtrApiVersionsRequest(), 3)
	if err != nil {
		t.Fatal(err)
	}
	if ms := resp.(*kmsg.ApiVersionsResponse).ThrottleMillis; ms != 0 {
		t.Errorf("ApiVersions throttled %d ms", ms)
	}
	m := scrapeMetrics(t, "http://"+n.HTTPAddr().String())
	if v, ok := m.sum("kafka_server_request_throttle_time", "user", "", "client_id", "raw"); !ok || v <= 0 {
		t.Errorf("kafka_server_request_throttle_time{client_id=raw} = %v (found %v)", v, ok)
	}
	if v, ok := m.sum("kafka_server_request_request_time", "client_id", "raw"); !ok || v <= 0 {
		t.Errorf("kafka_server_request_request_time{client_id=raw} = %v (found %v)", v, ok)
	}
	if _, ok := m.sum("kafka_network_requestmetrics_throttletimems", "request", "Metadata"); !ok {
		t.Error("no kafka_network_requestmetrics_throttletimems of Metadata")
	}
}

// TestConsumerFetchCap: a consumer fetch asks for at most what its quota
// allows over ten windows (Kafka's maxValueInQuotaWindow), so a fetch of
// a topic holding more comes back no larger than that, and the next one
// carries a throttle.
func TestConsumerFetchCap(t *testing.T) {
	n := startTestNode(t, t.TempDir())
	defer closeTestNode(t, n)
	c := dialRaw(t, n.Addrs()[0].String())
	ct := createTopicsReq(map[string]int32{"capped": 1}, "capped")
	if resp, err := c.roundTrip(ct, 7); err != nil || resp.(*kmsg.CreateTopicsResponse).Topics[0].ErrorCode != 0 {
		t.Fatalf("create: %v %+v", err, resp)
	}
	// 20 batches of 10 000 bytes.
	for i := range 20 {
		req := kmsg.NewPtrProduceRequest()
		req.Acks, req.TimeoutMillis = 1, 10000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = "capped"
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Records = oneRecordBatch(t, 10_000)
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := c.roundTrip(req, 9)
		if err != nil || resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode != 0 {
			t.Fatalf("produce %d: %v %+v", i, err, resp)
		}
	}
	setClientQuota(t, c, "raw", "consumer_byte_rate", 5_000) // 50 000 bytes over ten windows
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID, req.MaxBytes, req.MaxWaitMillis = -1, 50<<20, 100
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = "capped"
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.PartitionMaxBytes, fp.LogStartOffset = 50<<20, -1
	ft.Partitions = append(ft.Partitions, fp)
	req.Topics = append(req.Topics, ft)
	resp, err := c.roundTrip(req, 11)
	if err != nil {
		t.Fatal(err)
	}
	r := resp.(*kmsg.FetchResponse)
	got := len(r.Topics[0].Partitions[0].RecordBatches)
	if got == 0 || got > 50_000 {
		t.Fatalf("fetched %d bytes, want 1..50000", got)
	}
	// The credit of a new client is the same ten windows: the next fetch
	// goes over and is throttled.
	batches := 0
	wire.SplitBatches(r.Topics[0].Partitions[0].RecordBatches, func([]byte, wire.BatchHeader) error { batches++; return nil })
	req.Topics[0].Partitions[0].FetchOffset = int64(batches)
	if resp, err = c.roundTrip(req, 11); err != nil {
		t.Fatal(err)
	}
	if r = resp.(*kmsg.FetchResponse); r.ThrottleMillis <= 0 || len(r.Topics[0].Partitions[0].RecordBatches) == 0 {
		t.Errorf("second fetch: %d bytes, throttle %d ms; want data and a throttle", len(r.Topics[0].Partitions[0].RecordBatches), r.ThrottleMillis)
	}
}

// oneRecordBatch is a batch of one record of size bytes.
func oneRecordBatch(t *testing.T, size int) []byte {
	t.Helper()
	b, err := wire.EncodeBatch(wire.BatchSpec{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1, BaseTimestamp: time.Now().UnixMilli(),
		Records: []wire.Record{{Value: make([]byte, size)}}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}
