package coordinator

import (
	"context"
	"maps"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/wire"
)

// A KIP-848 consumer group lives in shard.consumer. Its committed offsets
// live, like every group's, in a classic *Group of the same id in
// shard.groups (its "holder", always Empty and never written as
// GroupMetadata), so the offset code serves both kinds; the classic APIs
// check shard.consumer first and answer as Kafka does for a group of the
// other type.

// ConsumerGroupHeartbeat answers ConsumerGroupHeartbeat v0-v1 (KIP-848).
// img is the current topic metadata.
func (c *Coordinator) ConsumerGroupHeartbeat(ctx context.Context, client Client, img TopicImage, req *kmsg.ConsumerGroupHeartbeatRequest) *kmsg.ConsumerGroupHeartbeatResponse {
	resp := req.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
	if e, msg := validateHeartbeat(&c.cgConfig, req); e != nil {
		hbError(resp, e, msg)
		return resp
	}
	if req.MemberID == "" && req.MemberEpoch == 0 {
		req.MemberID = randomUUID() // v0: the coordinator names new members
	}
	s, code := c.shardFor(req.Group)
	// The answer comes within the write timeout, counted from the
	// request's arrival: a shard cut off from its replicas is busy for a
	// write timeout with each write it makes (an offset commit, an
	// expiry), and a heartbeat queued behind several of them was held
	// longer than a session timeout, while the new coordinator expired
	// the member, which went on consuming. Kafka's runtime never waits
	// for the ISR on its thread, so its answer comes within the write
	// timeout; ours does too, COORDINATOR_NOT_AVAILABLE if the shard did
	// not get to it (the heartbeat then did nothing) or its writes were
	// not committed in time.
	ctx, cancel := context.WithTimeout(ctx, c.opts.WriteTimeout)
	defer cancel()
	if code == 0 {
		// Kafka answers a heartbeat as a write: once its records, and
		// every write the shard made before, are committed (barrier.go).
		code = s.callWrite(ctx, func() bool {
			s.consumerHeartbeat(c.now(), client, img, req, resp)
			return resp.ErrorCode == 0
		})
	}
	if code != 0 {
		*resp = *req.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
		hbError(resp, kerr.ErrorForCode(code).(*kerr.Error), "")
	}
	return resp
}

// consumerHeartbeat runs on the shard goroutine.
func (s *shard) consumerHeartbeat(now time.Time, client Client, img TopicImage, req *kmsg.ConsumerGroupHeartbeatRequest, resp *kmsg.ConsumerGroupHeartbeatResponse) {
	cg := s.consumer[req.Group]
	var pre []wire.Record
	created := false
	var upgraded *Group // the live classic group converted, if any
	if cg == nil && (s.share[req.Group] != nil || s.streams[req.Group] != nil) {
		hbError(resp, kerr.GroupIDNotFound, "Group "+req.Group+" is not a consumer group.")
		return
	}
	if cg == nil {
		if req.MemberEpoch != 0 {
			// Kafka only creates a group for a join (epoch 0).
			msg := "Consumer group " + req.Group + " not found."
			if g := s.groups[req.Group]; g != nil && g.state != Dead {
				msg = "Group " + req.Group + " is not a consumer group."
			}
			hbError(resp, kerr.GroupIDNotFound, msg)
			return
		}
		if g := s.groups[req.Group]; g != nil {
			switch {
			case g.store != nil:
				// Its metadata is being written: the member
				// retries.
				hbError(resp, kerr.CoordinatorNotAvailable, "")
				return
			case g.state != Dead && len(g.members) > 0:
				// Online upgrade of a live classic group
				// (consumer_group_classic.go).
				conv, recs, msg := convertClassicGroup(s.c.consumerConfigFor(req.Group), g, img, now)
				if conv == nil {
					s.logger.Info("coordinator: "+msg, "group", req.Group)
					hbError(resp, kerr.GroupIDNotFound, msg)
					return
				}
				cg, upgraded = conv, g
				pre = append(pre, wire.Record{Key: groupMetadataKey(req.Group)})
				pre = append(pre, recs...)
			case g.state != Empty || g.hasMembers():
				hbError(resp, kerr.GroupIDNotFound, "Group "+req.Group+" is not a consumer group.")
				return
			default:
				pre = append(pre, wire.Record{Key: groupMetadataKey(req.Group)})
			}
		}
		if cg == nil {
			cg = NewConsumerGroup(&s.c.cgConfig, req.Group, now)
		}
		created = true
	}
	cg.cfg = s.c.consumerConfigFor(req.Group)
	saved := cg.clone()
	recs := cg.Heartbeat(now, client, img, req, resp)
	if resp.ErrorCode != 0 {
		return
	}
	tracked := func() {}
	if recs = append(pre, recs...); len(recs) > 0 {
		if err := s.appendLimited(now, recs); err != nil {
			s.logger.Warn("coordinator: writing consumer group failed", "group", req.Group, "err", err)
			if !created {
				*cg = *saved
			}
			*resp = *req.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
			hbError(resp, writeError(err), "")
			return
		}
		before := saved
		if created {
			before = nil
		}
		tracked = s.trackConsumerGroup(req.Group, before)
	}
	if upgraded != nil {
		// The classic group's offsets go to the consumer group's
		// holder; its blocked joins and syncs rejoin.
		holder := NewGroup(s.groupConfig, req.Group, now)
		holder.offsets = upgraded.offsets
		s.groups[req.Group] = holder
		s.finish(upgraded, now, upgraded.failPending(kerr.RebalanceInProgress.Code))
		s.logger.Info("coordinator: converted the classic group to a consumer group", "group", req.Group, "members", len(upgraded.members))
	}
	if created {
		s.addConsumerGroup(cg, now)
	}
	tracked()
	if req.MemberEpoch < 0 && !created {
		s.maybeDowngrade(cg, saved.epoch, now)
	}
}

// maybeDowngrade converts a consumer group left with only classic members
// back to a classic group, when the policy allows it (Kafka's
// convertToClassicGroup): the consumer group's records go, the classic
// group's metadata is written, and the group prepares a rebalance, so its
// members rejoin at their next heartbeat. A failed write is logged and
// the group stays a consumer group.
// REQUIRES: on the shard goroutine.
//
// generation is the group epoch before the leave or expiry.
func (s *shard) maybeDowngrade(cg *ConsumerGroup, generation int32, now time.Time) {
	cg.cfg = s.c.consumerConfigFor(cg.id)
	if !cg.downgradable() {
		return
	}
	cl := cg.toClassicGroup(s.groupConfig, generation, now)
	var recs []wire.Record
	for _, id := range slices.Sorted(maps.Keys(cg.members)) {
		recs = append(recs, recsCGMemberGone(cg.id, id)...)
	}
	recs = append(recs, recsCGGroupGone(cg.id)...)
	recs = append(recs, wire.Record{Key: groupMetadataKey(cg.id), Value: cl.metadataValue().AppendTo(nil)})
	if err := s.appendLimited(now, recs); err != nil {
		s.logger.Warn("coordinator: downgrading the consumer group failed", "group", cg.id, "err", err)
		return
	}
	tracked := s.trackConsumerGroup(cg.id, cg)
	delete(s.consumer, cg.id)
	if holder := s.groups[cg.id]; holder != nil {
		cl.offsets = holder.offsets
	}
	s.groups[cg.id] = cl
	tracked()
	s.logger.Info("coordinator: converted the consumer group to a classic group", "group", cg.id, "members", len(cl.members))
	s.finish(cl, now, cl.prepareRebalance(now))
}

// addConsumerGroup installs a consumer group and its offsets holder.
// REQUIRES: on the shard goroutine.
func (s *shard) addConsumerGroup(cg *ConsumerGroup, now time.Time) {
	if s.consumer == nil {
		s.consumer = map[string]*ConsumerGroup{}
	}
	s.consumer[cg.id] = cg
	if g := s.groups[cg.id]; g == nil || g.state == Dead {
		s.groups[cg.id] = NewGroup(s.groupConfig, cg.id, now)
	}
}

// consumerTick expires members of consumer groups whose deadline passed.
// A failed write is logged and the removal kept: the member is gone from
// memory either way, and retrying at once would spin.
// REQUIRES: on the shard goroutine.
func (s *shard) consumerTick(now time.Time) {
	for _, cg := range s.consumer {
		if d, ok := cg.NextDeadline(); !ok || now.Before(d) {
			continue
		}
		var before *ConsumerGroup
		if _, ok := s.pipelined(); ok {
			before = cg.clone()
		}
		epochBefore := cg.epoch
		for _, f := range cg.due(now) {
			s.logFenced("consumer", cg.id, "partitions", f)
		}
		if recs := cg.Tick(now); len(recs) > 0 {
			if err := s.append(now, recs); err != nil {
				s.logger.Warn("coordinator: writing consumer group expiry failed", "group", cg.id, "err", err)
			} else {
				s.trackConsumerGroup(cg.id, before)()
				s.maybeDowngrade(cg, epochBefore, now)
			}
		}
	}
}

// deleteConsumerGroup tombstones an empty consumer group's records and
// offsets in one batch, then drops it and its holder.
// REQUIRES: on the shard goroutine.
func (s *shard) deleteConsumerGroup(cg *ConsumerGroup, now time.Time) error {
	g := s.groups[cg.id]
	// Pending transactional offsets go too, as for a classic group.
	recs, committed := s.offsetTombstones(cg.id, g)
	recs = append(recs, recsCGGroupGone(cg.id)...)
	if err := s.append(now, recs); err != nil {
		return err
	}
	trackedOffsets := s.trackOffsets(cg.id, slices.Collect(maps.Keys(committed)))
	trackedGroup := s.trackConsumerGroup(cg.id, cg)
	delete(s.consumer, cg.id)
	s.dropHolder(cg.id, g)
	trackedOffsets()
	trackedGroup()
	return nil
}

// convertToClassic turns an empty consumer group back into a classic one
// (its holder, with the offsets), for a JoinGroup.
// REQUIRES: on the shard goroutine.
func (s *shard) convertToClassic(cg *ConsumerGroup, now time.Time) error {
	if err := s.append(now, recsCGGroupGone(cg.id)); err != nil {
		return err
	}
	delete(s.consumer, cg.id)
	if s.groups[cg.id] == nil {
		s.groups[cg.id] = NewGroup(s.groupConfig, cg.id, now)
	}
	return nil
}

// expireConsumerOffsets expires the offsets of a consumer group's holder:
// retention after the commit, and never for topics a member subscribes
// to. An empty group with no offsets left is deleted.
// REQUIRES: on the shard goroutine.
func (s *shard) expireConsumerOffsets(cg *ConsumerGroup, g *Group, now time.Time) {
	subscribed := map[string]bool{}
	if !cg.Empty() {
		subscribed = cg.SubscribedTopics()
	}
	s.expireModernOffsets(g, now, cg.Empty(), cg.emptySince, subscribed, "consumer", func() error {
		return s.deleteConsumerGroup(cg, now)
	})
}

// expireModernOffsets expires the offsets of a consumer or streams group's
// holder g: retention after the commit (or after the group emptied, when
// empty), never for the topics in keep or with a transaction still
// writing them, as Kafka keeps partitions with pending transactional
// offsets. An empty group with no offsets left past the retention is
// deleted with deleteGroup.
// REQUIRES: on the shard goroutine.
func (s *shard) expireModernOffsets(g *Group, now time.Time, empty bool, emptySince time.Time, keep map[string]bool, kind string, deleteGroup func() error) {
	retention := s.c.opts.OffsetsRetention
	var recs []wire.Record
	var gone []topicPartition
	for tp, e := range g.offsets {
		base := e.commitTime
		if empty && emptySince.After(base) {
			base = emptySince
		}
		if keep[tp.topic] || now.Before(base.Add(retention)) || s.pendingTxn().has(g.id, tp) {
			continue
		}
		recs = append(recs, wire.Record{Key: offsetCommitKey(g.id, tp)})
		gone = append(gone, tp)
	}
	if len(recs) > 0 {
		if err := s.append(now, recs); err != nil {
			s.logger.Warn("coordinator: expiring offsets failed", "group", g.id, "err", err)
			return
		}
		tracked := s.trackOffsets(g.id, gone)
		for _, tp := range gone {
			delete(g.offsets, tp)
		}
		tracked()
	}
	if empty && len(g.offsets) == 0 && !now.Before(emptySince.Add(retention)) && !s.pendingTxn().hasGroup(g.id) {
		if err := deleteGroup(); err != nil {
			s.logger.Warn("coordinator: expiring "+kind+" group failed", "group", g.id, "err", err)
		}
	}
}

// consumerFetchCheck validates the member id and epoch of an OffsetFetch
// v9+ group against a consumer group; 0 when fine or not a consumer group
// (fetchGroup answers the other errors).
func (c *Coordinator) consumerFetchCheck(ctx context.Context, group string, memberID *string, epoch int32) int16 {
	s, code := c.shardFor(group)
	if code != 0 || group == "" {
		return 0
	}
	var out int16
	s.call(ctx, func() {
		if cg := s.consumer[group]; cg != nil {
			out = cg.FetchCheck(memberID, epoch)
		}
		if out == 0 {
			out = s.streamsFetchCheck(group, memberID, epoch)
		}
	})
	return out
}

// ConsumerGroupDescribe answers ConsumerGroupDescribe v0-v1.
func (c *Coordinator) ConsumerGroupDescribe(ctx context.Context, req *kmsg.ConsumerGroupDescribeRequest) *kmsg.ConsumerGroupDescribeResponse {
	resp := req.ResponseKind().(*kmsg.ConsumerGroupDescribeResponse)
	for _, id := range req.Groups {
		d := kmsg.NewConsumerGroupDescribeResponseGroup()
		d.Group = id
		code := c.describeOnShard(ctx, id, func(s *shard) {
			// A read of the committed state, as Kafka's: a
			// member whose join is past the high watermark
			// is not shown yet (pipeline.go).
			cg := s.committedConsumerGroup(id)
			if cg == nil {
				g := s.groups[id]
				d.ErrorCode = kerr.GroupIDNotFound.Code
				d.ErrorMessage = describeNotFound(id, "consumer", (g != nil && g.state != Dead) || s.share[id] != nil)
				return
			}
			d = cg.Describe(cg.topicName)
		})
		if code != 0 {
			d.ErrorCode = code
		}
		d.AuthorizedOperations = describedOperations(req.IncludeAuthorizedOperations, d.ErrorCode)
		resp.Groups = append(resp.Groups, d)
	}
	return resp
}

// listConsumerGroups appends the consumer groups of a shard to a
// ListGroups answer, filtered by state names and types as Kafka does.
// REQUIRES: on the shard goroutine.
func (s *shard) listConsumerGroups(req *kmsg.ListGroupsRequest, resp *kmsg.ListGroupsResponse) {
	if !typeListed(req.TypesFilter, "consumer") {
		return
	}
	// A read of the committed state, as ConsumerGroupDescribe.
	s.foldConsumerGroups()
	ids := slices.Collect(maps.Keys(s.consumer))
	for id := range s.uncommittedGroups {
		// A consumer group deleted past the high watermark, unless a
		// classic group of that id is listed already.
		if g := s.groups[id]; s.consumer[id] == nil && (g == nil || g.state == Dead) {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	for _, id := range ids {
		cg := s.committedConsumerGroup(id)
		if cg == nil {
			continue
		}
		if state := cg.StateName(); stateListed(req.StatesFilter, state) {
			resp.Groups = append(resp.Groups, listedGroup(id, "consumer", state))
		}
	}
}

// restoreConsumerGroups installs the consumer groups read at load.
// REQUIRES: on the shard goroutine.
func (s *shard) restoreConsumerGroups(ls *loadState, now time.Time) {
	for id, l := range ls.consumerGroups {
		if !l.hasMetadata {
			continue
		}
		cg := restoreConsumerGroup(&s.c.cgConfig, id, l, now)
		s.addConsumerGroup(cg, now)
		if len(cg.members) > 0 {
			// The members' sessions restart now (Kafka logs this at INFO).
			s.logger.Info("coordinator: loaded consumer group", "group", id, "members", len(cg.members),
				"group_epoch", cg.epoch, "session_timeout", s.c.cgConfig.SessionTimeout)
		}
	}
}
