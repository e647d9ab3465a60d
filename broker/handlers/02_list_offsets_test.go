package handlers

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/storage"
)

// TestListOffsetsSpecialTimestamps: each special (negative) timestamp is
// taken from the version that introduced it, and any other negative one at
// no version; refused ones are UNSUPPORTED_VERSION with offset, timestamp
// and leader epoch -1, decided before the partition is looked up (an
// unknown topic gets it too), as Kafka 4.4's ReplicaManager answers
// (compat-tests/diff ts-6, ts-7). -6 (v11, KIP-1023 earliest pending
// upload) is -1 without tiered storage, as -5.
func TestListOffsetsSpecialTimestamps(t *testing.T) {
	e := newAdminEnv(t)
	id := e.createTopic(t, "a", 1, nil)
	if _, err := e.d.Logs.CreateLog(storage.TopicPartition{Topic: "a"}, id, storage.DefaultLogConfig()); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		topic string
		ts    int64
		v     int16
		code  int16
	}{
		{"a", -1, 1, 0},
		{"a", -2, 1, 0},
		{"a", -3, 6, kerr.UnsupportedVersion.Code},
		{"a", -3, 7, 0},
		{"a", -4, 7, kerr.UnsupportedVersion.Code},
		{"a", -4, 8, 0},
		{"a", -5, 8, kerr.UnsupportedVersion.Code},
		{"a", -5, 9, 0},
		{"a", -6, 10, kerr.UnsupportedVersion.Code},
		{"a", -6, 11, 0},
		{"a", -7, 11, kerr.UnsupportedVersion.Code},
		{"a", -100, 1, kerr.UnsupportedVersion.Code},
		{"nope", -7, 11, kerr.UnsupportedVersion.Code},
		{"nope", -6, 10, kerr.UnsupportedVersion.Code},
		{"nope", -6, 11, kerr.UnknownTopicOrPartition.Code},
	} {
		req := listOffsetsRequest(tc.topic, tc.ts)
		resp := e.call(t, req, tc.v).(*kmsg.ListOffsetsResponse)
		p := resp.Topics[0].Partitions[0]
		if p.ErrorCode != tc.code {
			t.Errorf("%s ts %d v%d: error %d, want %d", tc.topic, tc.ts, tc.v, p.ErrorCode, tc.code)
		}
		if tc.code == kerr.UnsupportedVersion.Code && (p.Offset != -1 || p.Timestamp != -1 || p.LeaderEpoch != -1) {
			t.Errorf("%s ts %d v%d: refused with offset %d timestamp %d epoch %d", tc.topic, tc.ts, tc.v, p.Offset, p.Timestamp, p.LeaderEpoch)
		}
		if tc.code == 0 && (tc.ts == -5 || tc.ts == -6) && (p.Offset != -1 || p.LeaderEpoch != -1) {
			t.Errorf("ts %d v%d: offset %d epoch %d, want -1 (no tiered storage)", tc.ts, tc.v, p.Offset, p.LeaderEpoch)
		}
		if tc.code == 0 && (tc.ts == -1 || tc.ts == -2) && p.Offset != 0 {
			t.Errorf("ts %d v%d: offset %d of an empty log", tc.ts, tc.v, p.Offset)
		}
	}
}

func listOffsetsRequest(topic string, ts int64) *kmsg.ListOffsetsRequest {
	req := kmsg.NewPtrListOffsetsRequest()
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Timestamp = ts
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}
