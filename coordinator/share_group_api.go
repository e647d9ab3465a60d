package coordinator

import (
	"context"
	"errors"
	"maps"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/wire"
)

// A KIP-932 share group lives in shard.share. It has no committed offsets
// (its consumption state is the share coordinator's, reached through
// Options.Persister), so, unlike a consumer group, it has no classic
// holder in shard.groups: a group id is a share group exactly when
// shard.share has it.

// shareGroupsOf returns the shard's share groups, creating the map.
// REQUIRES: on the shard goroutine.
func (s *shard) shareGroupsOf() map[string]*ShareGroup {
	if s.share == nil {
		s.share = map[string]*ShareGroup{}
	}
	return s.share
}

// otherGroupType tells whether a group id is taken by a classic or
// consumer group (which a share heartbeat must not take over).
// REQUIRES: on the shard goroutine.
func (s *shard) otherGroupType(id string) bool {
	if s.consumer[id] != nil || s.streams[id] != nil {
		return true
	}
	g := s.groups[id]
	return g != nil && g.state != Dead
}

// ShareGroupHeartbeat answers ShareGroupHeartbeat v1 (KIP-932). img is the
// current topic metadata. Share-partitions of subscribed topics that the
// group has not initialized yet are initialized through the Persister
// before the answer; the answer then carries the assignment including
// them (Kafka initializes them after answering, so its member gets them
// one heartbeat later).
func (c *Coordinator) ShareGroupHeartbeat(ctx context.Context, client Client, img TopicImage, req *kmsg.ShareGroupHeartbeatRequest) *kmsg.ShareGroupHeartbeatResponse {
	resp := req.ResponseKind().(*kmsg.ShareGroupHeartbeatResponse)
	if e, msg := validateShareHeartbeat(req); e != nil {
		sgHBError(resp, e, msg)
		return resp
	}
	s, code := c.shardFor(req.GroupID)
	ctx, cancel := context.WithTimeout(ctx, c.opts.WriteTimeout)
	defer cancel()
	var written int64
	var res ShareHeartbeatResult
	if code == 0 {
		code = s.call(ctx, func() {
			res = s.shareHeartbeat(c.now(), client, img, req, resp)
			written = s.written.Load()
		})
	}
	if code == 0 && resp.ErrorCode == 0 {
		code = s.commitBarrier(ctx, written)
	}
	if code == 0 && resp.ErrorCode == 0 && len(res.Initialize) > 0 {
		// Only once the heartbeat's records are committed: the
		// share-partitions are not assigned before they are
		// initialized, so this is the first write of their state.
		// The Persister gets at most half of what is left, so the
		// heartbeat is still answered in time when it is slow.
		pctx := ctx
		if dl, ok := ctx.Deadline(); ok {
			var pcancel context.CancelFunc
			pctx, pcancel = context.WithTimeout(ctx, time.Until(dl)/2)
			defer pcancel()
		}
		done, failed := c.initializeShare(pctx, req.GroupID, res)
		// The outcome must reach the group even when the heartbeat
		// has no time left: else the share-partitions would stay
		// "initializing" and never be retried. A shard that stopped
		// meanwhile forgets them anyway (initializing is not durable).
		octx, ocancel := context.WithTimeout(context.WithoutCancel(ctx), c.opts.WriteTimeout)
		defer ocancel()
		var again kmsg.ShareGroupHeartbeatResponse
		written2 := written
		if s.call(octx, func() {
			again = s.shareInitialized(c.now(), req.GroupID, req.MemberID, img, done, failed)
			written2 = s.written.Load()
		}) == 0 && again.ErrorCode == 0 && again.MemberID != nil && s.commitBarrier(ctx, written2) == 0 {
			// The member gets the newly initialized share-partitions
			// now; otherwise at its next heartbeat.
			resp.MemberEpoch, resp.Assignment = again.MemberEpoch, again.Assignment
		}
	}
	if code != 0 {
		*resp = *req.ResponseKind().(*kmsg.ShareGroupHeartbeatResponse)
		sgHBError(resp, kerr.ErrorForCode(code).(*kerr.Error), "")
	}
	return resp
}

// initializeShare initializes share-partitions through the Persister and
// returns the ones that succeeded and failed. Without a Persister (a
// coordinator built for tests or tools) every one succeeds.
func (c *Coordinator) initializeShare(ctx context.Context, group string, res ShareHeartbeatResult) (done, failed []SharePartition) {
	for _, in := range res.Initialize {
		if p := c.sharePersister(); p != nil {
			k := SharePartitionKey{Group: group, TopicID: in.TopicID, Partition: in.Partition}
			if err := p.Initialize(ctx, k, res.StateEpoch, in.StartOffset); err != nil {
				c.logger.Warn("coordinator: initializing share-partition failed", "group", group, "topic", in.Topic, "partition", in.Partition, "err", err)
				failed = append(failed, in.SharePartition)
				continue
			}
		}
		done = append(done, in.SharePartition)
	}
	return done, failed
}

// shareHeartbeat runs on the shard goroutine.
func (s *shard) shareHeartbeat(now time.Time, client Client, img TopicImage, req *kmsg.ShareGroupHeartbeatRequest, resp *kmsg.ShareGroupHeartbeatResponse) ShareHeartbeatResult {
	sg := s.share[req.GroupID]
	created := false
	if sg == nil {
		if s.otherGroupType(req.GroupID) {
			sgHBError(resp, kerr.GroupIDNotFound, "Group "+req.GroupID+" is not a share group.")
			return ShareHeartbeatResult{}
		}
		if req.MemberEpoch != 0 {
			sgHBError(resp, kerr.GroupIDNotFound, "Share group "+req.GroupID+" not found.")
			return ShareHeartbeatResult{}
		}
		sg = NewShareGroup(&s.c.sgConfig, req.GroupID, now)
		created = true
	}
	sg.cfg = s.c.shareConfigFor(req.GroupID)
	saved := sg.clone()
	recs, res := sg.Heartbeat(now, client, img, req, resp)
	if resp.ErrorCode != 0 {
		return ShareHeartbeatResult{}
	}
	if len(recs) > 0 {
		if err := s.appendLimited(now, recs); err != nil {
			s.logger.Warn("coordinator: writing share group failed", "group", req.GroupID, "err", err)
			if !created {
				*sg = *saved
			}
			*resp = *req.ResponseKind().(*kmsg.ShareGroupHeartbeatResponse)
			sgHBError(resp, writeError(err), "")
			return ShareHeartbeatResult{}
		}
	}
	if created {
		s.shareGroupsOf()[sg.id] = sg
	}
	return res
}

// shareInitialized records the outcome of initializing share-partitions
// and, when some became initialized, recomputes the assignment at a new
// group epoch; it returns memberID's new epoch and assignment (MemberID
// nil when the member is gone).
// REQUIRES: on the shard goroutine.
func (s *shard) shareInitialized(now time.Time, group, memberID string, img TopicImage, done, failed []SharePartition) kmsg.ShareGroupHeartbeatResponse {
	out := kmsg.NewShareGroupHeartbeatResponse()
	sg := s.share[group]
	if sg == nil {
		return out
	}
	saved := sg.clone()
	recs := sg.MarkInitialized(done, failed)
	if len(recs) > 0 {
		sg.metadataHash = sg.subscriptionHash(img)
		sg.epoch++
		recs = append(recs, recSGMetadata(sg.id, sg.epoch, sg.metadataHash))
		recs = append(recs, sg.computeTarget()...)
		if m := sg.members[memberID]; m != nil {
			old := m.clone()
			recs = append(recs, sg.reconcile(m, old)...)
		}
		if err := s.append(now, recs); err != nil {
			s.logger.Warn("coordinator: writing share group initialization failed", "group", group, "err", err)
			*sg = *saved
			for _, sp := range done {
				delete(sg.initializing, assignTP{sp.TopicID, sp.Partition})
			}
			for _, sp := range failed {
				delete(sg.initializing, assignTP{sp.TopicID, sp.Partition})
			}
			sgHBError(&out, writeError(err), "")
			return out
		}
	}
	if m := sg.members[memberID]; m != nil {
		out.MemberID = &m.id
		out.MemberEpoch = m.epoch
		out.Assignment = shareAssignment(m.assigned)
	}
	return out
}

// shareTick expires members of share groups whose session ended.
// REQUIRES: on the shard goroutine.
func (s *shard) shareTick(now time.Time) {
	for _, sg := range s.share {
		if d, ok := sg.NextDeadline(); !ok || now.Before(d) {
			continue
		}
		if recs := sg.Tick(now); len(recs) > 0 {
			if err := s.append(now, recs); err != nil {
				s.logger.Warn("coordinator: writing share group expiry failed", "group", sg.id, "err", err)
			}
		}
	}
}

// restoreShareGroups installs the share groups read at load.
// REQUIRES: on the shard goroutine.
func (s *shard) restoreShareGroups(ls *loadState, now time.Time) {
	for id, l := range ls.shareGroups {
		if !l.hasMetadata {
			continue
		}
		s.shareGroupsOf()[id] = restoreShareGroup(&s.c.sgConfig, id, l, now)
	}
}

// ShareGroupDescribe answers ShareGroupDescribe v1. It shows the shard's
// state as of its last write (not held back to the high watermark as
// ConsumerGroupDescribe is).
func (c *Coordinator) ShareGroupDescribe(ctx context.Context, req *kmsg.ShareGroupDescribeRequest) *kmsg.ShareGroupDescribeResponse {
	resp := req.ResponseKind().(*kmsg.ShareGroupDescribeResponse)
	for _, id := range req.GroupIDs {
		d := kmsg.NewShareGroupDescribeResponseGroup()
		d.GroupID = id
		code := c.describeOnShard(ctx, id, func(s *shard) {
			sg := s.share[id]
			if sg == nil {
				d.ErrorCode = kerr.GroupIDNotFound.Code
				d.ErrorMessage = describeNotFound(id, "share", s.otherGroupType(id))
				return
			}
			d = sg.Describe()
		})
		if code != 0 {
			d.ErrorCode = code
		}
		d.AuthorizedOperations = describedOperations(req.IncludeAuthorizedOperations, d.ErrorCode)
		resp.Groups = append(resp.Groups, d)
	}
	return resp
}

// listShareGroups appends the share groups of a shard to a ListGroups
// answer, filtered by states and types as Kafka does.
// REQUIRES: on the shard goroutine.
func (s *shard) listShareGroups(req *kmsg.ListGroupsRequest, resp *kmsg.ListGroupsResponse) {
	if !typeListed(req.TypesFilter, "share") {
		return
	}
	for _, id := range slices.Sorted(maps.Keys(s.share)) {
		if state := s.share[id].StateName(); stateListed(req.StatesFilter, state) {
			resp.Groups = append(resp.Groups, listedGroup(id, "share", state))
		}
	}
}

// deleteShareGroup deletes an empty share group: first the share state of
// its initialized share-partitions (through the Persister, off the shard),
// then its records. It returns the error code for DeleteGroups.
func (c *Coordinator) deleteShareGroup(ctx context.Context, s *shard, id string) int16 {
	var parts []SharePartition
	var code int16
	if rc := s.call(ctx, func() {
		sg := s.share[id]
		switch {
		case sg == nil:
			code = kerr.GroupIDNotFound.Code
		case !sg.Empty():
			code = kerr.NonEmptyGroup.Code
		default:
			parts = sg.InitializedPartitions()
		}
	}); rc != 0 {
		return rc
	}
	if code != 0 {
		return code
	}
	if err := c.deleteShareState(ctx, id, parts); err != nil {
		return persisterErrorCode(err)
	}
	var written int64
	if rc := s.call(ctx, func() {
		sg := s.share[id]
		if sg == nil {
			return
		}
		if !sg.Empty() {
			code = kerr.NonEmptyGroup.Code // a member joined meanwhile
			return
		}
		var recs []wire.Record
		recs = append(recs, recsSGGroupGone(id)...)
		if err := s.append(c.now(), recs); err != nil {
			code = writeError(err).Code
			return
		}
		delete(s.share, id)
		written = s.written.Load()
	}); rc != 0 {
		return rc
	}
	if code != 0 {
		return code
	}
	return s.commitBarrier(ctx, written)
}

// deleteShareState deletes the share state of share-partitions. A
// share-partition whose topic was deleted meanwhile has no state to
// delete any more (the share coordinator answers
// UNKNOWN_TOPIC_OR_PARTITION): that is not an error, or an empty group
// that had such a topic could never be deleted.
func (c *Coordinator) deleteShareState(ctx context.Context, group string, parts []SharePartition) error {
	p := c.sharePersister()
	if p == nil {
		return nil
	}
	for _, sp := range parts {
		err := p.Delete(ctx, SharePartitionKey{Group: group, TopicID: sp.TopicID, Partition: sp.Partition})
		if err != nil && !errors.Is(err, kerr.UnknownTopicOrPartition) {
			return err
		}
	}
	return nil
}

// persisterErrorCode maps a Persister error to the Kafka code to answer:
// its own when it carries one, else UNKNOWN_SERVER_ERROR.
func persisterErrorCode(err error) int16 {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Code
	}
	return kerr.UnknownServerError.Code
}

// IsShareGroup tells whether group is a share group on this coordinator,
// for the offset APIs (which answer GROUP_ID_NOT_FOUND for one, as
// Kafka's ShareGroup.validateOffsetCommit does).
func (c *Coordinator) IsShareGroup(ctx context.Context, group string) bool {
	s, code := c.shardFor(group)
	if code != 0 {
		return false
	}
	is := false
	s.call(ctx, func() { is = s.share[group] != nil })
	return is
}
