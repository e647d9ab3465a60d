package coordinator

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/wire"
)

// The share admin APIs (KIP-932): DescribeShareGroupOffsets,
// AlterShareGroupOffsets and DeleteShareGroupOffsets, over the Persister.
// The group coordinator checks the group (a share group; empty for the
// changes) and which share-partitions it initialized; the share state
// itself is read, reset and deleted through Options.Persister.

// shareGroupView is what the admin APIs read of a share group on its
// shard.
type shareGroupView struct {
	exists    bool
	other     bool // the id is a classic or consumer group
	empty     bool
	epoch     int32
	initiated map[assignTP]bool
	byTopic   map[[16]byte][]int32
}

func (c *Coordinator) viewShareGroup(ctx context.Context, s *shard, group string) (shareGroupView, int16) {
	var v shareGroupView
	code := s.call(ctx, func() {
		sg := s.share[group]
		if sg == nil {
			v.other = s.otherGroupType(group)
			return
		}
		v.exists, v.empty, v.epoch = true, sg.Empty(), sg.epoch
		v.initiated = map[assignTP]bool{}
		v.byTopic = map[[16]byte][]int32{}
		for _, sp := range sg.InitializedPartitions() {
			v.initiated[assignTP{sp.TopicID, sp.Partition}] = true
			v.byTopic[sp.TopicID] = append(v.byTopic[sp.TopicID], sp.Partition)
		}
	})
	return v, code
}

// DescribeShareGroupOffsets answers DescribeShareGroupOffsets v0-v1: per
// share-partition, its start offset and the leader epoch of its last
// state write, from the Persister's summary. Topics null means every
// share-partition the group initialized. A partition without state, or of
// a group that does not exist, has start offset -1 (no error, as Kafka
// 4.4). Lag (v1) is -1 here; DescribeShareGroupOffsetsLag computes it. A
// partition the topic does not have is UNKNOWN_TOPIC_OR_PARTITION (Kafka
// 4.4 never answers such a request).
func (c *Coordinator) DescribeShareGroupOffsets(ctx context.Context, img TopicImage, req *kmsg.DescribeShareGroupOffsetsRequest) *kmsg.DescribeShareGroupOffsetsResponse {
	return c.DescribeShareGroupOffsetsLag(ctx, img, req, nil)
}

func (c *Coordinator) describeShareOffsets(ctx context.Context, img TopicImage, rg kmsg.DescribeShareGroupOffsetsRequestGroup, out kmsg.DescribeShareGroupOffsetsResponseGroup, latest LatestOffsets) kmsg.DescribeShareGroupOffsetsResponseGroup {
	setErr := func(code int16) kmsg.DescribeShareGroupOffsetsResponseGroup {
		out.ErrorCode, out.ErrorMessage, out.Topics = code, errorMessage(code), nil
		return out
	}
	s, code := c.groupShard(rg.GroupID)
	if code != 0 {
		return setErr(code)
	}
	v, code := c.viewShareGroup(ctx, s, rg.GroupID)
	if code != 0 {
		return setErr(code)
	}
	// An unknown group is answered as one without state (Kafka 4.4:
	// no error, start offset -1); a classic or consumer group of that
	// id is GROUP_ID_NOT_FOUND.
	if v.other {
		return setErr(kerr.GroupIDNotFound.Code)
	}
	type want struct {
		name       string
		id         [16]byte
		partitions []int32
		unknown    bool
		bad        map[int32]bool // partitions the topic does not have
	}
	var wants []want
	if rg.Topics == nil {
		for _, id := range sortedIDs(v.byTopic) {
			name := ""
			if c.opts.Topics != nil {
				var ok bool
				if name, ok = c.opts.Topics.TopicName(id); !ok {
					// Deleted since (its share state with it): Kafka's
					// group coordinator forgets the topic on deletion,
					// samsa at the group's next heartbeat.
					continue
				}
			}
			wants = append(wants, want{name: name, id: id, partitions: v.byTopic[id]})
		}
	} else {
		for _, t := range rg.Topics {
			id, n, ok := img.TopicByName(t.Topic)
			w := want{name: t.Topic, id: id, partitions: t.Partitions, unknown: !ok, bad: map[int32]bool{}}
			for _, p := range t.Partitions {
				if p < 0 || p >= n {
					w.bad[p] = true
				}
			}
			wants = append(wants, w)
		}
	}
	for _, w := range wants {
		ot := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopic()
		ot.Topic, ot.TopicID = w.name, w.id
		lags := map[int32]int32{} // partition -> delivery-complete count
		for _, p := range w.partitions {
			op := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopicPartition()
			// Kafka 4.4: -1, 0, -1 for a share-partition
			// without state.
			op.StartOffset, op.LeaderEpoch, op.Lag = -1, 0, -1
			op.Partition = p
			switch {
			case w.unknown || w.bad[p]:
				op.ErrorCode = kerr.UnknownTopicOrPartition.Code
			default:
				if pers := c.sharePersister(); pers != nil && v.initiated[assignTP{w.id, p}] {
					st, ok, err := pers.ReadSummary(ctx, SharePartitionKey{Group: rg.GroupID, TopicID: w.id, Partition: p})
					switch {
					case err != nil:
						op.ErrorCode = persisterErrorCode(err)
					case ok:
						op.StartOffset, op.LeaderEpoch = st.StartOffset, st.LeaderEpoch
						if st.StartOffset != -1 && st.DeliveryCompleteCount != -1 {
							lags[p] = st.DeliveryCompleteCount
						}
					}
				}
			}
			if op.ErrorCode != 0 {
				op.ErrorMessage = errorMessage(op.ErrorCode)
			}
			ot.Partitions = append(ot.Partitions, op)
		}
		if latest != nil && len(lags) > 0 {
			setShareLags(ctx, latest, w.id, w.name, ot.Partitions, lags)
		}
		out.Topics = append(out.Topics, ot)
	}
	return out
}

// AlterShareGroupOffsets answers AlterShareGroupOffsets v0: the group must
// be an empty share group (one that does not exist yet is created, as
// Kafka does); each named share-partition is re-initialized at the given
// start offset with a new state epoch (the group epoch, bumped), which
// fences any partition leader still holding the old state.
func (c *Coordinator) AlterShareGroupOffsets(ctx context.Context, img TopicImage, req *kmsg.AlterShareGroupOffsetsRequest) *kmsg.AlterShareGroupOffsetsResponse {
	resp := req.ResponseKind().(*kmsg.AlterShareGroupOffsetsResponse)
	ctx, cancel := context.WithTimeout(ctx, c.opts.WriteTimeout)
	defer cancel()
	top := func(code int16) *kmsg.AlterShareGroupOffsetsResponse {
		resp.ErrorCode, resp.ErrorMessage, resp.Topics = code, errorMessage(code), nil
		return resp
	}
	s, code := c.groupShard(req.GroupID)
	if code != 0 {
		return top(code)
	}
	// Validate topics and partitions first.
	var todo []ShareInit
	for _, t := range req.Topics {
		ot := kmsg.NewAlterShareGroupOffsetsResponseTopic()
		ot.Topic = t.Topic
		id, n, ok := img.TopicByName(t.Topic)
		ot.TopicID = id
		for _, p := range t.Partitions {
			op := kmsg.NewAlterShareGroupOffsetsResponseTopicPartition()
			op.Partition = p.Partition
			if !ok || p.Partition < 0 || p.Partition >= n {
				op.ErrorCode = kerr.UnknownTopicOrPartition.Code
				op.ErrorMessage = ptr(kerr.UnknownTopicOrPartition.Message)
			} else {
				todo = append(todo, ShareInit{SharePartition{TopicID: id, Topic: t.Topic, Partition: p.Partition}, p.StartOffset})
			}
			ot.Partitions = append(ot.Partitions, op)
		}
		resp.Topics = append(resp.Topics, ot)
	}
	// Bump the epoch of an empty (or new) share group: the state epoch
	// of the reset.
	var epoch int32
	var written int64
	code = s.callCode(ctx, func() (code int16) {
		sg := s.share[req.GroupID]
		if sg == nil {
			if s.otherGroupType(req.GroupID) {
				code = kerr.GroupIDNotFound.Code
				return code
			}
			sg = NewShareGroup(&s.c.sgConfig, req.GroupID, c.now())
		} else if !sg.Empty() {
			code = kerr.NonEmptyGroup.Code
			return code
		}
		next := sg.epoch + 1
		if err := s.append(c.now(), []wire.Record{recSGMetadata(sg.id, next, sg.metadataHash)}); err != nil {
			code = writeError(err).Code
			return code
		}
		sg.epoch = next
		s.shareGroupsOf()[sg.id] = sg
		epoch = next
		written = s.written.Load()
		return 0
	})
	if code == 0 {
		code = s.commitBarrier(ctx, written)
	}
	if code != 0 {
		return top(code)
	}
	var done []SharePartition
	failed := map[assignTP]int16{}
	for _, in := range todo {
		if p := c.sharePersister(); p != nil {
			if err := p.Initialize(ctx, SharePartitionKey{Group: req.GroupID, TopicID: in.TopicID, Partition: in.Partition}, epoch, in.StartOffset); err != nil {
				failed[assignTP{in.TopicID, in.Partition}] = persisterErrorCode(err)
				continue
			}
		}
		done = append(done, in.SharePartition)
	}
	code = s.callCode(ctx, func() (code int16) {
		sg := s.share[req.GroupID]
		if sg == nil || len(done) == 0 {
			return code
		}
		for _, sp := range done {
			sg.addInitialized(sp)
		}
		if err := s.append(c.now(), []wire.Record{recSGStatePartitions(sg.id, sg.initialized)}); err != nil {
			code = writeError(err).Code
			return code
		}
		written = s.written.Load()
		return 0
	})
	if code == 0 {
		code = s.commitBarrier(ctx, written)
	}
	for i := range resp.Topics {
		for j := range resp.Topics[i].Partitions {
			op := &resp.Topics[i].Partitions[j]
			if op.ErrorCode != 0 {
				continue
			}
			if fc, ok := failed[assignTP{resp.Topics[i].TopicID, op.Partition}]; ok {
				op.ErrorCode = fc
			} else if code != 0 {
				op.ErrorCode = code
			}
			if op.ErrorCode != 0 {
				op.ErrorMessage = errorMessage(op.ErrorCode)
			}
		}
	}
	return resp
}

// DeleteShareGroupOffsets answers DeleteShareGroupOffsets v0: the group
// must be an empty share group; the share state of every share-partition
// of the named topics is deleted and the group forgets them (a later
// member initializes them afresh, from share.auto.offset.reset). A topic
// that does not exist, or of which the group has no state, is
// UNKNOWN_TOPIC_OR_PARTITION (the latter "There is no offset information
// to delete.", as Kafka 4.4).
func (c *Coordinator) DeleteShareGroupOffsets(ctx context.Context, img TopicImage, req *kmsg.DeleteShareGroupOffsetsRequest) *kmsg.DeleteShareGroupOffsetsResponse {
	resp := req.ResponseKind().(*kmsg.DeleteShareGroupOffsetsResponse)
	ctx, cancel := context.WithTimeout(ctx, c.opts.WriteTimeout)
	defer cancel()
	top := func(code int16) *kmsg.DeleteShareGroupOffsetsResponse {
		resp.ErrorCode, resp.ErrorMessage, resp.Topics = code, errorMessage(code), nil
		return resp
	}
	s, code := c.groupShard(req.GroupID)
	if code != 0 {
		return top(code)
	}
	v, code := c.viewShareGroup(ctx, s, req.GroupID)
	switch {
	case code != 0:
		return top(code)
	case !v.exists:
		return top(kerr.GroupIDNotFound.Code)
	case !v.empty:
		return top(kerr.NonEmptyGroup.Code)
	}
	var gone []SharePartition
	for _, t := range req.Topics {
		ot := kmsg.NewDeleteShareGroupOffsetsResponseTopic()
		ot.Topic = t.Topic
		id, _, ok := img.TopicByName(t.Topic)
		ot.TopicID = id
		if !ok {
			ot.ErrorCode = kerr.UnknownTopicOrPartition.Code
			ot.ErrorMessage = ptr(kerr.UnknownTopicOrPartition.Message)
			resp.Topics = append(resp.Topics, ot)
			continue
		}
		if len(v.byTopic[id]) == 0 {
			// Kafka's message for a topic the group has no state of.
			ot.ErrorCode = kerr.UnknownTopicOrPartition.Code
			ot.ErrorMessage = ptr("There is no offset information to delete.")
			resp.Topics = append(resp.Topics, ot)
			continue
		}
		var parts []SharePartition
		for _, p := range v.byTopic[id] {
			parts = append(parts, SharePartition{TopicID: id, Topic: t.Topic, Partition: p})
		}
		if err := c.deleteShareState(ctx, req.GroupID, parts); err != nil {
			ot.ErrorCode = persisterErrorCode(err)
			ot.ErrorMessage = errorMessage(ot.ErrorCode)
		} else {
			gone = append(gone, parts...)
		}
		resp.Topics = append(resp.Topics, ot)
	}
	if len(gone) == 0 {
		return resp
	}
	var written int64
	code = s.callCode(ctx, func() (code int16) {
		sg := s.share[req.GroupID]
		if sg == nil {
			return code
		}
		saved := sg.clone()
		if err := s.append(c.now(), sg.ForgetPartitions(gone)); err != nil {
			*sg = *saved
			code = writeError(err).Code
			return code
		}
		written = s.written.Load()
		return 0
	})
	if code == 0 {
		code = s.commitBarrier(ctx, written)
	}
	if code != 0 {
		return top(code)
	}
	return resp
}

// errorMessage is Kafka's default message for a non-zero error code, as
// the share admin APIs answer it.
func errorMessage(code int16) *string {
	return ptr(kerr.ErrorForCode(code).(*kerr.Error).Message)
}

// callCode runs fn on the shard goroutine and returns its error code, or
// the shard's when fn could not run.
func (s *shard) callCode(ctx context.Context, fn func() int16) int16 {
	var code int16
	if rc := s.call(ctx, func() { code = fn() }); rc != 0 {
		return rc
	}
	return code
}
