package handlers

import (
	"context"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/broker/share"
)

// ShareAcknowledge, key 79, versions 1-2 (KIP-932; v2 adds IsRenewAck,
// KIP-1222, and AcquisitionLockTimeoutMillis).
//
//   - Acknowledges records a member acquired with ShareFetch: accept (1),
//     release (2), reject (3), gap (0) and, in a request with IsRenewAck,
//     renew (4), which extends the acquisition lock (INVALID_RECORD_STATE
//     "Renewing acquisition locks is not enabled for the group." when the
//     group's share.renew.acknowledge.enable is false). Each partition's
//     acknowledgements are applied all or none and answered after their
//     state is written: INVALID_RECORD_STATE for an offset the member does
//     not hold, INVALID_REQUEST for a malformed batch.
//   - The share session must exist (SHARE_SESSION_NOT_FOUND) and the epoch
//     be its next one (INVALID_SHARE_SESSION_EPOCH; 0 is always that);
//     -1 closes the session after the acknowledgements and releases the
//     member's other records.
//   - A partition this node does not lead is NOT_LEADER_OR_FOLLOWER with
//     CurrentLeader and NodeEndpoints.
//   - A partition named more than once (in one topic or in repeated
//     topics) is acknowledged with its last entry's batches only and
//     answered once, as Kafka 4.4 (lastAckPerPartition).
func handleShareAcknowledge(d *Deps, r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.ShareAcknowledgeRequest)
	resp := req.ResponseKind().(*kmsg.ShareAcknowledgeResponse)
	group, member, code := d.shareMember(req.GroupID, req.MemberID)
	if code != 0 {
		resp.ErrorCode = code
		return resp, nil
	}
	skey := share.SessionKey{Group: group, Member: member}
	if code := d.Shares.AcknowledgeSession(skey, req.ShareSessionEpoch); code != 0 {
		resp.ErrorCode = code
		return resp, nil
	}
	if r.Header.APIVersion >= 2 {
		resp.AcquisitionLockTimeoutMillis = int32(d.Shares.LockDuration(group) / time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), shareRequestTimeout)
	defer cancel()
	img := d.Controller.Image()
	var leaders []int32
	for _, t := range lastAckPerPartition(req.Topics) {
		rt := kmsg.NewShareAcknowledgeResponseTopic()
		rt.TopicID = t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewShareAcknowledgeResponseTopicPartition()
			rp.Partition = p.Partition
			st := d.shareTarget(r, img, group, share.TopicPartition{TopicID: t.TopicID, Partition: p.Partition})
			if st.code != 0 {
				rp.ErrorCode = st.code
				rp.CurrentLeader.LeaderID, rp.CurrentLeader.LeaderEpoch = st.leader, st.leaderEpoch
				if st.code == kerr.NotLeaderForPartition.Code && st.leader >= 0 && !slices.Contains(leaders, st.leader) {
					leaders = append(leaders, st.leader)
				}
			} else {
				batches := make([]share.AckBatch, len(p.AcknowledgementBatches))
				for i, b := range p.AcknowledgementBatches {
					batches[i] = share.AckBatch{FirstOffset: b.FirstOffset, LastOffset: b.LastOffset, Types: b.AcknowledgeTypes}
				}
				ar := d.Shares.Acknowledge(ctx, st.target, share.Acknowledgement{Member: member, Renew: req.IsRenewAck, Batches: batches})
				rp.ErrorCode = ar.Code
				if ar.Message != "" {
					rp.ErrorMessage = &ar.Message
				}
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	if req.ShareSessionEpoch == share.FinalEpoch {
		d.Shares.CloseSession(ctx, skey)
	}
	for _, id := range leaders {
		if b, host, port, ok := leaderEndpoint(img, id, r.ListenerName); ok {
			e := kmsg.NewShareAcknowledgeResponseNodeEndpoint()
			e.NodeID, e.Rack = b.ID, b.Rack
			e.Host, e.Port = host, port
			resp.NodeEndpoints = append(resp.NodeEndpoints, e)
		}
	}
	return resp, nil
}
