package handlers

import (
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Kafka 4.4 judges a DescribeProducers topic's name before it looks the
// topic up (KafkaApis.checkValidTopic; compat-tests/diff fuzzing).
func TestDescribeProducersTopicNames(t *testing.T) {
	e := newAdminEnv(t)
	for _, tc := range []struct {
		topic string
		code  int16
	}{
		{"", kerr.InvalidTopicException.Code},
		{"..", kerr.InvalidTopicException.Code},
		{"bad name!", kerr.InvalidTopicException.Code},
		{strings.Repeat("t", 260), kerr.InvalidTopicException.Code},
		{"missing", kerr.UnknownTopicOrPartition.Code},
	} {
		req := kmsg.NewPtrDescribeProducersRequest()
		rt := kmsg.NewDescribeProducersRequestTopic()
		rt.Topic, rt.Partitions = tc.topic, []int32{0, 1}
		req.Topics = []kmsg.DescribeProducersRequestTopic{rt}
		resp := e.call(t, req, 0).(*kmsg.DescribeProducersResponse)
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 2 {
			t.Fatalf("%.10q: %+v", tc.topic, resp.Topics)
		}
		for _, p := range resp.Topics[0].Partitions {
			if p.ErrorCode != tc.code {
				t.Errorf("%.10q p%d: code %d, want %d", tc.topic, p.Partition, p.ErrorCode, tc.code)
			}
			if tc.code == kerr.InvalidTopicException.Code && (p.ErrorMessage == nil || !strings.HasPrefix(*p.ErrorMessage, "Topic name")) {
				t.Errorf("%.10q: message %v", tc.topic, p.ErrorMessage)
			}
		}
	}
}
