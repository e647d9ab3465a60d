package coordinator

import (
	"context"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Node is a broker as FindCoordinator names it.
type Node struct {
	ID   int32
	Host string
	Port int32
}

// Coordinator key types of FindCoordinator.
const (
	keyTypeGroup       = 0
	keyTypeTransaction = 1
)

// FindCoordinator answers FindCoordinator v0-v6 (batched keys v4+). Group
// keys are answered with self when this node serves the group's partition.
// Transaction keys are answered with self too: the transaction coordinator
// will live on the same partitions' leaders.
func (c *Coordinator) FindCoordinator(req *kmsg.FindCoordinatorRequest, self Node) *kmsg.FindCoordinatorResponse {
	resp := req.ResponseKind().(*kmsg.FindCoordinatorResponse)
	keys := req.CoordinatorKeys
	if req.Version < 4 {
		keys = []string{req.CoordinatorKey}
	}
	for _, key := range keys {
		rc := kmsg.NewFindCoordinatorResponseCoordinator()
		rc.Key = key
		rc.NodeID = -1
		rc.Port = -1
		switch req.CoordinatorType {
		case keyTypeGroup:
			if _, code := c.shardFor(key); code != 0 {
				// Kafka: the partition has no leader here (yet).
				rc.ErrorCode = kerr.CoordinatorNotAvailable.Code
			}
		case keyTypeTransaction:
		default:
			rc.ErrorCode = kerr.InvalidRequest.Code
		}
		if rc.ErrorCode == 0 {
			rc.NodeID, rc.Host, rc.Port = self.ID, self.Host, self.Port
		} else {
			rc.ErrorMessage = ptr(kerr.ErrorForCode(rc.ErrorCode).Error())
		}
		resp.Coordinators = append(resp.Coordinators, rc)
	}
	if req.Version < 4 && len(resp.Coordinators) == 1 {
		rc := resp.Coordinators[0]
		resp.Coordinators = nil
		resp.ErrorCode, resp.ErrorMessage = rc.ErrorCode, rc.ErrorMessage
		resp.NodeID, resp.Host, resp.Port = rc.NodeID, rc.Host, rc.Port
	}
	return resp
}

func joinErrorResponse(version, code int16, memberID string) *kmsg.JoinGroupResponse {
	r := joinError(0, code, memberID)[0].Join
	r.Version = version
	return r
}

// JoinGroup answers JoinGroup v0-v9. It blocks until the join phase ends
// (or ctx does).
func (c *Coordinator) JoinGroup(ctx context.Context, client Client, req *kmsg.JoinGroupRequest) *kmsg.JoinGroupResponse {
	if req.Group == "" {
		return joinErrorResponse(req.Version, kerr.InvalidGroupID.Code, req.MemberID)
	}
	// The session timeout is judged before the group and member are
	// looked up, as Kafka 4.4's GroupCoordinatorService.joinGroup does
	// (javap; compat-tests/diff fuzzing: a bogus member of a new group
	// with a timeout out of bounds is INVALID_SESSION_TIMEOUT there).
	if session := time.Duration(req.SessionTimeoutMillis) * time.Millisecond; session < c.opts.MinSessionTimeout || session > c.opts.MaxSessionTimeout {
		return joinErrorResponse(req.Version, kerr.InvalidSessionTimeout.Code, req.MemberID)
	}
	s, code := c.shardFor(req.Group)
	if code != 0 {
		return joinErrorResponse(req.Version, code, req.MemberID)
	}
	ch := make(chan kmsg.Response, 1)
	code = s.call(ctx, func() {
		now := c.now()
		if s.share[req.Group] != nil {
			ch <- joinErrorResponse(req.Version, kerr.InconsistentGroupProtocol.Code, req.MemberID)
			return
		}
		if sg := s.streams[req.Group]; sg != nil {
			// Kafka turns an empty streams group into a classic one
			// (its offsets stay); a live one refuses classic members.
			if !sg.Empty() {
				ch <- joinErrorResponse(req.Version, kerr.InconsistentGroupProtocol.Code, req.MemberID)
				return
			}
			if err := s.append(now, streamsRecords(sg, nil)); err != nil {
				ch <- joinErrorResponse(req.Version, kerr.CoordinatorNotAvailable.Code, req.MemberID)
				return
			}
			delete(s.streams, req.Group)
			s.logger.Info("coordinator: converted the empty streams group to a classic group", "group", req.Group)
		}
		if cg := s.consumer[req.Group]; cg != nil {
			// Kafka turns an empty consumer group into a classic one
			// and serves classic members in a live one (online
			// migration, consumer_group_classic.go).
			if !cg.Empty() {
				ch <- s.classicJoin(cg, now, client, req)
				return
			}
			if err := s.convertToClassic(cg, now); err != nil {
				ch <- joinErrorResponse(req.Version, kerr.CoordinatorNotAvailable.Code, req.MemberID)
				return
			}
		}
		g := s.groups[req.Group]
		if g == nil {
			if req.MemberID != "" {
				ch <- joinErrorResponse(req.Version, kerr.UnknownMemberID.Code, req.MemberID)
				return
			}
			g = NewGroup(s.groupConfig, req.Group, now)
			s.groups[req.Group] = g
		}
		w := s.register(ch, req.Version)
		s.finish(g, now, g.Join(now, w, client, req))
		if g.generation == 0 && g.deletable() {
			delete(s.groups, g.id) // a new group whose first join failed
		}
	})
	if code != 0 {
		return joinErrorResponse(req.Version, code, req.MemberID)
	}
	select {
	case r := <-ch:
		if r == nil {
			return joinErrorResponse(req.Version, kerr.NotCoordinator.Code, req.MemberID)
		}
		jr := r.(*kmsg.JoinGroupResponse)
		if jr.ErrorCode == 0 {
			// The shard sent r after the writes it depends on (the
			// group's metadata), so written covers them.
			if code := s.commitBarrier(ctx, s.written.Load()); code != 0 {
				return joinErrorResponse(req.Version, code, req.MemberID)
			}
		}
		return jr
	case <-ctx.Done():
		return joinErrorResponse(req.Version, kerr.CoordinatorNotAvailable.Code, req.MemberID)
	}
}

func syncErrorResponse(version, code int16) *kmsg.SyncGroupResponse {
	r := kmsg.NewPtrSyncGroupResponse()
	r.Version = version
	r.ErrorCode = code
	return r
}

// SyncGroup answers SyncGroup v0-v5. A follower's SyncGroup in
// CompletingRebalance blocks until the leader's is stored.
func (c *Coordinator) SyncGroup(ctx context.Context, req *kmsg.SyncGroupRequest) *kmsg.SyncGroupResponse {
	if req.Group == "" {
		return syncErrorResponse(req.Version, kerr.InvalidGroupID.Code)
	}
	s, code := c.shardFor(req.Group)
	if code != 0 {
		return syncErrorResponse(req.Version, code)
	}
	ch := make(chan kmsg.Response, 1)
	code = s.call(ctx, func() {
		now := c.now()
		g := s.groups[req.Group]
		if cg := s.consumer[req.Group]; cg != nil {
			ch <- cg.ClassicSync(req)
			return
		}
		if g == nil || s.streams[req.Group] != nil {
			ch <- syncErrorResponse(req.Version, kerr.UnknownMemberID.Code)
			return
		}
		w := s.register(ch, req.Version)
		s.finish(g, now, g.Sync(now, w, req))
	})
	if code != 0 {
		return syncErrorResponse(req.Version, code)
	}
	select {
	case r := <-ch:
		if r == nil {
			return syncErrorResponse(req.Version, kerr.NotCoordinator.Code)
		}
		sr := r.(*kmsg.SyncGroupResponse)
		if sr.ErrorCode == 0 {
			if code := s.commitBarrier(ctx, s.written.Load()); code != 0 {
				return syncErrorResponse(req.Version, code)
			}
		}
		return sr
	case <-ctx.Done():
		return syncErrorResponse(req.Version, kerr.CoordinatorNotAvailable.Code)
	}
}

// Heartbeat answers Heartbeat v0-v4.
func (c *Coordinator) Heartbeat(ctx context.Context, req *kmsg.HeartbeatRequest) *kmsg.HeartbeatResponse {
	resp := req.ResponseKind().(*kmsg.HeartbeatResponse)
	if req.Group == "" {
		resp.ErrorCode = kerr.InvalidGroupID.Code
		return resp
	}
	s, code := c.shardFor(req.Group)
	var written int64
	if code == 0 {
		code = s.call(ctx, func() {
			written = s.written.Load()
			g := s.groups[req.Group]
			if cg := s.consumer[req.Group]; cg != nil {
				resp.ErrorCode = cg.ClassicHeartbeat(c.now(), req)
				return
			}
			if g == nil || s.streams[req.Group] != nil {
				resp.ErrorCode = kerr.UnknownMemberID.Code
				return
			}
			resp.ErrorCode = g.Heartbeat(c.now(), req)
		})
	}
	if code == 0 && resp.ErrorCode == 0 {
		// Kafka answers a heartbeat as a write: only once the shard's
		// earlier writes are committed (barrier.go).
		code = s.commitBarrier(ctx, written)
	}
	if code != 0 {
		resp.ErrorCode = code
	}
	return resp
}

// LeaveGroup answers LeaveGroup v0-v5 (v3+ batches members, each with its
// own error; v0-v2 carry the one member's error at the top).
func (c *Coordinator) LeaveGroup(ctx context.Context, req *kmsg.LeaveGroupRequest) *kmsg.LeaveGroupResponse {
	resp := req.ResponseKind().(*kmsg.LeaveGroupResponse)
	leavers := []Leaver{{MemberID: req.MemberID}}
	if req.Version >= 3 {
		leavers = leavers[:0]
		for _, m := range req.Members {
			leavers = append(leavers, Leaver{MemberID: m.MemberID, InstanceID: m.InstanceID})
		}
	}
	codes := make([]int16, len(leavers))
	var written int64 // the shard's writes the answer waits for
	if req.Group == "" {
		resp.ErrorCode = kerr.InvalidGroupID.Code
		return resp
	}
	s, code := c.shardFor(req.Group)
	if code == 0 {
		code = s.call(ctx, func() {
			defer func() { written = s.written.Load() }()
			g := s.groups[req.Group]
			if cg := s.consumer[req.Group]; cg != nil {
				codes = s.classicLeave(cg, c.now(), leavers)
				return
			}
			if g == nil || s.streams[req.Group] != nil {
				for i := range codes {
					codes[i] = kerr.UnknownMemberID.Code
				}
				return
			}
			now := c.now()
			var replies []Reply
			codes, replies = g.Leave(now, leavers)
			s.finish(g, now, replies)
		})
	}
	if code == 0 && slices.Contains(codes, 0) {
		code = s.commitBarrier(ctx, written)
	}
	if code != 0 {
		resp.ErrorCode = code
		return resp
	}
	if req.Version < 3 {
		resp.ErrorCode = codes[0]
		return resp
	}
	for i, l := range leavers {
		rm := kmsg.NewLeaveGroupResponseMember()
		rm.MemberID = l.MemberID
		rm.InstanceID = l.InstanceID
		rm.ErrorCode = codes[i]
		resp.Members = append(resp.Members, rm)
	}
	return resp
}

// allGroupOperations is the AuthorizedOperations bit set of a group when
// there is no authorizer: READ (3), DELETE (6), DESCRIBE (8),
// DESCRIBE_CONFIGS (10), ALTER_CONFIGS (11), as Kafka 4.4 reports it
// (group configs, KIP-848; checked by compat-tests/diff).
const allGroupOperations = 1<<3 | 1<<6 | 1<<8 | 1<<10 | 1<<11

// groupShard returns the shard of a request's group: INVALID_GROUP_ID for
// an empty group id, else shardFor's answer.
func (c *Coordinator) groupShard(group string) (*shard, int16) {
	if group == "" {
		return nil, kerr.InvalidGroupID.Code
	}
	return c.shardFor(group)
}

// describeOnShard runs describe on the shard goroutine of group id (the
// describe APIs: DescribeGroups, ConsumerGroupDescribe,
// ShareGroupDescribe, which answer a group's own errors in describe). It
// returns the error code of a group describe could not run for: an empty
// id, a group not coordinated here, a shard that stopped.
func (c *Coordinator) describeOnShard(ctx context.Context, id string, describe func(s *shard)) int16 {
	return c.describeOn(ctx, id, true, describe)
}

// describeOn is describeOnShard; emptyInvalid false takes "" as a group
// id like any other (DescribeGroups: Kafka 4.4's describeGroups checks no
// id, and answers "" as an unknown group).
func (c *Coordinator) describeOn(ctx context.Context, id string, emptyInvalid bool, describe func(s *shard)) int16 {
	s, code := c.shardFor(id)
	if emptyInvalid && id == "" {
		s, code = c.groupShard(id)
	}
	if code != 0 {
		return code
	}
	return s.call(ctx, func() { describe(s) })
}

// describedOperations is a described group's AuthorizedOperations: every
// group operation when the request asks for them, unknown (MinInt32) when
// it does not or the group is answered with an error, as in Kafka.
func describedOperations(include bool, errorCode int16) int32 {
	if include && errorCode == 0 {
		return allGroupOperations
	}
	return math.MinInt32
}

// DescribeGroups answers DescribeGroups v0-v6. An unknown group is "Dead"
// with no error before v6 and GROUP_ID_NOT_FOUND from v6 (KIP-1043).
func (c *Coordinator) DescribeGroups(ctx context.Context, req *kmsg.DescribeGroupsRequest) *kmsg.DescribeGroupsResponse {
	resp := req.ResponseKind().(*kmsg.DescribeGroupsResponse)
	for _, id := range req.Groups {
		d := kmsg.NewDescribeGroupsResponseGroup()
		d.Group = id
		d.State = Dead.String()
		code := c.describeOn(ctx, id, false, func(s *shard) {
			if s.share[id] != nil {
				// As for a consumer group: Dead before v6.
				if req.Version >= 6 {
					d.ErrorCode = kerr.GroupIDNotFound.Code
					d.ErrorMessage = ptr("Group " + id + " is not a classic group.")
				}
				return
			}
			g := s.groups[id]
			if g == nil {
				if req.Version >= 6 {
					d.ErrorCode = kerr.GroupIDNotFound.Code
					d.ErrorMessage = ptr("group " + id + " not found")
				}
				return
			}
			if s.consumer[id] != nil || s.streams[id] != nil {
				// Kafka: Dead before v6, GROUP_ID_NOT_FOUND from v6.
				if req.Version >= 6 {
					d.ErrorCode = kerr.GroupIDNotFound.Code
					d.ErrorMessage = ptr("Group " + id + " is not a classic group.")
				}
				return
			}
			d = g.Describe()
		})
		if code != 0 {
			d.ErrorCode = code
		}
		d.AuthorizedOperations = describedOperations(req.IncludeAuthorizedOperations, d.ErrorCode)
		resp.Groups = append(resp.Groups, d)
	}
	return resp
}

// ListGroups answers ListGroups v0-v5 with the groups of every loaded
// partition, filtered by state (v4+) and type (v5+: classic, consumer,
// share and streams groups).
func (c *Coordinator) ListGroups(ctx context.Context, req *kmsg.ListGroupsRequest) *kmsg.ListGroupsResponse {
	resp := req.ResponseKind().(*kmsg.ListGroupsResponse)
	var states []State
	for _, name := range req.StatesFilter {
		if st, ok := parseState(name); ok {
			states = append(states, st)
		} else {
			states = append(states, -1) // matches nothing, as in Kafka
		}
	}
	typeOK := len(req.TypesFilter) == 0 || slices.ContainsFunc(req.TypesFilter, func(t string) bool {
		return strings.EqualFold(t, "classic")
	})
	for _, s := range c.shardList() {
		code := s.call(ctx, func() {
			s.listConsumerGroups(req, resp)
			s.listShareGroups(req, resp)
			s.listStreamsGroups(req, resp)
			if !typeOK {
				return
			}
			for _, g := range s.groups {
				if g.state == Dead || (len(states) > 0 && !slices.Contains(states, g.state)) || s.consumer[g.id] != nil || s.streams[g.id] != nil {
					continue
				}
				lg := kmsg.NewListGroupsResponseGroup()
				lg.Group = g.id
				lg.ProtocolType = g.protocolType
				lg.GroupState = g.state.String()
				lg.GroupType = "classic"
				resp.Groups = append(resp.Groups, lg)
			}
		})
		if code != 0 && resp.ErrorCode == 0 {
			resp.ErrorCode = code
		}
	}
	slices.SortFunc(resp.Groups, func(a, b kmsg.ListGroupsResponseGroup) int { return strings.Compare(a.Group, b.Group) })
	return resp
}

// DeleteGroups answers DeleteGroups v0-v3 (v3 adds error messages): an empty group's offsets and
// metadata are tombstoned; a group with members is NON_EMPTY_GROUP.
func (c *Coordinator) DeleteGroups(ctx context.Context, req *kmsg.DeleteGroupsRequest) *kmsg.DeleteGroupsResponse {
	resp := req.ResponseKind().(*kmsg.DeleteGroupsResponse)
	ctx, cancel := context.WithTimeout(ctx, c.opts.WriteTimeout)
	defer cancel()
	for _, id := range req.Groups {
		rg := kmsg.NewDeleteGroupsResponseGroup()
		rg.Group = id
		// An empty id is a group like any other (Kafka 4.4's
		// GroupCoordinatorService.deleteGroups checks no id; it answers
		// GROUP_ID_NOT_FOUND for "" unless such a group exists).
		s, code := c.shardFor(id)
		if code == 0 && c.IsShareGroup(ctx, id) {
			code = c.deleteShareGroup(ctx, s, id)
			if code != 0 {
				rg.ErrorCode = code
				rg.ErrorMessage = ptr(kerr.ErrorForCode(code).Error()) // v3+
			}
			resp.Groups = append(resp.Groups, rg)
			continue
		}
		if code == 0 {
			code = s.call(ctx, func() {
				if sg := s.streams[id]; sg != nil {
					if !sg.Empty() {
						rg.ErrorCode = kerr.NonEmptyGroup.Code
					} else if err := s.deleteStreamsGroup(sg, c.now()); err != nil {
						s.logger.Warn("coordinator: deleting group failed", "group", id, "err", err)
						rg.ErrorCode = kerr.CoordinatorNotAvailable.Code
					}
					return
				}
				if cg := s.consumer[id]; cg != nil {
					if !cg.Empty() {
						rg.ErrorCode = kerr.NonEmptyGroup.Code
					} else if err := s.deleteConsumerGroup(cg, c.now()); err != nil {
						s.logger.Warn("coordinator: deleting group failed", "group", id, "err", err)
						rg.ErrorCode = kerr.CoordinatorNotAvailable.Code
					}
					return
				}
				g := s.groups[id]
				if g == nil {
					rg.ErrorCode = kerr.GroupIDNotFound.Code
					return
				}
				if rg.ErrorCode = g.DeleteCheck(); rg.ErrorCode != 0 {
					return
				}
				if err := s.deleteGroup(g, c.now()); err != nil {
					s.logger.Warn("coordinator: deleting group failed", "group", id, "err", err)
					rg.ErrorCode = kerr.CoordinatorNotAvailable.Code
				}
			})
		}
		if code == 0 && rg.ErrorCode == 0 {
			// The tombstones, and every write before them, committed.
			code = s.commitBarrier(ctx, s.written.Load())
		}
		if code != 0 {
			rg.ErrorCode = code
		}
		if rg.ErrorCode != 0 {
			rg.ErrorMessage = ptr(kerr.ErrorForCode(rg.ErrorCode).Error()) // v3+
		}
		resp.Groups = append(resp.Groups, rg)
	}
	return resp
}
