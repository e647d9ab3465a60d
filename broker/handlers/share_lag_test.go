package handlers

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/coordinator"
)

// TestShareLatestOffsetsFromLeader: the high watermarks of partitions led
// by another broker come from one read_uncommitted ListOffsets (timestamp
// -1) to it; its per-partition errors are kept, and a failed send is the
// Kafka error it carries, else REQUEST_TIMED_OUT.
func TestShareLatestOffsetsFromLeader(t *testing.T) {
	var sent []*kmsg.ListOffsetsRequest
	fail := error(nil)
	d := &Deps{Logger: slog.New(slog.DiscardHandler), SendToBroker: func(_ context.Context, broker int32, req kmsg.Request) (kmsg.Response, error) {
		if broker != 2 {
			t.Errorf("sent to broker %d, want 2", broker)
		}
		if fail != nil {
			return nil, fail
		}
		lo := req.(*kmsg.ListOffsetsRequest)
		sent = append(sent, lo)
		resp := lo.ResponseKind().(*kmsg.ListOffsetsResponse)
		rt := kmsg.NewListOffsetsResponseTopic()
		rt.Topic = lo.Topics[0].Topic
		for _, p := range lo.Topics[0].Partitions {
			sp := kmsg.NewListOffsetsResponseTopicPartition()
			sp.Partition, sp.Offset = p.Partition, 100+int64(p.Partition)
			if p.Partition == 1 {
				sp.Offset, sp.ErrorCode = -1, kerr.NotLeaderForPartition.Code
			}
			rt.Partitions = append(rt.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, rt)
		return resp, nil
	}}
	out := map[int32]coordinator.LatestOffset{}
	d.sendLatestOffsets(t.Context(), 2, "orders", []int32{0, 1, 2}, out)
	want := map[int32]coordinator.LatestOffset{0: {Offset: 100}, 1: {Offset: -1, ErrorCode: kerr.NotLeaderForPartition.Code}, 2: {Offset: 102}}
	if fmt.Sprint(out) != fmt.Sprint(want) {
		t.Fatalf("latest offsets %v, want %v", out, want)
	}
	if len(sent) != 1 || sent[0].IsolationLevel != 0 || sent[0].ReplicaID != -1 || len(sent[0].Topics) != 1 || sent[0].Topics[0].Topic != "orders" {
		t.Fatalf("requests sent: %+v", sent)
	}
	for _, p := range sent[0].Topics[0].Partitions {
		if p.Timestamp != -1 || p.CurrentLeaderEpoch != -1 {
			t.Fatalf("partition asked: %+v, want timestamp -1 (latest)", p)
		}
	}

	for _, c := range []struct {
		err  error
		want int16
	}{
		{fmt.Errorf("wrapped: %w", kerr.LeaderNotAvailable), kerr.LeaderNotAvailable.Code},
		{errors.New("connection refused"), kerr.RequestTimedOut.Code},
	} {
		fail = c.err
		out := map[int32]coordinator.LatestOffset{}
		d.sendLatestOffsets(t.Context(), 2, "orders", []int32{0}, out)
		if out[0].ErrorCode != c.want {
			t.Errorf("send failing with %v: %+v, want code %d", c.err, out[0], c.want)
		}
	}
}
