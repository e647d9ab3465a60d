package handlers

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestDescribeTopicPartitions checks topic order, unknown and invalid
// names, the partition limit with its cursor, and that every partition
// carries empty (not null) ELR lists.
func TestDescribeTopicPartitions(t *testing.T) {
	e := newAdminEnv(t)
	idA := e.createTopic(t, "a", 3, nil)
	e.createTopic(t, "b", 2, nil)

	describe := func(limit int32, cursor *kmsg.DescribeTopicPartitionsRequestCursor, topics ...string) *kmsg.DescribeTopicPartitionsResponse {
		req := kmsg.NewPtrDescribeTopicPartitionsRequest()
		req.ResponsePartitionLimit = limit
		req.Cursor = cursor
		for _, n := range topics {
			req.Topics = append(req.Topics, kmsg.DescribeTopicPartitionsRequestTopic{Topic: n})
		}
		return e.call(t, req, 0).(*kmsg.DescribeTopicPartitionsResponse)
	}
	summary := func(resp *kmsg.DescribeTopicPartitionsResponse) string {
		s := ""
		for _, rt := range resp.Topics {
			s += fmt.Sprintf("%s:%d[", deref(rt.Topic), rt.ErrorCode)
			for _, p := range rt.Partitions {
				s += fmt.Sprint(p.Partition)
			}
			s += "] "
		}
		if resp.NextCursor != nil {
			s += fmt.Sprintf("next=%s/%d", resp.NextCursor.Topic, resp.NextCursor.Partition)
		}
		return s
	}

	resp := describe(2000, nil)
	if got := summary(resp); got != "a:0[012] b:0[01] " {
		t.Fatalf("all topics: %s", got)
	}
	a := resp.Topics[0]
	if a.TopicID != idA || a.IsInternal {
		t.Fatalf("topic a: %+v", a)
	}
	for _, p := range a.Partitions {
		if p.LeaderID != 1 || len(p.ISR) != 1 || len(p.EligibleLeaderReplicas) != 0 || len(p.LastKnownELR) != 0 || len(p.OfflineReplicas) != 0 {
			t.Fatalf("partition %+v", p)
		}
	}
	// The ELR fields are nullable: Kafka sends empty lists, never null.
	p := describePartition(e.d.Controller.Image(), e.d.Controller.Image().Topics["a"].Partitions[0])
	if p.EligibleLeaderReplicas == nil || p.LastKnownELR == nil {
		t.Fatalf("null ELR lists: %+v", p)
	}

	unknown := kerr.UnknownTopicOrPartition.Code
	invalid := kerr.InvalidTopicException.Code
	for _, tc := range []struct {
		limit  int32
		cursor *kmsg.DescribeTopicPartitionsRequestCursor
		topics []string
		want   string
	}{
		{2000, nil, []string{"b", "nope", "a", "b"}, fmt.Sprintf("a:0[012] b:0[01] nope:%d[] ", unknown)},
		{2000, nil, []string{"bad/name"}, fmt.Sprintf("bad/name:%d[] ", invalid)},
		{2, nil, nil, "a:0[01] next=a/2"},
		{2, &kmsg.DescribeTopicPartitionsRequestCursor{Topic: "a", Partition: 2}, nil, "a:0[2] b:0[0] next=b/1"},
		{3, nil, nil, "next=b/0"},
		{0, nil, []string{"b"}, "b:0[0] next=b/1"},
		{2000, &kmsg.DescribeTopicPartitionsRequestCursor{Topic: "b", Partition: 1}, nil, "b:0[1] "},
		{2000, &kmsg.DescribeTopicPartitionsRequestCursor{Topic: "b"}, []string{"a"}, fmt.Sprintf("a:%d[] ", kerr.InvalidRequest.Code)},
		{2000, &kmsg.DescribeTopicPartitionsRequestCursor{Topic: "a", Partition: -1}, nil, ""},
	} {
		got := summary(describe(tc.limit, tc.cursor, tc.topics...))
		if tc.limit == 3 {
			// Three partitions fill the answer with topic a; the cursor
			// points at the start of b.
			tc.want = "a:0[012] " + tc.want
		}
		if got != tc.want {
			t.Errorf("limit %d cursor %+v topics %v: %s, want %s", tc.limit, tc.cursor, tc.topics, got, tc.want)
		}
	}
}
