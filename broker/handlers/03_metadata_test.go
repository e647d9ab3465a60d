package handlers

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestMetadataAutoCreateAnswersUnknownFirst: a Metadata that auto-creates a
// topic answers it UNKNOWN_TOPIC_OR_PARTITION with no partitions, as Kafka 4.4
// does, and the next Metadata lists it. samsa used to list the new topic's
// partitions in the same answer, which failed kafka-go's own TestConn "delete
// topics": it deletes two topics, reads their partitions with a Metadata v6
// that allows auto creation, and expects none (compat-tests/suites).
func TestMetadataAutoCreateAnswersUnknownFirst(t *testing.T) {
	e := newAdminEnv(t)
	e.createTopic(t, "existing", 1, nil)
	for _, c := range []struct {
		v     int16
		topic string
	}{{1, "auto-v1"}, {4, "auto-v4"}, {6, "auto-v6"}, {9, "auto-v9"}, {12, "auto-v12"}} {
		ask := func() *kmsg.MetadataResponse {
			req := kmsg.NewPtrMetadataRequest()
			req.AllowAutoTopicCreation = true // implied before v4
			for _, name := range []string{"existing", c.topic} {
				rt := kmsg.NewMetadataRequestTopic()
				rt.Topic = kmsg.StringPtr(name)
				req.Topics = append(req.Topics, rt)
			}
			return e.call(t, req, c.v).(*kmsg.MetadataResponse)
		}
		first := ask()
		if len(first.Topics) != 2 {
			t.Fatalf("v%d: %d topics in the answer, want 2", c.v, len(first.Topics))
		}
		if got := first.Topics[0]; got.ErrorCode != 0 || len(got.Partitions) != 1 {
			t.Errorf("v%d: the existing topic: error %d, %d partitions; want 0 and 1", c.v, got.ErrorCode, len(got.Partitions))
		}
		if got := first.Topics[1]; got.ErrorCode != kerr.UnknownTopicOrPartition.Code || len(got.Partitions) != 0 {
			t.Errorf("v%d: the auto-created topic's first answer: error %d, %d partitions; want UNKNOWN_TOPIC_OR_PARTITION (%d) and none",
				c.v, got.ErrorCode, len(got.Partitions), kerr.UnknownTopicOrPartition.Code)
		}
		if got := ask().Topics[1]; got.ErrorCode != 0 || len(got.Partitions) == 0 {
			t.Errorf("v%d: the auto-created topic's second answer: error %d, %d partitions; want it created", c.v, got.ErrorCode, len(got.Partitions))
		}
	}
}
