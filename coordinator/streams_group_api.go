package coordinator

import (
	"context"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/wire"
)

// A KIP-1071 streams group lives in shard.streams. Like a consumer group,
// its committed offsets live in an Empty classic *Group of the same id in
// shard.groups (its holder), so the offset code serves it; the classic
// APIs answer it as a group of another type.

// StreamsGroupHeartbeat answers StreamsGroupHeartbeat v0-v1 (KIP-1071).
// img is the current topic metadata. It returns the internal topics the
// group needs and the cluster lacks, for the broker to create.
func (c *Coordinator) StreamsGroupHeartbeat(ctx context.Context, client Client, img TopicImage, req *kmsg.StreamsGroupHeartbeatRequest) (*kmsg.StreamsGroupHeartbeatResponse, []StreamsInternalTopic) {
	resp := req.ResponseKind().(*kmsg.StreamsGroupHeartbeatResponse)
	if msg := validateStreamsHeartbeat(req); msg != "" {
		stError(resp, kerr.InvalidRequest, msg)
		return resp, nil
	}
	s, code := c.shardFor(req.Group)
	ctx, cancel := context.WithTimeout(ctx, c.opts.WriteTimeout)
	defer cancel()
	var create []StreamsInternalTopic
	if code == 0 {
		code = s.callWrite(ctx, func() bool {
			create = s.streamsHeartbeat(c.now(), client, img, req, resp)
			return resp.ErrorCode == 0
		})
	}
	if code != 0 {
		*resp = *req.ResponseKind().(*kmsg.StreamsGroupHeartbeatResponse)
		stError(resp, kerr.ErrorForCode(code).(*kerr.Error), "")
		return resp, nil
	}
	return resp, create
}

// streamsGroupsOf returns the shard's streams groups, creating the map.
func (s *shard) streamsGroupsOf() map[string]*StreamsGroup {
	if s.streams == nil {
		s.streams = map[string]*StreamsGroup{}
	}
	return s.streams
}

// streamsHeartbeat runs on the shard goroutine.
func (s *shard) streamsHeartbeat(now time.Time, client Client, img TopicImage, req *kmsg.StreamsGroupHeartbeatRequest, resp *kmsg.StreamsGroupHeartbeatResponse) []StreamsInternalTopic {
	sg := s.streams[req.Group]
	var pre []wire.Record
	created := false
	if sg == nil {
		if s.consumer[req.Group] != nil || s.share[req.Group] != nil {
			stError(resp, kerr.GroupIDNotFound, "Group "+req.Group+" is not a streams group.")
			return nil
		}
		if req.MemberEpoch != 0 {
			msg := "Streams group " + req.Group + " not found."
			if g := s.groups[req.Group]; g != nil && g.state != Dead {
				msg = "Group " + req.Group + " is not a streams group."
			}
			stError(resp, kerr.GroupIDNotFound, msg)
			return nil
		}
		if g := s.groups[req.Group]; g != nil && g.state != Dead {
			// Kafka converts an empty classic group (its offsets
			// stay); a live one is not a streams group.
			if g.state != Empty || g.hasMembers() || g.store != nil {
				stError(resp, kerr.GroupIDNotFound, "Group "+req.Group+" is not a streams group.")
				return nil
			}
			pre = append(pre, wire.Record{Key: groupMetadataKey(req.Group)})
		}
		sg = NewStreamsGroup(&s.c.stConfig, req.Group, now)
		created = true
	}
	sg.cfg = s.c.streamsConfigFor(req.Group)
	saved := sg.clone()
	create := sg.Heartbeat(now, client, img, req, resp)
	if resp.ErrorCode != 0 {
		*sg = *saved
		return nil
	}
	before := saved
	if created {
		before = nil
	}
	if recs := append(pre, streamsRecords(before, sg)...); len(recs) > 0 {
		if err := s.appendLimited(now, recs); err != nil {
			s.logger.Warn("coordinator: writing streams group failed", "group", req.Group, "err", err)
			*sg = *saved
			*resp = *req.ResponseKind().(*kmsg.StreamsGroupHeartbeatResponse)
			stError(resp, writeError(err), "")
			return nil
		}
	}
	if created {
		s.streamsGroupsOf()[req.Group] = sg
		if g := s.groups[req.Group]; g == nil || g.state == Dead {
			s.groups[req.Group] = NewGroup(s.groupConfig, req.Group, now)
		}
	}
	return create
}

// streamsTick fences members of streams groups whose deadline passed.
// REQUIRES: on the shard goroutine.
func (s *shard) streamsTick(now time.Time) {
	for _, sg := range s.streams {
		if d, ok := sg.NextDeadline(); !ok || now.Before(d) {
			continue
		}
		before := sg.clone()
		fenced := sg.Tick(now)
		if recs := streamsRecords(before, sg); len(recs) > 0 {
			if err := s.append(now, recs); err != nil {
				s.logger.Warn("coordinator: writing streams group expiry failed", "group", sg.id, "err", err)
			}
		}
		for _, f := range fenced {
			s.logFenced("streams", sg.id, "tasks", f)
		}
	}
}

// deleteStreamsGroup tombstones an empty streams group's offsets, then
// drops it and its holder.
// REQUIRES: on the shard goroutine.
func (s *shard) deleteStreamsGroup(sg *StreamsGroup, now time.Time) error {
	g := s.groups[sg.id]
	recs, committed := s.offsetTombstones(sg.id, g)
	recs = append(recs, streamsRecords(sg, nil)...)
	if len(recs) > 0 {
		if err := s.append(now, recs); err != nil {
			return err
		}
	}
	tracked := s.trackOffsets(sg.id, slices.Collect(maps.Keys(committed)))
	delete(s.streams, sg.id)
	s.dropHolder(sg.id, g)
	tracked()
	return nil
}

// streamsFetchCheck validates the member of an OffsetFetch v9+ against a
// streams group; 0 when fine or not a streams group.
// REQUIRES: on the shard goroutine.
func (s *shard) streamsFetchCheck(group string, memberID *string, epoch int32) int16 {
	if sg := s.streams[group]; sg != nil {
		return sg.FetchCheck(memberID, epoch)
	}
	return 0
}

// StreamsGroupDescribe answers StreamsGroupDescribe v0-v1.
func (c *Coordinator) StreamsGroupDescribe(ctx context.Context, req *kmsg.StreamsGroupDescribeRequest) *kmsg.StreamsGroupDescribeResponse {
	resp := req.ResponseKind().(*kmsg.StreamsGroupDescribeResponse)
	for _, id := range req.Groups {
		d := kmsg.NewStreamsGroupDescribeResponseGroup()
		d.Group = id
		var code int16
		if id == "" {
			code = kerr.InvalidGroupID.Code
		} else {
			code = c.describeOnShard(ctx, id, func(s *shard) {
				sg := s.streams[id]
				if sg == nil {
					g := s.groups[id]
					d.ErrorCode = kerr.GroupIDNotFound.Code
					d.ErrorMessage = describeNotFound(id, "streams", (g != nil && g.state != Dead) || s.consumer[id] != nil || s.share[id] != nil)
					return
				}
				d = sg.Describe(req.IncludeTopologyDescription)
			})
		}
		if code != 0 {
			d.ErrorCode = code
		}
		d.AuthorizedOperations = describedOperations(req.IncludeAuthorizedOperations, d.ErrorCode)
		resp.Groups = append(resp.Groups, d)
	}
	return resp
}

// listStreamsGroups appends the streams groups of a shard to a ListGroups
// answer, filtered by state names and types.
// REQUIRES: on the shard goroutine.
func (s *shard) listStreamsGroups(req *kmsg.ListGroupsRequest, resp *kmsg.ListGroupsResponse) {
	if !typeListed(req.TypesFilter, "streams") {
		return
	}
	for _, id := range slices.Sorted(maps.Keys(s.streams)) {
		sg := s.streams[id]
		state := sg.StateName()
		// Kafka 4.4 matches the filter against the state's lower-case
		// name, which for NotReady is "not_ready": a filter of
		// "NotReady" lists none.
		lower := strings.ToLower(state)
		if state == "NotReady" {
			lower = "not_ready"
		}
		if len(req.StatesFilter) > 0 && !slices.ContainsFunc(req.StatesFilter, func(st string) bool { return strings.ToLower(st) == lower }) {
			continue
		}
		resp.Groups = append(resp.Groups, listedGroup(id, "streams", state))
	}
}

// streamsConfigFor returns the streams settings of one group: the
// broker's, with the group's overrides (streams.session.timeout.ms,
// streams.heartbeat.interval.ms, streams.num.standby.replicas).
func (c *Coordinator) streamsConfigFor(group string) *StreamsGroupConfig {
	return groupConfigFor(c, group, &c.stConfig, func(o map[string]string, cfg *StreamsGroupConfig) {
		overrideMillis(o, "streams.session.timeout.ms", &cfg.SessionTimeout)
		overrideMillis(o, "streams.heartbeat.interval.ms", &cfg.HeartbeatInterval)
		if v, ok := o["streams.num.standby.replicas"]; ok {
			if n, err := strconv.Atoi(v); err == nil && n >= 0 {
				cfg.NumStandbyReplicas = n
			}
		}
		if v, ok := o["streams.initial.rebalance.delay.ms"]; ok {
			if n, err := strconv.Atoi(v); err == nil && n >= 0 {
				cfg.InitialRebalanceDelay = time.Duration(n) * time.Millisecond
			}
		}
	})
}

// expireStreamsOffsets expires the offsets of a streams group's holder:
// retention after the commit (or after the group emptied), never for the
// topics a live group reads. An empty group with no offsets left past the
// retention is deleted.
// REQUIRES: on the shard goroutine.
func (s *shard) expireStreamsOffsets(sg *StreamsGroup, g *Group, now time.Time) {
	reading := map[string]bool{}
	if !sg.Empty() {
		reading = sg.SourceTopics()
	}
	s.expireModernOffsets(g, now, sg.Empty(), sg.emptySince, reading, "streams", func() error {
		return s.deleteStreamsGroup(sg, now)
	})
}

// restoreStreamsGroups installs the streams groups read at load. The
// members' sessions restart now, as Kafka reschedules them at load.
// REQUIRES: on the shard goroutine.
func (s *shard) restoreStreamsGroups(ls *loadState, now time.Time) {
	for id, l := range ls.streamsGroups {
		if !l.hasMetadata {
			continue
		}
		sg := NewStreamsGroup(&s.c.stConfig, id, now)
		sg.epoch, sg.assignmentEpoch, sg.topology = l.epoch, l.targetEpoch, l.topology
		for mid, m := range l.members {
			var curModern *modernMember
			if cur := l.current[mid]; cur != nil {
				curModern = &cur.modernMember
				m.assigned, m.pendingRevocation = cur.assigned, cur.pendingRevocation
			} else {
				m.assigned, m.pendingRevocation = newStreamsTasks(), taskSet{}
			}
			sg.restoreMember(m, curModern, now, s.c.stConfig.SessionTimeout)
			if t, ok := l.targets[mid]; ok {
				sg.target[mid] = t
			}
		}
		if sg.assignmentEpoch > 0 {
			sg.delayUntil = now // the first assignment was made before
		}
		s.streamsGroupsOf()[id] = sg
		if g := s.groups[id]; g == nil || g.state == Dead {
			s.groups[id] = NewGroup(s.groupConfig, id, now)
		}
		s.logger.Info("coordinator: loaded streams group", "group", id, "members", len(sg.members), "group_epoch", sg.epoch)
	}
}
