package handlers

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/broker/share"
	"github.com/samsa-broker/samsa/controller"
	sharestate "github.com/samsa-broker/samsa/coordinator/share"
	"github.com/samsa-broker/samsa/coordinator/share/sharetest"
	"github.com/samsa-broker/samsa/storage"
	"github.com/samsa-broker/samsa/wire"
)

// shareEnv is a node with topic "q" (one partition, its log created) and
// a share manager over a sharetest.MemPersister, the share-partition of group "g"
// initialized (start offset from share.auto.offset.reset=earliest).
type shareEnv struct {
	*adminEnv
	id [16]byte
	p  *sharetest.MemPersister
}

func newShareEnv(t *testing.T) *shareEnv {
	e := &shareEnv{adminEnv: newAdminEnv(t), p: sharetest.NewMemPersister()}
	e.id = e.createTopic(t, "q", 1, nil)
	if _, err := e.d.Logs.CreateLog(storage.TopicPartition{Topic: "q"}, e.id, storage.DefaultLogConfig()); err != nil {
		t.Fatal(err)
	}
	e.p.Initialize(context.Background(), sharestate.Key{Group: "g", TopicID: e.id}, 0, -1)
	e.newManager(t)
	return e
}

// newManager gives the node a fresh share manager (as after a change of
// leader: nothing in memory, the state in the persister).
func (e *shareEnv) newManager(t *testing.T) {
	m := share.NewManager(share.Options{Persister: e.p, GroupConfig: func(string) map[string]string {
		return map[string]string{"share.auto.offset.reset": "earliest"}
	}})
	t.Cleanup(m.Close)
	e.d.Shares = m
}

func (e *shareEnv) produce(t *testing.T, n int) {
	t.Helper()
	spec := wire.BatchSpec{ProducerID: -1, BaseSequence: -1, BaseTimestamp: time.Now().UnixMilli()}
	for range n {
		spec.Records = append(spec.Records, wire.Record{Value: []byte("v")})
	}
	batch, err := wire.EncodeBatch(spec)
	if err != nil {
		t.Fatal(err)
	}
	req := kmsg.NewPtrProduceRequest()
	req.Acks = -1
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = "q"
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = batch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	if code := e.call(t, req, 9).(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode; code != 0 {
		t.Fatalf("produce: %d", code)
	}
}

type ack struct {
	first, last int64
	typ         int8
}

// fetch sends a ShareFetch of partition 0 of q for member at epoch.
func (e *shareEnv) fetch(t *testing.T, v int16, member string, epoch int32, maxWait int32, acks ...ack) *kmsg.ShareFetchResponse {
	t.Helper()
	req := kmsg.NewPtrShareFetchRequest()
	req.GroupID, req.MemberID = strp("g"), strp(member)
	req.ShareSessionEpoch, req.MaxWaitMillis, req.MinBytes, req.MaxBytes, req.MaxRecords = epoch, maxWait, 1, 1<<20, 500
	rt := kmsg.NewShareFetchRequestTopic()
	rt.TopicID = e.id
	rp := kmsg.NewShareFetchRequestTopicPartition()
	for _, a := range acks {
		rp.AcknowledgementBatches = append(rp.AcknowledgementBatches, kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch{FirstOffset: a.first, LastOffset: a.last, AcknowledgeTypes: []int8{a.typ}})
	}
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return e.call(t, req, v).(*kmsg.ShareFetchResponse)
}

func acquired(resp *kmsg.ShareFetchResponse) []kmsg.ShareFetchResponseTopicPartitionAcquiredRecord {
	var out []kmsg.ShareFetchResponseTopicPartitionAcquiredRecord
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			out = append(out, p.AcquiredRecords...)
		}
	}
	return out
}

func acqRec(first, last int64, count int16) kmsg.ShareFetchResponseTopicPartitionAcquiredRecord {
	return kmsg.ShareFetchResponseTopicPartitionAcquiredRecord{FirstOffset: first, LastOffset: last, DeliveryCount: count}
}

func TestShareFetchAcknowledge(t *testing.T) {
	e := newShareEnv(t)
	key := sharestate.Key{Group: "g", TopicID: e.id}
	e.produce(t, 3) // 0-2
	e.produce(t, 3) // 3-5

	resp := e.fetch(t, 2, "a", 0, 0)
	if resp.ErrorCode != 0 || resp.AcquisitionLockTimeoutMillis != 30000 || resp.Topics[0].Partitions[0].CurrentLeader.LeaderID != 0 {
		t.Fatalf("fetch: error %d lock timeout %d", resp.ErrorCode, resp.AcquisitionLockTimeoutMillis)
	}
	if got := acquired(resp); !reflect.DeepEqual(got, []kmsg.ShareFetchResponseTopicPartitionAcquiredRecord{acqRec(0, 5, 1)}) {
		t.Fatalf("acquired %+v in %+v", got, resp)
	}
	if n := len(resp.Topics[0].Partitions[0].Records); n == 0 {
		t.Fatal("no records")
	}
	// A stale epoch and an unknown session.
	if code := e.fetch(t, 2, "a", 5, 0).ErrorCode; code != kerr.InvalidShareSessionEpoch.Code {
		t.Fatalf("epoch 5: %d", code)
	}
	if code := e.fetch(t, 2, "nobody", 1, 0).ErrorCode; code != kerr.ShareSessionNotFound.Code {
		t.Fatalf("no session: %d", code)
	}
	// Piggybacked acknowledgements (accept 0-2, release 3-5), written
	// before the answer; the released records come back in the same
	// fetch, second delivery.
	resp = e.fetch(t, 2, "a", 1, 0, ack{0, 2, share.AckAccept}, ack{3, 5, share.AckRelease})
	p := resp.Topics[0].Partitions[0]
	if resp.ErrorCode != 0 || p.AcknowledgeErrorCode != 0 || p.ErrorCode != 0 {
		t.Fatalf("fetch with acks: %d %d %d", resp.ErrorCode, p.AcknowledgeErrorCode, p.ErrorCode)
	}
	if got := acquired(resp); !reflect.DeepEqual(got, []kmsg.ShareFetchResponseTopicPartitionAcquiredRecord{acqRec(3, 5, 2)}) {
		t.Fatalf("acquired %+v", got)
	}
	if s := e.p.State(key).StartOffset; s != 3 {
		t.Fatalf("written start offset %d, want 3", s)
	}
	// ShareAcknowledge: epoch 0 is refused; a record already accepted is
	// INVALID_RECORD_STATE; then accept 3-5.
	sa := func(epoch int32, first, last int64, typ int8) *kmsg.ShareAcknowledgeResponse {
		req := kmsg.NewPtrShareAcknowledgeRequest()
		req.GroupID, req.MemberID, req.ShareSessionEpoch = strp("g"), strp("a"), epoch
		rt := kmsg.NewShareAcknowledgeRequestTopic()
		rt.TopicID = e.id
		rp := kmsg.NewShareAcknowledgeRequestTopicPartition()
		rp.AcknowledgementBatches = append(rp.AcknowledgementBatches, kmsg.ShareAcknowledgeRequestTopicPartitionAcknowledgementBatch{FirstOffset: first, LastOffset: last, AcknowledgeTypes: []int8{typ}})
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		return e.call(t, req, 2).(*kmsg.ShareAcknowledgeResponse)
	}
	if code := sa(0, 3, 5, share.AckAccept).ErrorCode; code != kerr.InvalidShareSessionEpoch.Code {
		t.Fatalf("ack epoch 0: %d", code)
	}
	// As Kafka 4.4: offsets below the start offset are done, their ack
	// ignored; one past the acquired records is INVALID_REQUEST with
	// Kafka's message; a wrong epoch has no lock timeout.
	if r := sa(2, 0, 0, share.AckAccept); r.ErrorCode != 0 || r.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("ack of an accepted record: %+v", r)
	}
	if r := sa(3, 50, 50, share.AckAccept); r.ErrorCode != 0 || r.Topics[0].Partitions[0].ErrorCode != kerr.InvalidRequest.Code ||
		deref(r.Topics[0].Partitions[0].ErrorMessage) != "Batch record not found. The first offset in request is past acquired records." {
		t.Fatalf("ack past the acquired records: %+v", r)
	}
	if r := sa(9, 3, 5, share.AckAccept); r.ErrorCode != kerr.InvalidShareSessionEpoch.Code || r.AcquisitionLockTimeoutMillis != 0 {
		t.Fatalf("wrong epoch: %+v", r)
	}
	if r := sa(4, 3, 5, share.AckAccept); r.ErrorCode != 0 || r.Topics[0].Partitions[0].ErrorCode != 0 || r.AcquisitionLockTimeoutMillis != 30000 {
		t.Fatalf("ack 3-5: %+v", r)
	}
	if s := e.p.State(key).StartOffset; s != 6 {
		t.Fatalf("written start offset %d, want 6", s)
	}

	// Long poll: a fetch waits until records arrive (whichever comes
	// first, the fetch or the produce, it gets them).
	done := make(chan *kmsg.ShareFetchResponse, 1)
	go func() { done <- e.fetch(t, 1, "a", 5, 60_000) }()
	e.produce(t, 2) // 6-7
	select {
	case resp = <-done:
	case <-time.After(50 * time.Second):
		t.Fatal("the long poll did not return after a produce")
	}
	if got := acquired(resp); !reflect.DeepEqual(got, []kmsg.ShareFetchResponseTopicPartitionAcquiredRecord{acqRec(6, 7, 1)}) {
		t.Fatalf("long poll acquired %+v", got)
	}

	// Closing the session (epoch -1) releases a's records: b gets them.
	if resp := e.fetch(t, 2, "a", share.FinalEpoch, 0); resp.ErrorCode != 0 {
		t.Fatalf("final fetch: %d", resp.ErrorCode)
	}
	if code := e.fetch(t, 2, "a", 6, 0).ErrorCode; code != kerr.ShareSessionNotFound.Code {
		t.Fatalf("after close: %d", code)
	}
	if got := acquired(e.fetch(t, 2, "b", 0, 0)); !reflect.DeepEqual(got, []kmsg.ShareFetchResponseTopicPartitionAcquiredRecord{acqRec(6, 7, 2)}) {
		t.Fatalf("b acquired %+v", got)
	}
}

// TestShareFetchLeaderChange: the state one manager wrote is what a fresh
// one (a new leader) serves: acknowledged records are not delivered again,
// acquired ones are.
func TestShareFetchLeaderChange(t *testing.T) {
	e := newShareEnv(t)
	e.produce(t, 4) // 0-3
	e.fetch(t, 2, "a", 0, 0)
	if p := e.fetch(t, 2, "a", 1, 0, ack{0, 1, share.AckAccept}).Topics[0].Partitions[0]; p.AcknowledgeErrorCode != 0 {
		t.Fatalf("ack: %d", p.AcknowledgeErrorCode)
	}
	e.newManager(t)
	// The session is gone with the old manager.
	if code := e.fetch(t, 2, "a", 2, 0).ErrorCode; code != kerr.ShareSessionNotFound.Code {
		t.Fatalf("old session: %d", code)
	}
	// 2-3, acquired at their first delivery, were written as available
	// at the count before it (0: not written, as Kafka 4.4 writes no
	// state at an acquisition): the new leader delivers them at count 1.
	if got := acquired(e.fetch(t, 2, "b", 0, 0)); !reflect.DeepEqual(got, []kmsg.ShareFetchResponseTopicPartitionAcquiredRecord{acqRec(2, 3, 1)}) {
		t.Fatalf("new leader: b acquired %+v, want 2-3 (first delivery: the lost acquisition is not counted)", got)
	}
}

func TestShareFetchErrors(t *testing.T) {
	e := newShareEnv(t)
	// Unknown topic id: a partition error.
	req := kmsg.NewPtrShareFetchRequest()
	req.GroupID, req.MemberID, req.MaxBytes = strp("g"), strp("a"), 1<<20
	rt := kmsg.NewShareFetchRequestTopic()
	rt.TopicID = [16]byte{9, 9}
	rt.Partitions = []kmsg.ShareFetchRequestTopicPartition{{Partition: 0}}
	req.Topics = append(req.Topics, rt)
	resp := e.call(t, req, 1).(*kmsg.ShareFetchResponse)
	if resp.ErrorCode != 0 || len(resp.Topics) != 1 || resp.Topics[0].Partitions[0].ErrorCode != kerr.UnknownTopicID.Code ||
		resp.Topics[0].Partitions[0].CurrentLeader.LeaderID != 0 || resp.Topics[0].Partitions[0].CurrentLeader.LeaderEpoch != 0 {
		t.Fatalf("unknown topic id: %+v (CurrentLeader {0,0} as Kafka 4.4)", resp)
	}
	// No member id.
	req.MemberID = strp("")
	req.ShareSessionEpoch = 0
	if code := e.call(t, req, 2).(*kmsg.ShareFetchResponse).ErrorCode; code != kerr.InvalidRequest.Code {
		t.Fatalf("empty member: %d", code)
	}
	// Acknowledgements in a session's first fetch.
	if code := e.fetch(t, 2, "c", 0, 0, ack{0, 0, share.AckAccept}).ErrorCode; code != kerr.InvalidRequest.Code {
		t.Fatalf("acks at epoch 0: %d", code)
	}
	// Without a share manager.
	e.d.Shares = nil
	if code := e.fetch(t, 2, "c", 0, 0).ErrorCode; code != kerr.UnsupportedVersion.Code {
		t.Fatalf("no manager: %d", code)
	}
}

// TestShareAPIsAdvertisedWithManager: ShareFetch and ShareAcknowledge are
// in ApiVersions only when the node has a share manager.
func TestShareAPIsAdvertisedWithManager(t *testing.T) {
	e := newShareEnv(t)
	has := func() (fetch, ack bool) {
		for _, k := range ApiVersionsResponse(e.d).ApiKeys {
			fetch = fetch || (k.ApiKey == int16(kmsg.ShareFetch) && k.MinVersion == 1 && k.MaxVersion == 2)
			ack = ack || (k.ApiKey == int16(kmsg.ShareAcknowledge) && k.MinVersion == 1 && k.MaxVersion == 2)
		}
		return fetch, ack
	}
	if f, a := has(); !f || !a {
		t.Fatalf("with a manager: ShareFetch %v ShareAcknowledge %v", f, a)
	}
	e.d.Shares = nil
	if f, a := has(); f || a {
		t.Fatalf("without a manager: ShareFetch %v ShareAcknowledge %v", f, a)
	}
}

// TestShareFetchResponseShape: as Kafka 4.4, a session's first fetch names
// its partitions even without records (Records and AcquiredRecords
// null), a later fetch with nothing to say has Topics null, and a
// top-level error has no lock timeout.
func TestShareFetchResponseShape(t *testing.T) {
	e := newShareEnv(t)
	resp := e.fetch(t, 2, "a", 0, 0)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("first fetch: %+v", resp)
	}
	if p := resp.Topics[0].Partitions[0]; len(p.Records) != 0 || p.AcquiredRecords != nil || p.ErrorCode != 0 {
		t.Fatalf("first fetch partition: %+v", p)
	}
	// Regression: Records went out null, which the Java client refuses
	// ("non-nullable field records was serialized as null"); Kafka
	// sends an empty record set. Called without the wire round trip,
	// which decodes both as null.
	req0 := kmsg.NewPtrShareFetchRequest()
	req0.Version, req0.GroupID, req0.MemberID, req0.MaxBytes = 2, strp("g"), strp("z"), 1<<20
	req0.Topics = []kmsg.ShareFetchRequestTopic{{TopicID: e.id, Partitions: []kmsg.ShareFetchRequestTopicPartition{{Partition: 0}}}}
	raw, err := handleShareFetch(e.d, &Request{Header: wire.RequestHeader{APIKey: 78, APIVersion: 2}, Body: req0})
	if err != nil {
		t.Fatal(err)
	}
	if p := raw.(*kmsg.ShareFetchResponse).Topics[0].Partitions[0]; p.Records == nil {
		t.Fatal("Records is null on the wire")
	}
	req := kmsg.NewPtrShareFetchRequest()
	req.GroupID, req.MemberID, req.ShareSessionEpoch, req.MaxBytes = strp("g"), strp("a"), 1, 1<<20
	resp = e.call(t, req, 2).(*kmsg.ShareFetchResponse)
	if resp.ErrorCode != 0 || resp.Topics != nil || resp.AcquisitionLockTimeoutMillis != 30000 {
		t.Fatalf("incremental fetch with nothing: %+v", resp)
	}
	e.produce(t, 2)
	resp = e.call(t, req, 2).(*kmsg.ShareFetchResponse) // epoch 1 again: refused
	if resp.ErrorCode != kerr.InvalidShareSessionEpoch.Code || resp.AcquisitionLockTimeoutMillis != 0 || resp.Topics != nil {
		t.Fatalf("wrong epoch: %+v", resp)
	}
	req.ShareSessionEpoch = 2
	resp = e.call(t, req, 2).(*kmsg.ShareFetchResponse)
	if got := acquired(resp); !reflect.DeepEqual(got, []kmsg.ShareFetchResponseTopicPartitionAcquiredRecord{acqRec(0, 1, 1)}) {
		t.Fatalf("incremental fetch of the session's partition: %+v", resp)
	}
}

// TestShareNotLeader: a partition led by another broker is
// NOT_LEADER_OR_FOLLOWER with its leader in CurrentLeader and the
// leader's endpoint in NodeEndpoints, in ShareFetch and ShareAcknowledge.
func TestShareNotLeader(t *testing.T) {
	e := newShareEnv(t)
	if err := e.d.Controller.RegisterBroker(controller.Broker{ID: 2, Host: "other", Port: 9093}); err != nil {
		t.Fatal(err)
	}
	res := e.d.Controller.CreateTopics([]controller.CreateTopic{{Name: "elsewhere", NumPartitions: -1, ReplicationFactor: -1, Assignment: map[int32][]int32{0: {2}}}}, false)
	if len(res) != 1 || res[0].ErrorCode != 0 {
		t.Fatalf("create: %+v", res)
	}
	id := res[0].ID
	req := kmsg.NewPtrShareFetchRequest()
	req.GroupID, req.MemberID, req.MaxBytes = strp("g"), strp("a"), 1<<20
	req.Topics = []kmsg.ShareFetchRequestTopic{{TopicID: id, Partitions: []kmsg.ShareFetchRequestTopicPartition{{Partition: 0}}}}
	resp := e.call(t, req, 2).(*kmsg.ShareFetchResponse)
	p := resp.Topics[0].Partitions[0]
	if p.ErrorCode != kerr.NotLeaderForPartition.Code || p.CurrentLeader.LeaderID != 2 || len(resp.NodeEndpoints) != 1 ||
		resp.NodeEndpoints[0].NodeID != 2 || resp.NodeEndpoints[0].Host != "other" || resp.NodeEndpoints[0].Port != 9093 {
		t.Fatalf("share fetch: %+v", resp)
	}
	ack := kmsg.NewPtrShareAcknowledgeRequest()
	ack.GroupID, ack.MemberID, ack.ShareSessionEpoch = strp("g"), strp("a"), 1
	ack.Topics = []kmsg.ShareAcknowledgeRequestTopic{{TopicID: id, Partitions: []kmsg.ShareAcknowledgeRequestTopicPartition{{Partition: 0,
		AcknowledgementBatches: []kmsg.ShareAcknowledgeRequestTopicPartitionAcknowledgementBatch{{FirstOffset: 0, LastOffset: 0, AcknowledgeTypes: []int8{1}}}}}}}
	aresp := e.call(t, ack, 2).(*kmsg.ShareAcknowledgeResponse)
	if ap := aresp.Topics[0].Partitions[0]; aresp.ErrorCode != 0 || ap.ErrorCode != kerr.NotLeaderForPartition.Code || ap.CurrentLeader.LeaderID != 2 || len(aresp.NodeEndpoints) != 1 {
		t.Fatalf("share acknowledge: %+v", aresp)
	}
}

// TestShareAcknowledgeClose: a ShareAcknowledge at epoch -1 applies its
// acknowledgements, then closes the session and releases the member's
// other records.
func TestShareAcknowledgeClose(t *testing.T) {
	e := newShareEnv(t)
	e.produce(t, 2) // 0-1
	e.produce(t, 2) // 2-3
	if got := acquired(e.fetch(t, 2, "a", 0, 0)); !reflect.DeepEqual(got, []kmsg.ShareFetchResponseTopicPartitionAcquiredRecord{acqRec(0, 3, 1)}) {
		t.Fatalf("acquired %+v", got)
	}
	req := kmsg.NewPtrShareAcknowledgeRequest()
	req.GroupID, req.MemberID, req.ShareSessionEpoch = strp("g"), strp("a"), -1
	req.Topics = []kmsg.ShareAcknowledgeRequestTopic{{TopicID: e.id, Partitions: []kmsg.ShareAcknowledgeRequestTopicPartition{{Partition: 0,
		AcknowledgementBatches: []kmsg.ShareAcknowledgeRequestTopicPartitionAcknowledgementBatch{{FirstOffset: 0, LastOffset: 1, AcknowledgeTypes: []int8{share.AckAccept}}}}}}}
	if r := e.call(t, req, 2).(*kmsg.ShareAcknowledgeResponse); r.ErrorCode != 0 || r.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("closing ack: %+v", r)
	}
	if code := e.fetch(t, 2, "a", 1, 0).ErrorCode; code != kerr.ShareSessionNotFound.Code {
		t.Fatalf("session after the closing ack: %d", code)
	}
	if got := acquired(e.fetch(t, 2, "b", 0, 0)); !reflect.DeepEqual(got, []kmsg.ShareFetchResponseTopicPartitionAcquiredRecord{acqRec(2, 3, 2)}) {
		t.Fatalf("b acquired %+v, want 2-3 released by the close", got)
	}
	if s := e.p.State(sharestate.Key{Group: "g", TopicID: e.id}).StartOffset; s != 2 {
		t.Fatalf("start offset %d, want 2", s)
	}
}
