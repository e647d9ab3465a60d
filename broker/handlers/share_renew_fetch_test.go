package handlers

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestShareFetchRenewAskingForRecords: a ShareFetch v2 with IsRenewAck
// that also asks for records (MaxBytes, MinBytes, MaxRecords or
// MaxWaitMs not 0) was served as a renew; Kafka 4.4 answers it
// INVALID_REQUEST at the top level, without a message, and leaves the
// share session alone (FACTS.md: "ShareFetch IsRenewAck=true ... ->
// top-level INVALID_REQUEST").
func TestShareFetchRenewAskingForRecords(t *testing.T) {
	e := newShareEnv(t)
	e.produce(t, 3)
	if resp := e.fetch(t, 2, "a", 0, 0); resp.ErrorCode != 0 || len(acquired(resp)) != 1 {
		t.Fatalf("fetch: %+v", resp)
	}
	renew := func(set func(r *kmsg.ShareFetchRequest)) *kmsg.ShareFetchResponse {
		req := kmsg.NewPtrShareFetchRequest()
		req.GroupID, req.MemberID = strp("g"), strp("a")
		req.ShareSessionEpoch, req.IsRenewAck = 1, true
		// kmsg defaults MaxBytes to 0x7fffffff: a renew sets all four 0.
		req.MaxBytes, req.MinBytes, req.MaxRecords, req.MaxWaitMillis = 0, 0, 0, 0
		rt := kmsg.NewShareFetchRequestTopic()
		rt.TopicID = e.id
		rp := kmsg.NewShareFetchRequestTopicPartition()
		rp.AcknowledgementBatches = []kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch{{FirstOffset: 0, LastOffset: 2, AcknowledgeTypes: []int8{4}}}
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		set(req)
		return e.call(t, req, 2).(*kmsg.ShareFetchResponse)
	}
	for _, c := range []struct {
		name string
		set  func(r *kmsg.ShareFetchRequest)
	}{
		{"MaxBytes", func(r *kmsg.ShareFetchRequest) { r.MaxBytes = 1 << 20 }},
		{"MinBytes", func(r *kmsg.ShareFetchRequest) { r.MinBytes = 1 }},
		{"MaxRecords", func(r *kmsg.ShareFetchRequest) { r.MaxRecords = 4 }},
		{"MaxWaitMs", func(r *kmsg.ShareFetchRequest) { r.MaxWaitMillis = 3000 }},
	} {
		resp := renew(c.set)
		if resp.ErrorCode != kerr.InvalidRequest.Code || resp.ErrorMessage != nil || len(resp.Topics) != 0 || resp.AcquisitionLockTimeoutMillis != 0 {
			t.Fatalf("renew with %s set: error %d message %v, %d topics, lock %d; want INVALID_REQUEST alone", c.name, resp.ErrorCode, resp.ErrorMessage, len(resp.Topics), resp.AcquisitionLockTimeoutMillis)
		}
	}
	// The refused requests did not consume epoch 1: a proper renew
	// (every fetch parameter 0) at epoch 1 renews.
	resp := renew(func(*kmsg.ShareFetchRequest) {})
	if resp.ErrorCode != 0 || len(resp.Topics) != 1 || resp.Topics[0].Partitions[0].AcknowledgeErrorCode != 0 || len(acquired(resp)) != 0 {
		t.Fatalf("renew: %+v", resp)
	}
}
