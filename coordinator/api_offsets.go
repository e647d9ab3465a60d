package coordinator

import (
	"context"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/wire"
)

// topicName resolves a request topic: by name, or from v10 by ID through
// Options.Topics. A caller that resolved IDs itself (the broker's handler
// does, against the metadata image) fills the name in and it is used as is.
func (c *Coordinator) topicName(version int16, name string, id [16]byte) (string, bool) {
	if name != "" || version < 10 {
		return name, true
	}
	if c.opts.Topics == nil {
		return "", false
	}
	return c.opts.Topics.TopicName(id)
}

// OffsetCommit answers OffsetCommit v0-v10. Members commit with their
// generation; a simple consumer commits with generation -1 to an empty (or
// new) group. The records are written before the offsets are visible.
func (c *Coordinator) OffsetCommit(ctx context.Context, req *kmsg.OffsetCommitRequest) *kmsg.OffsetCommitResponse {
	resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
	var codes partitionCodes
	for _, t := range req.Topics {
		rt := kmsg.NewOffsetCommitResponseTopic()
		rt.Topic, rt.TopicID = t.Topic, t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetCommitResponseTopicPartition()
			rp.Partition = p.Partition
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	for i := range resp.Topics {
		for j := range resp.Topics[i].Partitions {
			codes = append(codes, &resp.Topics[i].Partitions[j].ErrorCode)
		}
	}
	c.commitAnswer(ctx, req.Group, codes, func(s *shard) { c.commitOn(s, req, resp, codes.setUnset) })
	return resp
}

// partitionCodes are the error codes of every partition of an OffsetCommit
// or TxnOffsetCommit answer.
type partitionCodes []*int16

// setUnset gives code to every partition that has no error yet.
func (pc partitionCodes) setUnset(code int16) {
	for _, c := range pc {
		if *c == 0 {
			*c = code
		}
	}
}

// anyOK tells whether a partition has no error.
func (pc partitionCodes) anyOK() bool {
	for _, c := range pc {
		if *c == 0 {
			return true
		}
	}
	return false
}

// commitAnswer runs commit, the shard side of an OffsetCommit or
// TxnOffsetCommit to group, through commitOffsets, and gives every
// partition left without an error the error of the whole request, if
// any: INVALID_GROUP_ID for an empty group id (commit does not run), or
// commitOffsets' code.
func (c *Coordinator) commitAnswer(ctx context.Context, group string, codes partitionCodes, commit func(*shard)) {
	if group == "" {
		codes.setUnset(kerr.InvalidGroupID.Code)
		return
	}
	if code := c.commitOffsets(ctx, group, commit, codes.anyOK); code != 0 {
		codes.setUnset(code)
	}
}

// commitOffsets is the shard side of OffsetCommit and TxnOffsetCommit: it
// runs commit on group's shard and, when anyOK then says a partition was
// accepted, waits until commit's writes, and every write the shard made
// before them, are committed. The answer comes within the write timeout
// of the request's arrival, however many writes the shard made before it
// (pipeline.go). It returns the error code for every partition that has
// none yet (0: none).
func (c *Coordinator) commitOffsets(ctx context.Context, group string, commit func(*shard), anyOK func() bool) int16 {
	s, code := c.shardFor(group)
	if code != 0 {
		return code
	}
	ctx, cancel := context.WithTimeout(ctx, c.opts.WriteTimeout)
	defer cancel()
	return s.callWrite(ctx, func() bool {
		commit(s)
		return anyOK()
	})
}

// commitOn runs on the shard goroutine.
func (c *Coordinator) commitOn(s *shard, req *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, setAll func(int16)) {
	now := c.now()
	if s.share[req.Group] != nil {
		// Kafka's ShareGroup.validateOffsetCommit.
		setAll(kerr.GroupIDNotFound.Code)
		return
	}
	g := s.groups[req.Group]
	created := false
	cg := s.consumer[req.Group] // KIP-848: nil for other groups
	sg := s.streams[req.Group]  // KIP-1071: nil for other groups
	switch {
	case cg != nil && cg.members[req.MemberID] != nil && cg.members[req.MemberID].classic != nil:
		// A classic member of the consumer group (online migration).
		if code := cg.classicCommitCheck(cg.members[req.MemberID], req.Generation); code != 0 {
			setAll(code)
			return
		}
	case cg != nil: // g is its offsets holder
		if code := cg.OffsetCommitCheck(req.Version, req.Generation, req.MemberID); code != 0 {
			setAll(code)
			return
		}
	case sg != nil: // g is its offsets holder
		if code := sg.CommitCheck(req.Version, req.Generation, req.MemberID); code != 0 {
			setAll(code)
			return
		}
	case g != nil:
		if code := g.CommitCheck(now, req.Generation, req.MemberID, req.InstanceID); code != 0 {
			setAll(code)
			return
		}
	case req.Generation < 0:
		g = NewGroup(s.groupConfig, req.Group, now)
		s.groups[req.Group] = g
		created = true
	case req.Version >= 9:
		setAll(kerr.GroupIDNotFound.Code)
		return
	default:
		setAll(kerr.IllegalGeneration.Code)
		return
	}
	type pending struct {
		topic, partition int
		tp               topicPartition
		entry            offsetEntry
	}
	var todo []pending
	var recs []wire.Record
	for i, t := range req.Topics {
		name, ok := c.topicName(req.Version, t.Topic, t.TopicID)
		for j, p := range t.Partitions {
			rp := &resp.Topics[i].Partitions[j]
			if !ok {
				rp.ErrorCode = kerr.UnknownTopicID.Code
				continue
			}
			md := ""
			if p.Metadata != nil {
				md = *p.Metadata
			}
			if len(md) > c.opts.MaxMetadataBytes {
				rp.ErrorCode = kerr.OffsetMetadataTooLarge.Code
				continue
			}
			tp := topicPartition{name, p.Partition}
			if code := cg.PartitionCommitCheck(req.Generation, req.MemberID, name, p.Partition); code != 0 {
				rp.ErrorCode = code
				continue
			}
			e := offsetEntry{offset: p.Offset, leaderEpoch: p.LeaderEpoch, metadata: md, commitTime: now}
			if req.Version < 6 {
				e.leaderEpoch = -1
			}
			todo = append(todo, pending{i, j, tp, e})
			recs = append(recs, wire.Record{Key: offsetCommitKey(g.id, tp), Value: offsetCommitValue(e)})
		}
	}
	base := s.log.LogEndOffset() // the first record's offset: the shard is the only writer
	if len(recs) > 0 {
		if err := s.appendLimited(now, recs); err != nil {
			s.logger.Warn("coordinator: writing offsets failed", "group", g.id, "err", err)
			for _, p := range todo {
				resp.Topics[p.topic].Partitions[p.partition].ErrorCode = writeError(err).Code
			}
			todo = nil
		}
	}
	tps := make([]topicPartition, 0, len(todo))
	for _, p := range todo {
		tps = append(tps, p.tp)
	}
	tracked := s.trackOffsets(g.id, tps)
	for k, p := range todo {
		p.entry.recordOffset = base + int64(k)
		g.commit(p.tp, p.entry)
	}
	tracked()
	if created && g.deletable() {
		delete(s.groups, g.id)
	}
}

// fetchTopic is one topic of an OffsetFetch, normalized across versions.
type fetchTopic struct {
	name       string
	id         [16]byte
	resolved   bool
	partitions []int32
}

// OffsetFetch answers OffsetFetch v0-v10: one group before v8, several from
// v8; null topics mean every committed partition. An unknown group or
// partition has offset -1. With RequireStable (v7+) a partition with a
// pending transactional offset answers UNSTABLE_OFFSET_COMMIT (and offset
// -1), as Kafka does, and the others answer normally. A group that fails
// is answered as Kafka answers it (shapeFetchGroupError): from v2 with its
// error and no partitions.
func (c *Coordinator) OffsetFetch(ctx context.Context, req *kmsg.OffsetFetchRequest) *kmsg.OffsetFetchResponse {
	resp := req.ResponseKind().(*kmsg.OffsetFetchResponse)
	if req.Version >= 8 {
		for _, rg := range req.Groups {
			if req.Version >= 9 {
				if code := c.consumerFetchCheck(ctx, rg.Group, rg.MemberID, rg.MemberEpoch); code != 0 {
					eg := kmsg.NewOffsetFetchResponseGroup()
					eg.Group, eg.ErrorCode = rg.Group, code
					resp.Groups = append(resp.Groups, eg)
					continue
				}
			}
			var topics []fetchTopic
			if rg.Topics != nil {
				topics = []fetchTopic{}
				for _, t := range rg.Topics {
					name, ok := c.topicName(req.Version, t.Topic, t.TopicID)
					topics = append(topics, fetchTopic{name: name, id: t.TopicID, resolved: ok, partitions: t.Partitions})
				}
			}
			g := c.fetchGroup(ctx, req.Version, rg.Group, topics, req.RequireStable)
			shapeFetchGroupError(req.Version, req.RequireStable, &g)
			resp.Groups = append(resp.Groups, g)
		}
		return resp
	}
	var topics []fetchTopic
	if req.Topics != nil {
		topics = []fetchTopic{}
		for _, t := range req.Topics {
			topics = append(topics, fetchTopic{name: t.Topic, resolved: true, partitions: t.Partitions})
		}
	}
	requireStable := req.Version >= 7 && req.RequireStable
	g := c.fetchGroup(ctx, req.Version, req.Group, topics, requireStable)
	shapeFetchGroupError(req.Version, requireStable, &g)
	resp.ErrorCode = g.ErrorCode
	for _, t := range g.Topics {
		rt := kmsg.NewOffsetFetchResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetFetchResponseTopicPartition()
			rp.Partition, rp.Offset, rp.LeaderEpoch, rp.Metadata, rp.ErrorCode = p.Partition, p.Offset, p.LeaderEpoch, p.Metadata, p.ErrorCode
			if req.Version < 2 && g.ErrorCode != 0 {
				rp.ErrorCode = g.ErrorCode // no top-level error before v2
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// fetchGroup answers one group of an OffsetFetch; topics nil means all.
func (c *Coordinator) fetchGroup(ctx context.Context, version int16, group string, topics []fetchTopic, requireStable bool) kmsg.OffsetFetchResponseGroup {
	out := kmsg.NewOffsetFetchResponseGroup()
	out.Group = group
	var unstable func(topicPartition) bool // set on the shard goroutine
	// Set on the shard goroutine: the group's offsets the answer shows.
	var offsetOf func(topicPartition) (offsetEntry, bool)
	var allOffsets func() map[string][]int32
	fill := func() {
		if topics == nil {
			if allOffsets == nil {
				return
			}
			byTopic := allOffsets()
			names := make([]string, 0, len(byTopic))
			for n := range byTopic {
				names = append(names, n)
			}
			slices.Sort(names)
			topics = topics[:0]
			for _, n := range names {
				ft := fetchTopic{name: n, resolved: true, partitions: byTopic[n]}
				if version >= 10 && c.opts.Topics != nil {
					// Without a resolver the IDs stay zero for the
					// caller to fill in.
					id, ok := c.opts.Topics.TopicID(n)
					if !ok {
						continue // the topic was deleted; its offsets wait for expiry
					}
					ft.id = id
				}
				topics = append(topics, ft)
			}
		}
		for _, t := range topics {
			rt := kmsg.NewOffsetFetchResponseGroupTopic()
			rt.Topic, rt.TopicID = t.name, t.id
			for _, p := range t.partitions {
				rp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
				rp.Partition = p
				rp.Offset = -1
				rp.LeaderEpoch = -1
				rp.Metadata = ptr("")
				switch {
				case !t.resolved:
					rp.ErrorCode = kerr.UnknownTopicID.Code
				case unstable != nil && unstable(topicPartition{t.name, p}):
					rp.ErrorCode = kerr.UnstableOffsetCommit.Code
				case offsetOf != nil:
					if e, ok := offsetOf(topicPartition{t.name, p}); ok {
						rp.Offset, rp.LeaderEpoch, rp.Metadata = e.offset, e.leaderEpoch, ptr(e.metadata)
					}
				}
				rt.Partitions = append(rt.Partitions, rp)
			}
			out.Topics = append(out.Topics, rt)
		}
	}
	// An empty group id is fetched like any other: Kafka 4.4's
	// GroupCoordinatorService.fetchOffsets refuses only a null one.
	requested := topics // fill sets topics when the request asked for all
	s, code := c.shardFor(group)
	var written int64
	isShare := false
	if code == 0 {
		code = s.call(ctx, func() {
			if s.share[group] != nil {
				isShare = true
				return
			}
			if requireStable {
				unstable = s.pendingTxnFunc(group)
			}
			// A plain OffsetFetch is a read: it shows the offsets
			// below the high watermark, as Kafka's reads of the
			// last committed state. require_stable is a write
			// operation: the latest offsets, answered once they
			// are committed.
			offsetOf = func(tp topicPartition) (offsetEntry, bool) { return s.committedOffset(group, tp) }
			allOffsets = func() map[string][]int32 { return s.committedTopics(group) }
			if requireStable {
				offsetOf = func(tp topicPartition) (offsetEntry, bool) {
					v := s.currentOffset(group, tp)
					return v.entry, v.ok
				}
				allOffsets = func() map[string][]int32 {
					if g := s.groups[group]; g != nil && g.state != Dead {
						return g.committedTopics()
					}
					return nil
				}
			}
			fill()
			unstable, offsetOf, allOffsets = nil, nil, nil
			written = s.written.Load()
		})
	}
	if code == 0 && isShare {
		// Kafka 4.4 answers no error and no topics (measured,
		// /work/wt/_share/FACTS.md).
		out.Topics = nil
		return out
	}
	if code == 0 && requireStable {
		// Kafka serves require_stable as a write operation: the answer
		// waits until the shard's earlier writes are committed, so it
		// never shows an offset that could still be lost (barrier.go).
		code = s.commitBarrier(ctx, written)
	}
	if code != 0 {
		out.ErrorCode = code
		out.Topics = nil
		if topics = requested; topics != nil {
			fill() // v0-v1 carry the error per partition
		}
	}
	return out
}

// OffsetDelete answers OffsetDelete v0: offsets of topics the group no
// longer subscribes to are tombstoned; subscribed ones get
// GROUP_SUBSCRIBED_TO_TOPIC.
func (c *Coordinator) OffsetDelete(ctx context.Context, req *kmsg.OffsetDeleteRequest) *kmsg.OffsetDeleteResponse {
	resp := req.ResponseKind().(*kmsg.OffsetDeleteResponse)
	if req.Group == "" {
		resp.ErrorCode = kerr.InvalidGroupID.Code
		return resp
	}
	s, code := c.shardFor(req.Group)
	ctx, cancel := context.WithTimeout(ctx, c.opts.WriteTimeout)
	defer cancel()
	wrote := false
	var written int64
	if code == 0 {
		code = s.call(ctx, func() {
			g := s.groups[req.Group]
			if g == nil {
				resp.ErrorCode = kerr.GroupIDNotFound.Code
				return
			}
			groupCode, subscribed := g.OffsetDeleteCheck()
			if cg := s.consumer[req.Group]; cg != nil && !cg.Empty() {
				subscribed = cg.SubscribedTopics()
			}
			if sg := s.streams[req.Group]; sg != nil && !sg.Empty() {
				subscribed = sg.SourceTopics()
			}
			if groupCode != 0 {
				resp.ErrorCode = groupCode
				return
			}
			var recs []wire.Record
			var gone []topicPartition
			for _, t := range req.Topics {
				rt := kmsg.NewOffsetDeleteResponseTopic()
				rt.Topic = t.Topic
				for _, p := range t.Partitions {
					rp := kmsg.NewOffsetDeleteResponseTopicPartition()
					rp.Partition = p.Partition
					tp := topicPartition{t.Topic, p.Partition}
					if subscribed[t.Topic] {
						rp.ErrorCode = kerr.GroupSubscribedToTopic.Code
					} else if _, ok := g.offsets[tp]; ok || s.pendingTxn().has(g.id, tp) {
						// Kafka tombstones a partition with only
						// pending transactional offsets too.
						recs = append(recs, wire.Record{Key: offsetCommitKey(g.id, tp)})
						gone = append(gone, tp)
					}
					rt.Partitions = append(rt.Partitions, rp)
				}
				resp.Topics = append(resp.Topics, rt)
			}
			if len(recs) == 0 {
				return
			}
			if err := s.append(c.now(), recs); err != nil {
				s.logger.Warn("coordinator: deleting offsets failed", "group", g.id, "err", err)
				resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
				resp.Topics = nil
				return
			}
			tracked := s.trackOffsets(g.id, gone)
			for _, tp := range gone {
				delete(g.offsets, tp)
				s.pendingTxn().tombstone(g.id, tp)
			}
			tracked()
			wrote, written = true, s.written.Load()
		})
	}
	if code == 0 && wrote {
		code = s.commitBarrier(ctx, written)
	}
	if code != 0 {
		resp.ErrorCode = code
		resp.Topics = nil
	}
	return resp
}
