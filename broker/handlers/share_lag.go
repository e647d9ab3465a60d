package handlers

import (
	"context"
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/coordinator"
)

// shareLagTimeout bounds DescribeShareGroupOffsets's reads of the
// partitions' high watermarks (ListOffsets to other brokers).
const shareLagTimeout = 15 * time.Second

var _ coordinator.LatestOffsets = (*Deps)(nil).shareLatestOffsets

// shareLatestOffsets is the group coordinator's coordinator.LatestOffsets
// for DescribeShareGroupOffsets v1's Lag: the high watermark of each
// partition (read_uncommitted ListOffsets at timestamp -1, as Kafka's
// PartitionMetadataClient asks), read from this node's replica when the
// image names this node leader, else by a ListOffsets to the leader (one
// request per leader). A partition without a leader is
// LEADER_NOT_AVAILABLE; one whose leader cannot be reached carries the
// Kafka error of the failure, else REQUEST_TIMED_OUT.
func (d *Deps) shareLatestOffsets(ctx context.Context, topicID [16]byte, _ string, partitions []int32) map[int32]coordinator.LatestOffset {
	out := make(map[int32]coordinator.LatestOffset, len(partitions))
	img := d.Controller.Image()
	t := topicByID(img, topicID)
	if t == nil {
		for _, p := range partitions {
			out[p] = coordinator.LatestOffset{Offset: -1, ErrorCode: kerr.UnknownTopicOrPartition.Code}
		}
		return out
	}
	self := int32(-1)
	if d.Config != nil {
		self = d.Config.NodeID
	}
	remote := map[int32][]int32{}
	for _, p := range partitions {
		if p < 0 || int(p) >= len(t.Partitions) {
			out[p] = coordinator.LatestOffset{Offset: -1, ErrorCode: kerr.UnknownTopicOrPartition.Code}
			continue
		}
		leader := t.Partitions[p].Leader
		switch {
		case leader < 0:
			out[p] = coordinator.LatestOffset{Offset: -1, ErrorCode: kerr.LeaderNotAvailable.Code}
		case leader == self || d.SendToBroker == nil:
			rp := latestOffsetRequest(p)
			sp := kmsg.NewListOffsetsResponseTopicPartition()
			d.listOffset(img, t, &rp, &sp, 0)
			out[p] = coordinator.LatestOffset{Offset: sp.Offset, ErrorCode: sp.ErrorCode}
		default:
			remote[leader] = append(remote[leader], p)
		}
	}
	for leader, ps := range remote {
		d.sendLatestOffsets(ctx, leader, t.Name, ps, out)
	}
	return out
}

func latestOffsetRequest(p int32) kmsg.ListOffsetsRequestTopicPartition {
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition, rp.Timestamp, rp.CurrentLeaderEpoch = p, -1, -1
	return rp
}

// sendLatestOffsets asks broker leader for the high watermarks of ps of
// topic and records them (or the error) in out.
func (d *Deps) sendLatestOffsets(ctx context.Context, leader int32, topic string, ps []int32, out map[int32]coordinator.LatestOffset) {
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID, req.IsolationLevel = -1, 0
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	for _, p := range ps {
		rt.Partitions = append(rt.Partitions, latestOffsetRequest(p))
		out[p] = coordinator.LatestOffset{Offset: -1, ErrorCode: kerr.RequestTimedOut.Code}
	}
	req.Topics = append(req.Topics, rt)
	resp, err := d.SendToBroker(ctx, leader, req)
	if err != nil {
		code := kerr.RequestTimedOut.Code
		var ke *kerr.Error
		if errors.As(err, &ke) {
			code = ke.Code
		}
		d.Logger.Warn("cannot read the high watermarks for share-group lag", "broker", leader, "topic", topic, "err", err)
		for _, p := range ps {
			out[p] = coordinator.LatestOffset{Offset: -1, ErrorCode: code}
		}
		return
	}
	for _, t := range resp.(*kmsg.ListOffsetsResponse).Topics {
		if t.Topic != topic {
			continue
		}
		for _, sp := range t.Partitions {
			if _, asked := out[sp.Partition]; asked {
				out[sp.Partition] = coordinator.LatestOffset{Offset: sp.Offset, ErrorCode: sp.ErrorCode}
			}
		}
	}
}
