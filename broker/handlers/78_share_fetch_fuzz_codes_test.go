package handlers

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestShareFetchBadModeAndRenew: two ShareFetch v2 inputs the share fuzzer
// sent that samsa served as if they were fine, answered as Kafka 4.4
// does (compat-tests/sharefacts FACTS.md, "ShareFetch / ShareAcknowledge
// v2 additions"; the renew rule from Kafka 4.4's KafkaApis):
//   - an undefined ShareAcquireMode is UNKNOWN_SERVER_ERROR, after the
//     share session moved (the next epoch is then accepted);
//   - a renew fetch (IsRenewAck) that asks for records (MaxBytes,
//     MinBytes, MaxRecords or MaxWaitMillis not 0) is INVALID_REQUEST,
//     before the session moves.
func TestShareFetchBadModeAndRenew(t *testing.T) {
	e := newShareEnv(t)
	e.produce(t, 3)
	if resp := e.fetch(t, 2, "a", 0, 0); resp.ErrorCode != 0 || len(acquired(resp)) != 1 {
		t.Fatalf("first fetch: %+v", resp)
	}
	req := func(epoch int32) *kmsg.ShareFetchRequest {
		r := kmsg.NewPtrShareFetchRequest()
		r.GroupID, r.MemberID, r.ShareSessionEpoch = strp("g"), strp("a"), epoch
		r.MaxWaitMillis, r.MinBytes, r.MaxBytes, r.MaxRecords = 0, 0, 0, 0 // kmsg's defaults are not 0
		rt := kmsg.NewShareFetchRequestTopic()
		rt.TopicID = e.id
		rt.Partitions = []kmsg.ShareFetchRequestTopicPartition{{Partition: 0}}
		r.Topics = append(r.Topics, rt)
		return r
	}
	for _, mode := range []int8{2, -1, 127} {
		r := req(1)
		r.MaxBytes, r.MaxRecords, r.ShareAcquireMode = 1<<20, 10, mode
		r.ShareSessionEpoch = map[int8]int32{2: 1, -1: 2, 127: 3}[mode]
		resp := e.call(t, r, 2).(*kmsg.ShareFetchResponse)
		if resp.ErrorCode != kerr.UnknownServerError.Code || resp.AcquisitionLockTimeoutMillis != 0 || len(resp.Topics) != 0 {
			t.Fatalf("ShareAcquireMode %d: %+v, want UNKNOWN_SERVER_ERROR and nothing else", mode, resp)
		}
	}
	// The three refused fetches moved the session to epoch 4.
	renew := req(4)
	renew.IsRenewAck = true
	renew.Topics[0].Partitions[0].AcknowledgementBatches = []kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch{{FirstOffset: 0, LastOffset: 2, AcknowledgeTypes: []int8{4}}}
	for _, set := range []func(*kmsg.ShareFetchRequest){
		func(r *kmsg.ShareFetchRequest) { r.MaxBytes = 1 },
		func(r *kmsg.ShareFetchRequest) { r.MinBytes = 1 },
		func(r *kmsg.ShareFetchRequest) { r.MaxRecords = 1 },
		func(r *kmsg.ShareFetchRequest) { r.MaxWaitMillis = 1 },
	} {
		r := *renew
		set(&r)
		if resp := e.call(t, &r, 2).(*kmsg.ShareFetchResponse); resp.ErrorCode != kerr.InvalidRequest.Code || len(resp.Topics) != 0 {
			t.Fatalf("renew fetch asking for records: %+v, want INVALID_REQUEST", resp)
		}
	}
	// None of them moved the session: the renew fetch at epoch 4 with all
	// four at 0 renews.
	resp := e.call(t, renew, 2).(*kmsg.ShareFetchResponse)
	if resp.ErrorCode != 0 || len(resp.Topics) != 1 || resp.Topics[0].Partitions[0].AcknowledgeErrorCode != 0 {
		t.Fatalf("renew fetch: %+v", resp)
	}
}
