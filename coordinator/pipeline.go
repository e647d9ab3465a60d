package coordinator

import (
	"context"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
)

// PipelinedLog is implemented by a Log that can append a batch without
// waiting for its replication (a leader's replicated partition): the
// shard then appends its writes in order, one after the other, and each
// answer waits on its caller's goroutine until the high watermark passes
// the shard's writes before it (commitBarrier), failing at its own
// deadline, as Kafka's CoordinatorRuntime appends each write at once and
// completes its response when the high watermark passes its offset.
// Without it the shard waits for each Append, so a shard cut off from
// its replicas held every request queued behind a write for that write's
// whole timeout, then the next's (issue 14).
//
// What the shard appended stays in its memory whether or not the answer
// came in time: the batch is in the log and may still be committed, as
// Kafka keeps its in-memory state of what is in the log and reverts it
// only when the append itself fails. If the partition is led elsewhere
// the broker unloads the shard, and the next leader loads what was
// committed. Reads that must see only committed state (OffsetFetch
// without require_stable, ConsumerGroupDescribe, ListGroups' consumer
// groups) read the versions of the offsets and consumer groups below the
// high watermark (committedOffset, committedConsumerGroup), kept for the
// writes the shard made; records a load found past the high watermark
// are shown as they are. Classic groups are read as they are in memory,
// as Kafka reads a classic group's fields.
type PipelinedLog interface {
	CommitWaiter
	// AppendUncommitted writes one record batch as Log.Append does but
	// returns once it is in the log, with the log end offset after it.
	// An error means the batch is not in the log.
	AppendUncommitted(batch []byte) (end int64, err error)
	// HighWatermark is the end of the committed part of the log.
	HighWatermark() int64
}

// pipelined returns the shard's log as a PipelinedLog, if it is one.
func (s *shard) pipelined() (PipelinedLog, bool) {
	pl, ok := s.log.(PipelinedLog)
	return pl, ok
}

// EpochPipelinedLog is a PipelinedLog that tells the leader epoch of
// each append and can wait for the high watermark in that epoch only
// (replica.CoordinatorLog). With it a shard's answers wait for its writes
// in the epoch they were appended in (commitBarrier): a node that has
// stopped leading the partition and follows the new leader moves its high
// watermark over the new leader's records, past the writes of its own
// that it truncated, in the time before the broker unloads its shard, and
// the high watermark alone would call those lost writes committed.
type EpochPipelinedLog interface {
	PipelinedLog
	// AppendUncommittedInEpoch is AppendUncommitted that also returns the
	// leader epoch the batch was written in.
	AppendUncommittedInEpoch(batch []byte) (end int64, epoch int32, err error)
	// WaitCommittedInEpoch is CommitWaiter.WaitCommitted that succeeds
	// only while this node still leads the partition in epoch; else its
	// error wraps NOT_LEADER_OR_FOLLOWER.
	WaitCommittedInEpoch(ctx context.Context, epoch int32, offset int64) error
}

// appendLog appends batch to the log: without waiting for replication
// when the log is a PipelinedLog (the answer then waits in
// commitBarrier), else with Log.Append. An EpochPipelinedLog's append
// records its leader epoch in writeEpoch.
// REQUIRES: on the shard goroutine.
func (s *shard) appendLog(batch []byte) error {
	if el, ok := s.log.(EpochPipelinedLog); ok {
		_, epoch, err := el.AppendUncommittedInEpoch(batch)
		if err == nil {
			s.writeEpoch.Store(int64(epoch))
		}
		return err
	}
	if pl, ok := s.pipelined(); ok {
		_, err := pl.AppendUncommitted(batch)
		return err
	}
	return s.log.Append(batch)
}

// committedEnd is the end of what the reads of committed state see: the
// high watermark of a PipelinedLog, else the shard's last write (every
// append of another Log is committed when it returns).
// REQUIRES: on the shard goroutine.
func (s *shard) committedEnd() int64 {
	if pl, ok := s.pipelined(); ok {
		return pl.HighWatermark()
	}
	return s.written.Load()
}

// groupTP names one committed offset of a group.
type groupTP struct {
	group string
	tp    topicPartition
}

// offsetVersion is a committed-offset value after one write (ok false:
// none, the offset was deleted), visible to reads of committed state
// once the high watermark reaches end.
type offsetVersion struct {
	end   int64
	entry offsetEntry
	ok    bool
}

// offsetHistory is a group partition's committed offset while writes of
// it are past the high watermark: base is the value below it, writes the
// later values in log order.
type offsetHistory struct {
	base   offsetVersion
	writes []offsetVersion
}

// uncommittedOffsets keeps, for reads of committed state, the committed
// offsets the shard changed in writes past the high watermark: a small
// form of Kafka's timeline snapshots, for the offsets alone.
type uncommittedOffsets struct {
	byGroup map[string]map[topicPartition]*offsetHistory
	order   []groupTPEnd // every version in log order, to fold them as the high watermark moves
}

type groupTPEnd struct {
	key groupTP
	end int64
}

// currentOffset is group's committed offset of tp in memory.
// REQUIRES: on the shard goroutine.
func (s *shard) currentOffset(group string, tp topicPartition) offsetVersion {
	g := s.groups[group]
	if g == nil || g.state == Dead {
		return offsetVersion{}
	}
	e, ok := g.offsets[tp]
	return offsetVersion{entry: e, ok: ok}
}

// trackOffsets is called after a write that changes group's committed
// offsets of tps was appended and before memory changes; the returned
// func, called once memory changed, records the new values as versions
// that reads of committed state see once the high watermark passes the
// write. Nothing is kept for a Log that commits every append.
// REQUIRES: on the shard goroutine.
func (s *shard) trackOffsets(group string, tps []topicPartition) func() {
	return s.trackOffsetsFrom(group, tps, func(tp topicPartition) offsetVersion { return s.currentOffset(group, tp) })
}

// trackOffsetsFrom is trackOffsets for a write whose change of memory
// came before its append: before gives the values the change replaced.
// REQUIRES: on the shard goroutine.
func (s *shard) trackOffsetsFrom(group string, tps []topicPartition, before func(topicPartition) offsetVersion) func() {
	if _, ok := s.pipelined(); !ok || len(tps) == 0 {
		return func() {}
	}
	s.foldOffsets()
	u := &s.uncommittedOffsets
	if u.byGroup == nil {
		u.byGroup = map[string]map[topicPartition]*offsetHistory{}
	}
	hs := u.byGroup[group]
	if hs == nil {
		hs = map[topicPartition]*offsetHistory{}
		u.byGroup[group] = hs
	}
	for _, tp := range tps {
		if hs[tp] == nil {
			hs[tp] = &offsetHistory{base: before(tp)}
		}
	}
	end := s.written.Load()
	return func() {
		for _, tp := range tps {
			v := s.currentOffset(group, tp)
			v.end = end
			h := hs[tp]
			h.writes = append(h.writes, v)
			u.order = append(u.order, groupTPEnd{groupTP{group, tp}, end})
		}
	}
}

// foldOffsets moves the versions the high watermark passed into their
// bases and forgets histories left with no write past it.
// REQUIRES: on the shard goroutine.
func (s *shard) foldOffsets() {
	u := &s.uncommittedOffsets
	if len(u.order) == 0 {
		return
	}
	hw := s.committedEnd()
	n := 0
	for ; n < len(u.order) && u.order[n].end <= hw; n++ {
		k := u.order[n].key
		hs := u.byGroup[k.group]
		h := hs[k.tp]
		h.base, h.writes = h.writes[0], h.writes[1:]
		if len(h.writes) == 0 {
			delete(hs, k.tp)
			if len(hs) == 0 {
				delete(u.byGroup, k.group)
			}
		}
	}
	if n > 0 {
		u.order = append(u.order[:0], u.order[n:]...)
	}
}

// committedOffset is group's committed offset of tp as of the high
// watermark, for OffsetFetch without require_stable: a commit past it
// could still be lost, and Kafka's reads do not show it.
// REQUIRES: on the shard goroutine.
func (s *shard) committedOffset(group string, tp topicPartition) (offsetEntry, bool) {
	s.foldOffsets()
	if h := s.uncommittedOffsets.byGroup[group][tp]; h != nil {
		return h.base.entry, h.base.ok
	}
	v := s.currentOffset(group, tp)
	return v.entry, v.ok
}

// committedTopics is every partition of group with a committed offset as
// of the high watermark, sorted, grouped by topic.
// REQUIRES: on the shard goroutine.
func (s *shard) committedTopics(group string) map[string][]int32 {
	s.foldOffsets()
	out := map[string][]int32{}
	if g := s.groups[group]; g != nil && g.state != Dead {
		out = g.committedTopics()
	}
	hs := s.uncommittedOffsets.byGroup[group]
	if len(hs) == 0 {
		return out
	}
	set := map[topicPartition]bool{}
	for t, ps := range out {
		for _, p := range ps {
			set[topicPartition{t, p}] = true
		}
	}
	for tp, h := range hs {
		set[tp] = h.base.ok
	}
	out = map[string][]int32{}
	for tp, ok := range set {
		if ok {
			out[tp.topic] = append(out[tp.topic], tp.partition)
		}
	}
	for _, ps := range out {
		slices.Sort(ps)
	}
	return out
}

// consumerGroupHistory is a consumer group while writes of it are past
// the high watermark: base is the group below it (nil: none), writes the
// later versions in log order.
type consumerGroupHistory struct {
	base   *ConsumerGroup
	writes []consumerGroupVersion
}

type consumerGroupVersion struct {
	end int64
	cg  *ConsumerGroup
}

// trackConsumerGroup is called after a write of consumer group id was
// appended, with the group as it was before the change (nil: none); the
// returned func, called once memory changed, records the new version,
// which ConsumerGroupDescribe shows once the high watermark passes the
// write. Nothing is kept for a Log that commits every append.
// REQUIRES: on the shard goroutine.
func (s *shard) trackConsumerGroup(id string, before *ConsumerGroup) func() {
	if _, ok := s.pipelined(); !ok {
		return func() {}
	}
	s.foldConsumerGroups()
	if s.uncommittedGroups == nil {
		s.uncommittedGroups = map[string]*consumerGroupHistory{}
	}
	h := s.uncommittedGroups[id]
	if h == nil {
		h = &consumerGroupHistory{base: before}
		s.uncommittedGroups[id] = h
	}
	end := s.written.Load()
	return func() {
		var after *ConsumerGroup
		if cg := s.consumer[id]; cg != nil {
			after = cg.clone()
		}
		h.writes = append(h.writes, consumerGroupVersion{end, after})
	}
}

// foldConsumerGroups moves the versions the high watermark passed into
// their bases and forgets histories left with no write past it.
// REQUIRES: on the shard goroutine.
func (s *shard) foldConsumerGroups() {
	if len(s.uncommittedGroups) == 0 {
		return
	}
	hw := s.committedEnd()
	for id, h := range s.uncommittedGroups {
		n := 0
		for ; n < len(h.writes) && h.writes[n].end <= hw; n++ {
			h.base = h.writes[n].cg
		}
		h.writes = h.writes[n:]
		if len(h.writes) == 0 {
			delete(s.uncommittedGroups, id)
		}
	}
}

// committedConsumerGroup is consumer group id as of the high watermark
// (nil: none), for ConsumerGroupDescribe, a read of committed state in
// Kafka. The result is only read.
// REQUIRES: on the shard goroutine.
func (s *shard) committedConsumerGroup(id string) *ConsumerGroup {
	s.foldConsumerGroups()
	if h := s.uncommittedGroups[id]; h != nil {
		return h.base
	}
	return s.consumer[id]
}

// WriteError is the Kafka error a client gets when a coordinator write
// fails or is not committed in time (writeError), for the transaction
// coordinator too: Kafka 4.4's TransactionStateManager maps append errors
// the same way, except that it passes other Kafka errors through where
// writeError answers COORDINATOR_NOT_AVAILABLE.
func WriteError(err error) *kerr.Error { return writeError(err) }
