package handlers

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// OffsetFetch, key 9, versions 0-10.
//
//   - Committed offsets of a group, -1 (and empty metadata) for partitions
//     without one or an unknown group. Null topics (v2+) mean every
//     partition the group committed.
//   - v1 is the same; v2 adds the top-level error (before it the error
//     goes to each partition); v5 the leader epoch; v6 is flexible; v7
//     require_stable (no transactions yet, so offsets are always stable);
//     v8 batches groups; v9 adds member id and epoch (KIP-848 groups;
//     ignored for classic groups); v10 names topics by id: an unknown id is
//     UNKNOWN_TOPIC_ID, and all-partitions answers skip topics that were
//     deleted.
func handleOffsetFetch(d *Deps, r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.OffsetFetchRequest)
	c := groupCoordinator(d)
	if c == nil {
		resp := req.ResponseKind().(*kmsg.OffsetFetchResponse)
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		for _, g := range req.Groups {
			rg := kmsg.NewOffsetFetchResponseGroup()
			rg.Group, rg.ErrorCode = g.Group, kerr.CoordinatorNotAvailable.Code
			resp.Groups = append(resp.Groups, rg)
		}
		return resp, nil
	}
	if req.Version < 10 {
		return c.OffsetFetch(context.Background(), req), nil
	}
	// v10: resolve topic ids to the names offsets are stored under, and
	// names back to ids in the answer.
	img := d.Controller.Image()
	for i := range req.Groups {
		for j := range req.Groups[i].Topics {
			t := &req.Groups[i].Topics[j]
			if topic := topicByID(img, t.TopicID); topic != nil {
				t.Topic = topic.Name
			}
		}
	}
	resp := c.OffsetFetch(context.Background(), req)
	for i := range resp.Groups {
		g := &resp.Groups[i]
		kept := g.Topics[:0]
		for _, t := range g.Topics {
			if t.TopicID == ([16]byte{}) {
				topic := topicByName(img, t.Topic)
				if topic == nil {
					continue // committed to a topic since deleted
				}
				t.TopicID = [16]byte(topic.ID)
			}
			kept = append(kept, t)
		}
		g.Topics = kept
	}
	return resp, nil
}
