package coordinator

import (
	"context"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// LatestOffsets returns the latest offset (the high watermark: a
// read_uncommitted ListOffsets at timestamp -1) of each asked partition of
// a topic, or the Kafka error that prevented reading it. The broker
// answers it from its own replica when it leads the partition and with a
// ListOffsets to the leader otherwise; a partition missing from the answer
// counts as UNKNOWN_SERVER_ERROR.
type LatestOffsets func(ctx context.Context, topicID [16]byte, topic string, partitions []int32) map[int32]LatestOffset

// LatestOffset is one partition's answer to LatestOffsets.
type LatestOffset struct {
	Offset    int64
	ErrorCode int16
}

// DescribeShareGroupOffsetsLag is DescribeShareGroupOffsets with v1's Lag
// computed as Kafka 4.4 does (KIP-1226): for a share-partition whose state
// has a start offset and a delivery-complete count, Lag = high watermark -
// start offset - delivery-complete count (records at or above the start
// offset that are acknowledged or archived), not clamped at 0. Records
// acquired but not yet acknowledged count as lag. A partition without
// state, or whose state has no count yet, keeps Lag -1. When the high
// watermark cannot be read, the partition carries that error with start
// offset 0, leader epoch 0 and Lag -1, as Kafka's answer does. latest nil
// leaves every Lag -1.
func (c *Coordinator) DescribeShareGroupOffsetsLag(ctx context.Context, img TopicImage, req *kmsg.DescribeShareGroupOffsetsRequest, latest LatestOffsets) *kmsg.DescribeShareGroupOffsetsResponse {
	resp := req.ResponseKind().(*kmsg.DescribeShareGroupOffsetsResponse)
	for _, rg := range req.Groups {
		out := kmsg.NewDescribeShareGroupOffsetsResponseGroup()
		out.GroupID = rg.GroupID
		resp.Groups = append(resp.Groups, c.describeShareOffsets(ctx, img, rg, out, latest))
	}
	return resp
}

// setShareLags fills the Lag of the partitions of one topic in ps whose
// delivery-complete count is in complete, from one LatestOffsets call.
func setShareLags(ctx context.Context, latest LatestOffsets, topicID [16]byte, topic string, ps []kmsg.DescribeShareGroupOffsetsResponseGroupTopicPartition, complete map[int32]int32) {
	asked := make([]int32, 0, len(complete))
	for p := range complete {
		asked = append(asked, p)
	}
	slices.Sort(asked)
	ends := latest(ctx, topicID, topic, asked)
	for i := range ps {
		op := &ps[i]
		done, ok := complete[op.Partition]
		if !ok {
			continue
		}
		end, ok := ends[op.Partition]
		if !ok {
			end.ErrorCode = kerr.UnknownServerError.Code
		}
		if end.ErrorCode != 0 {
			op.StartOffset, op.LeaderEpoch, op.Lag = 0, 0, -1
			op.ErrorCode = end.ErrorCode
			op.ErrorMessage = errorMessage(end.ErrorCode)
			continue
		}
		op.Lag = shareLag(end.Offset, op.StartOffset, done)
	}
}

// shareLag is Kafka 4.4's share-partition lag: the records between the
// start offset and the high watermark that are not yet delivered to
// completion.
func shareLag(highWatermark, startOffset int64, deliveryComplete int32) int64 {
	return highWatermark - startOffset - int64(deliveryComplete)
}
