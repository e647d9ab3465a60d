package compattests

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/compat-tests/harness"
	"github.com/samsa-broker/samsa/compat-tests/kafkaref"
)

// describeQuorum sends DescribeQuorum for __cluster_metadata-0 to addr.
func describeQuorum(ctx context.Context, addr string) (*kmsg.DescribeQuorumResponse, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RequestRetries(0))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	req := kmsg.NewPtrDescribeQuorumRequest()
	rt := kmsg.NewDescribeQuorumRequestTopic()
	rt.Topic = "__cluster_metadata"
	rt.Partitions = []kmsg.DescribeQuorumRequestTopicPartition{kmsg.NewDescribeQuorumRequestTopicPartition()}
	req.Topics = append(req.Topics, rt)
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return req.RequestWith(rctx, cl)
}

// TestDescribeQuorum: three combined nodes. DescribeQuorum (55) sent to
// any node (the others forward it) describes the same quorum: the active
// controller as leader, three voters whose log end offsets reach the high
// watermark, their last fetch and caught-up times, and (v2) the voters'
// controller listeners. Then Kafka's own kafka-metadata-quorum tool
// (describe --status and --replication, through --bootstrap-server and
// --bootstrap-controller) reads it; skipped without Java.
func TestDescribeQuorum(t *testing.T) {
	t.Parallel()
	c := harness.StartCluster(t, 3, harness.ClusterOptions{})
	ctx := testContext(t, 3*time.Minute)
	for i, b := range c.Brokers {
		var p kmsg.DescribeQuorumResponseTopicPartition
		if !pollUntil(30*time.Second, func() bool {
			resp, err := describeQuorum(ctx, b.Addr)
			if err != nil || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
				return false
			}
			p = resp.Topics[0].Partitions[0]
			if p.ErrorCode != 0 || len(p.CurrentVoters) != 3 || len(resp.Nodes) != 3 {
				return false
			}
			for _, v := range p.CurrentVoters {
				if v.LogEndOffset < p.HighWatermark || v.LastCaughtUpTimestamp <= 0 {
					return false
				}
			}
			return true
		}) {
			t.Fatalf("DescribeQuorum via node %d: %+v", i+1, p)
		}
		// The leader may move under load between two requests: any voter
		// is a valid answer, the epoch grows with each move.
		if p.LeaderID < 1 || p.LeaderID > 3 || p.LeaderEpoch < 1 || p.HighWatermark < 1 || len(p.Observers) != 0 {
			t.Fatalf("DescribeQuorum via node %d: leader %d epoch %d hw %d observers %d", i+1, p.LeaderID, p.LeaderEpoch, p.HighWatermark, len(p.Observers))
		}
	}
	// A request for another partition is UNKNOWN_TOPIC_OR_PARTITION, as
	// in Kafka.
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Brokers[0].Addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	req := kmsg.NewPtrDescribeQuorumRequest()
	rt := kmsg.NewDescribeQuorumRequestTopic()
	rt.Topic = "__cluster_metadata"
	rp := kmsg.NewDescribeQuorumRequestTopicPartition()
	rp.Partition = 1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 || resp.Topics[0].Partitions[0].ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("DescribeQuorum of partition 1: %+v, %v", resp, err)
	}

	if testing.Short() {
		return
	}
	kafkaref.Require(t)
	run := func(args ...string) string {
		out, err := kafkaref.Tool(t, "kafka-metadata-quorum", args...).CombinedOutput()
		if err != nil {
			t.Fatalf("kafka-metadata-quorum %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	leaderLine := regexp.MustCompile(`(?m)^LeaderId:\s+(\d+)`)
	for _, boot := range [][]string{{"--bootstrap-server", c.Brokers[2].Addr}, {"--bootstrap-controller", c.ControllerAddrs[1]}} {
		status := run(append(boot, "describe", "--status")...)
		m := leaderLine.FindStringSubmatch(status)
		if m == nil || m[1] < "1" || m[1] > "3" || !strings.Contains(status, "CurrentVoters:") ||
			!strings.Contains(status, "ClusterId:") || !strings.Contains(status, "MaxFollowerLag:") {
			t.Fatalf("describe --status %v:\n%s", boot, status)
		}
		repl := run(append(boot, "describe", "--replication")...)
		if !strings.Contains(repl, "Leader") || strings.Count(repl, "Follower") != 2 {
			t.Fatalf("describe --replication %v:\n%s", boot, repl)
		}
		t.Logf("kafka-metadata-quorum %v describe:\n%s\n%s", boot, status, repl)
	}
}
