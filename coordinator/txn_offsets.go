package coordinator

import (
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/wire"
)

// Transactional offset commits (TxnOffsetCommit, KIP-98).
//
// A transactional producer that consumes too (read-process-write) commits
// its consumer group's offsets inside its transaction. The group
// coordinator writes them to the group's __consumer_offsets partition as
// one transactional batch (the producer's id and epoch, the transactional
// attribute, Kafka's OffsetCommitKey/Value records) and keeps them pending
// per producer id. They become the group's committed offsets when the
// transaction coordinator writes the commit marker to that partition
// (CompleteTxn), and vanish with an abort marker. Until then OffsetFetch
// does not show them, and with require_stable (v7+) answers
// UNSTABLE_OFFSET_COMMIT for their partitions, so that a new consumer of
// the group does not start from an offset that may yet be superseded.
//
// The rules follow Kafka's OffsetMetadataManager:
//
//   - On commit, a pending offset replaces the committed one only if its
//     record is later in the log. A plain OffsetCommit written after the
//     transactional batch but before the marker wins; one written before
//     the transactional batch loses. Log order, not marker order, decides,
//     which is also what keeps a reload (or a compacted log) agreeing with
//     the live state.
//   - An offset tombstone (OffsetDelete, DeleteGroups, expiry) drops the
//     pending offsets of every producer for that partition; OffsetDelete
//     and DeleteGroups also write tombstones for partitions that only have
//     pending offsets.
//   - Expiry skips partitions with pending offsets and never deletes a
//     group with pending offsets.
//   - Load replays transactional batches as pending and control batches as
//     completions; what is still pending at the end stays pending (the
//     transaction coordinator re-sends markers when it recovers).
//
// Like Kafka's log, the shard fences producers by epoch: a TxnOffsetCommit
// or marker with an epoch older than one already written for the producer
// gets INVALID_PRODUCER_EPOCH, and a marker from an older coordinator
// epoch TRANSACTION_COORDINATOR_FENCED.

// txnProducer is what a shard remembers of a transactional producer.
type txnProducer struct {
	epoch            int16
	coordinatorEpoch int32 // of the last marker; -1 before any
	// pending are the producer's staged offsets by group.
	pending map[string]map[topicPartition]offsetEntry
}

// txnOffsets is the transactional state of one __consumer_offsets
// partition: pending offsets by producer, and for lookups by group the
// producers with pending offsets per partition. Load builds one and the
// shard takes it over. Not safe for concurrent use.
type txnOffsets struct {
	producers map[int64]*txnProducer
	// open indexes pending offsets: group -> partition -> producer ids.
	// Inner maps are never left empty.
	open map[string]map[topicPartition]map[int64]struct{}
}

func newTxnOffsets() *txnOffsets {
	return &txnOffsets{
		producers: map[int64]*txnProducer{},
		open:      map[string]map[topicPartition]map[int64]struct{}{},
	}
}

// producer returns the state of id, creating it.
func (t *txnOffsets) producer(id int64) *txnProducer {
	p := t.producers[id]
	if p == nil {
		p = &txnProducer{epoch: -1, coordinatorEpoch: -1}
		t.producers[id] = p
	}
	return p
}

// sawEpoch records that a batch of the producer with epoch was written.
func (t *txnOffsets) sawEpoch(id int64, epoch int16) {
	if p := t.producer(id); epoch > p.epoch {
		p.epoch = epoch
	}
}

// epochCode is the error for a write of producer id with epoch: 0 if the
// epoch is current or newer.
func (t *txnOffsets) epochCode(id int64, epoch int16) int16 {
	if p := t.producers[id]; p != nil && epoch < p.epoch {
		return kerr.InvalidProducerEpoch.Code
	}
	return 0
}

// stage keeps e as producer id's pending offset of group/tp.
func (t *txnOffsets) stage(id int64, group string, tp topicPartition, e offsetEntry) {
	p := t.producer(id)
	if p.pending == nil {
		p.pending = map[string]map[topicPartition]offsetEntry{}
	}
	byTP := p.pending[group]
	if byTP == nil {
		byTP = map[topicPartition]offsetEntry{}
		p.pending[group] = byTP
	}
	byTP[tp] = e
	byGroup := t.open[group]
	if byGroup == nil {
		byGroup = map[topicPartition]map[int64]struct{}{}
		t.open[group] = byGroup
	}
	ids := byGroup[tp]
	if ids == nil {
		ids = map[int64]struct{}{}
		byGroup[tp] = ids
	}
	ids[id] = struct{}{}
}

// unindex forgets that producer id has a pending offset for group/tp.
func (t *txnOffsets) unindex(id int64, group string, tp topicPartition) {
	byGroup := t.open[group]
	if byGroup == nil {
		return
	}
	delete(byGroup[tp], id)
	if len(byGroup[tp]) == 0 {
		delete(byGroup, tp)
	}
	if len(byGroup) == 0 {
		delete(t.open, group)
	}
}

// has tells whether any producer has a pending offset for group/tp.
func (t *txnOffsets) has(group string, tp topicPartition) bool {
	return len(t.open[group][tp]) > 0
}

// hasGroup tells whether any producer has a pending offset for group.
func (t *txnOffsets) hasGroup(group string) bool { return len(t.open[group]) > 0 }

// pendingPartitions returns the partitions of group with pending offsets,
// sorted.
func (t *txnOffsets) pendingPartitions(group string) []topicPartition {
	out := make([]topicPartition, 0, len(t.open[group]))
	for tp := range t.open[group] {
		out = append(out, tp)
	}
	slices.SortFunc(out, func(a, b topicPartition) int {
		return cmp.Or(cmp.Compare(a.topic, b.topic), cmp.Compare(a.partition, b.partition))
	})
	return out
}

// tombstone applies an offset tombstone of group/tp to the pending side:
// every producer's pending offset for it goes (Kafka's replay of a null
// OffsetCommitValue).
func (t *txnOffsets) tombstone(group string, tp topicPartition) {
	for id := range t.open[group][tp] {
		if p := t.producers[id]; p != nil {
			delete(p.pending[group], tp)
			if len(p.pending[group]) == 0 {
				delete(p.pending, group)
			}
		}
	}
	if byGroup := t.open[group]; byGroup != nil {
		delete(byGroup, tp)
		if len(byGroup) == 0 {
			delete(t.open, group)
		}
	}
}

// dropGroup tombstones every pending offset of group.
func (t *txnOffsets) dropGroup(group string) {
	for _, tp := range t.pendingPartitions(group) {
		t.tombstone(group, tp)
	}
}

// complete applies a marker of producer id: with commit, each pending
// offset moves into committed(group) unless the committed one's record is
// later in the log; without, they are dropped.
func (t *txnOffsets) complete(id int64, commit bool, committed func(group string) map[topicPartition]offsetEntry) {
	p := t.producers[id]
	if p == nil {
		return
	}
	pending := p.pending
	p.pending = nil
	for group, byTP := range pending {
		for tp := range byTP {
			t.unindex(id, group, tp)
		}
		if !commit {
			continue
		}
		offs := committed(group)
		for tp, e := range byTP {
			if cur, ok := offs[tp]; !ok || e.recordOffset > cur.recordOffset {
				offs[tp] = e
			}
		}
	}
}

// pendingOffset returns producer id's pending offset of group/tp, for
// tests.
func (t *txnOffsets) pendingOffset(id int64, group string, tp topicPartition) (offsetEntry, bool) {
	p := t.producers[id]
	if p == nil {
		return offsetEntry{}, false
	}
	e, ok := p.pending[group][tp]
	return e, ok
}

// txnState is the load-time transactional state, created on first use.
func (ls *loadState) txnState() *txnOffsets {
	if ls.txn == nil {
		ls.txn = newTxnOffsets()
	}
	return ls.txn
}

// applyTxnRecord folds one record of a transactional (non-control) batch
// of producer id: an offset commit becomes pending; anything else (Kafka
// writes nothing else transactionally) is applied as usual.
func (ls *loadState) applyTxnRecord(id int64, key, value []byte) error {
	if len(key) < 2 || value == nil {
		return ls.apply(key, value)
	}
	if v := binary.BigEndian.Uint16(key); v != keyOffsetCommitV0 && v != keyOffsetCommitV1 {
		return ls.apply(key, value)
	}
	var k kmsg.OffsetCommitKey
	if err := k.ReadFrom(key); err != nil {
		return fmt.Errorf("%w: offset commit key: %v", ErrCorrupt, err)
	}
	e, err := decodeOffsetEntry(value)
	if err != nil {
		return err
	}
	e.recordOffset = ls.recordOffset
	ls.txnState().stage(id, k.Group, topicPartition{k.Topic, k.Partition}, e)
	return nil
}

// applyControlBatch folds a control batch: a transaction marker completes
// its producer's pending offsets. Other control records are skipped.
func (ls *loadState) applyControlBatch(batch []byte, h wire.BatchHeader) error {
	commit, coordinatorEpoch, ok, err := wire.ParseControlBatch(batch)
	if err != nil {
		return fmt.Errorf("%w: control batch at %d: %v", ErrCorrupt, h.BaseOffset, err)
	}
	if !ok {
		return nil
	}
	t := ls.txnState()
	t.sawEpoch(h.ProducerID, h.ProducerEpoch)
	p := t.producer(h.ProducerID)
	p.coordinatorEpoch = max(p.coordinatorEpoch, coordinatorEpoch)
	t.complete(h.ProducerID, commit, func(group string) map[topicPartition]offsetEntry {
		m := ls.offsets[group]
		if m == nil {
			m = map[topicPartition]offsetEntry{}
			ls.offsets[group] = m
		}
		return m
	})
	return nil
}

// restoreTxnOffsets hands the loaded transactional state to the shard and
// makes sure every group with pending offsets exists, as Kafka creates a
// simple group when it replays an offset commit of an unknown group.
// REQUIRES: on the shard goroutine, at the end of load.
func (s *shard) restoreTxnOffsets(ls *loadState, now time.Time) {
	if ls.txn == nil {
		return
	}
	s.txn = ls.txn
	for group := range s.txn.open {
		if s.groups[group] == nil {
			s.groups[group] = NewGroup(s.groupConfig, group, now)
		}
	}
}

// pendingTxn is s.txn, created on first use.
func (s *shard) pendingTxn() *txnOffsets {
	if s.txn == nil {
		s.txn = newTxnOffsets()
	}
	return s.txn
}

// appendAt writes one batch and returns the log offset of its first
// record. The shard is the partition's only writer, so that is the log end
// offset before the append.
// REQUIRES: on the shard goroutine.
func (s *shard) appendAt(batch []byte) (int64, error) {
	base := s.log.LogEndOffset()
	err := s.appendLog(batch)
	s.noteWritten()
	if err != nil {
		return 0, fmt.Errorf("%w: %w", ErrWrite, err)
	}
	return base, nil
}

// txnCommitCheck validates a TxnOffsetCommit against the group and returns
// the error every partition gets (0 to stage), in the order of Kafka's
// ClassicGroup.validateOffsetCommit for transactional commits: unlike
// OffsetCommit, a request without member id and generation (v0-v2, or a
// producer that is not a group member) is accepted in any state, no state
// answers REBALANCE_IN_PROGRESS, and the commit is not a heartbeat.
//
// A KIP-848 consumer group checks the member and its epoch instead
// (ConsumerGroup.CommitCheck, without the OffsetCommit v9 requirement);
// below TxnOffsetCommit v6 Kafka answers ILLEGAL_GENERATION rather than
// STALE_MEMBER_EPOCH here, since those producers only know the classic
// errors (TxnOffsetCommitRequest.supportsStaleMemberEpochError: v6+).
// REQUIRES: on the shard goroutine.
func (s *shard) txnCommitCheck(g *Group, version int16, generation int32, memberID string, instanceID *string) int16 {
	if g.state == Dead {
		return kerr.CoordinatorNotAvailable.Code
	}
	if sg := s.streams[g.id]; sg != nil {
		code := sg.CommitCheck(txnCommitCheckVersion, generation, memberID)
		if code == kerr.StaleMemberEpoch.Code {
			code = kerr.IllegalGeneration.Code
		}
		return code
	}
	if cg := s.consumer[g.id]; cg != nil {
		if code, classic := cg.classicTxnCommitCheck(memberID, generation); classic {
			return code
		}
		code := cg.CommitCheck(txnCommitCheckVersion, generation, memberID)
		if code == kerr.StaleMemberEpoch.Code && version < 6 {
			code = kerr.IllegalGeneration.Code
		}
		return code
	}
	if generation < 0 && g.state == Empty {
		return 0
	}
	if generation < 0 && memberID == "" && instanceID == nil {
		return 0
	}
	if instanceID != nil {
		cur, ok := g.static[*instanceID]
		if !ok {
			return kerr.UnknownMemberID.Code
		}
		if cur != memberID {
			return kerr.FencedInstanceID.Code
		}
	}
	if g.member(memberID) == nil {
		return kerr.UnknownMemberID.Code
	}
	if generation != g.generation {
		return kerr.IllegalGeneration.Code
	}
	return 0
}

// txnCommitCheckVersion is the OffsetCommit version a transactional commit
// is checked as: Kafka does not require the consumer protocol's v9 there.
const txnCommitCheckVersion = 9

// TxnOffsetCommit stages offsets of a transaction: v0-v5. They are
// written to the group's __consumer_offsets partition as one
// transactional batch (producer id and epoch from the request, Kafka's
// OffsetCommitKey/Value records) and kept pending per producer id until
// CompleteTxn; OffsetFetch does not show them before the commit marker.
// Member checks (v3+) follow txnCommitCheck; a partition whose metadata
// exceeds offset.metadata.max.bytes gets OFFSET_METADATA_TOO_LARGE and the
// others are staged. The caller filters unknown topics.
func (c *Coordinator) TxnOffsetCommit(ctx context.Context, req *kmsg.TxnOffsetCommitRequest) *kmsg.TxnOffsetCommitResponse {
	resp := req.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
	var codes partitionCodes
	for _, t := range req.Topics {
		rt := kmsg.NewTxnOffsetCommitResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
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
	// The staged offsets are answered once they, and every write
	// before them, are committed (commitOffsets).
	c.commitAnswer(ctx, req.Group, codes, func(s *shard) { c.txnCommitOn(s, req, resp, codes.setUnset) })
	return resp
}

// txnCommitOn runs on the shard goroutine.
func (c *Coordinator) txnCommitOn(s *shard, req *kmsg.TxnOffsetCommitRequest, resp *kmsg.TxnOffsetCommitResponse, setAll func(int16)) {
	now := c.now()
	generation, memberID, instanceID := req.Generation, req.MemberID, req.InstanceID
	if req.Version < 3 {
		generation, memberID, instanceID = -1, "", nil
	}
	txn := s.pendingTxn()
	if code := txn.epochCode(req.ProducerID, req.ProducerEpoch); code != 0 {
		setAll(code)
		return
	}
	if s.share[req.Group] != nil {
		// A share group has no committed offsets (Kafka's
		// ShareGroup.validateOffsetCommit).
		setAll(kerr.GroupIDNotFound.Code)
		return
	}
	g := s.groups[req.Group]
	created := false
	if g == nil {
		if generation >= 0 {
			// A member's commit to a group that does not exist:
			// GROUP_ID_NOT_FOUND from v6 (Kafka 4.4's
			// TxnOffsetCommitRequest.supportsGroupIdNotFoundError),
			// ILLEGAL_GENERATION before.
			code := kerr.IllegalGeneration.Code
			if req.Version >= 6 {
				code = kerr.GroupIDNotFound.Code
			}
			setAll(code)
			return
		}
		// A producer committing for a group nobody joined: Kafka
		// creates a simple (protocol-less) group.
		g = NewGroup(s.groupConfig, req.Group, now)
		s.groups[req.Group] = g
		created = true
	}
	forget := func() {
		if created && g.deletable() && !txn.hasGroup(g.id) {
			delete(s.groups, g.id)
		}
	}
	if code := s.txnCommitCheck(g, req.Version, generation, memberID, instanceID); code != 0 {
		setAll(code)
		forget()
		return
	}
	type staged struct {
		topic, partition int
		tp               topicPartition
		entry            offsetEntry
	}
	var todo []staged
	var recs []wire.Record
	for i, t := range req.Topics {
		for j, p := range t.Partitions {
			md := ""
			if p.Metadata != nil {
				md = *p.Metadata
			}
			if len(md) > c.opts.MaxMetadataBytes {
				resp.Topics[i].Partitions[j].ErrorCode = kerr.OffsetMetadataTooLarge.Code
				continue
			}
			tp := topicPartition{t.Topic, p.Partition}
			e := offsetEntry{offset: p.Offset, leaderEpoch: p.LeaderEpoch, metadata: md, commitTime: now}
			if req.Version < 2 {
				e.leaderEpoch = -1
			}
			todo = append(todo, staged{i, j, tp, e})
			recs = append(recs, wire.Record{Key: offsetCommitKey(g.id, tp), Value: offsetCommitValue(e)})
		}
	}
	if len(recs) == 0 {
		forget()
		return
	}
	batch, err := wire.EncodeBatch(wire.BatchSpec{
		BaseTimestamp: now.UnixMilli(),
		ProducerID:    req.ProducerID,
		ProducerEpoch: req.ProducerEpoch,
		BaseSequence:  -1, // Kafka's coordinators write without sequence numbers
		Transactional: true,
		Records:       recs,
	})
	var base int64
	if err == nil {
		err = s.checkBatchSize(batch)
	}
	if err == nil {
		base, err = s.appendAt(batch)
	}
	if err != nil {
		s.logger.Warn("coordinator: writing transactional offsets failed", "group", g.id, "producer_id", req.ProducerID, "err", err)
		for _, p := range todo {
			resp.Topics[p.topic].Partitions[p.partition].ErrorCode = writeError(err).Code
		}
		forget()
		return
	}
	txn.sawEpoch(req.ProducerID, req.ProducerEpoch)
	for k, p := range todo {
		p.entry.recordOffset = base + int64(k)
		txn.stage(req.ProducerID, g.id, p.tp, p.entry)
	}
}

// CompleteTxn writes a transaction marker (commit or abort, with the
// transaction coordinator's epoch) for producerID to __consumer_offsets
// partition `partition`, then applies it: a commit moves the producer's
// pending offsets of every group on the partition into the committed ones
// (unless a later record of the log committed that partition already), an
// abort drops them. A marker for a producer with nothing pending is still
// written, and answers 0: the transaction coordinator retries markers and
// a retry must succeed.
//
// It returns 0, NOT_COORDINATOR when the partition is not loaded here,
// COORDINATOR_LOAD_IN_PROGRESS while it loads, COORDINATOR_NOT_AVAILABLE
// when it failed to load or the write failed, INVALID_PRODUCER_EPOCH for
// an epoch older than one written for the producer, and
// TRANSACTION_COORDINATOR_FENCED for a coordinator epoch older than the
// producer's last marker. Kafka's WriteTxnMarkers handler turns the three
// coordinator errors into NOT_LEADER_OR_FOLLOWER for the transaction
// coordinator, which retries.
func (c *Coordinator) CompleteTxn(ctx context.Context, partition int32, producerID int64, producerEpoch int16, commit bool, coordinatorEpoch int32) int16 {
	s, ok := c.shards.Get(partition)
	if !ok {
		return kerr.NotCoordinator.Code
	}
	ctx, cancel := context.WithTimeout(ctx, c.opts.WriteTimeout)
	defer cancel()
	var out int16
	var written int64
	code := s.call(ctx, func() {
		out = c.completeTxnOn(s, producerID, producerEpoch, commit, coordinatorEpoch)
		written = s.written.Load()
	})
	if code == 0 && out == 0 {
		// The marker, and every write before it, committed: the
		// transaction coordinator retries a marker until then.
		code = s.commitBarrier(ctx, written)
	}
	if code != 0 {
		return code
	}
	return out
}

// completeTxnOn runs on the shard goroutine.
func (c *Coordinator) completeTxnOn(s *shard, producerID int64, producerEpoch int16, commit bool, coordinatorEpoch int32) int16 {
	txn := s.pendingTxn()
	if code := txn.epochCode(producerID, producerEpoch); code != 0 {
		return code
	}
	if p := txn.producers[producerID]; p != nil && coordinatorEpoch < p.coordinatorEpoch {
		return kerr.TransactionCoordinatorFenced.Code
	}
	now := c.now()
	batch, err := wire.EncodeControlBatch(producerID, producerEpoch, commit, coordinatorEpoch, -1, now.UnixMilli())
	if err == nil {
		_, err = s.appendAt(batch)
	}
	if err != nil {
		s.logger.Warn("coordinator: writing transaction marker failed", "producer_id", producerID, "commit", commit, "err", err)
		return kerr.CoordinatorNotAvailable.Code
	}
	txn.sawEpoch(producerID, producerEpoch)
	p := txn.producer(producerID)
	p.coordinatorEpoch = max(p.coordinatorEpoch, coordinatorEpoch)
	if commit {
		// The committed offsets the marker changes, for reads of
		// committed state (pipeline.go).
		for group, byTP := range p.pending {
			defer s.trackOffsets(group, slices.Collect(maps.Keys(byTP)))()
		}
	}
	txn.complete(producerID, commit, func(group string) map[topicPartition]offsetEntry {
		g := s.groups[group]
		if g == nil || g.state == Dead {
			g = NewGroup(s.groupConfig, group, now)
			s.groups[group] = g
		}
		return g.offsets
	})
	return 0
}

// HasPendingTxnOffsets tells whether a transaction has a pending offset
// for the group's topic partition (what require_stable waits for). It is
// false when the group's partition is not served here.
func (c *Coordinator) HasPendingTxnOffsets(ctx context.Context, group, topic string, partition int32) bool {
	s, code := c.shardFor(group)
	if code != 0 {
		return false
	}
	var out bool
	s.call(ctx, func() { out = s.pendingTxn().has(group, topicPartition{topic, partition}) })
	return out
}

// pendingTxnFunc returns a predicate for group's partitions with pending
// transactional offsets, for expiry and require_stable.
// REQUIRES: on the shard goroutine, and the predicate used only there.
func (s *shard) pendingTxnFunc(group string) func(topicPartition) bool {
	txn := s.pendingTxn()
	return func(tp topicPartition) bool { return txn.has(group, tp) }
}

// txnTombstones returns tombstones for the partitions of group that have
// only pending transactional offsets (committed ones are tombstoned by the
// caller), for deleting the group: the tombstones drop the pending offsets
// on reload too, as Kafka's deleteAllOffsets does.
// REQUIRES: on the shard goroutine.
func (s *shard) txnTombstones(group string, committed map[topicPartition]offsetEntry) []wire.Record {
	var recs []wire.Record
	for _, tp := range s.pendingTxn().pendingPartitions(group) {
		if _, ok := committed[tp]; !ok {
			recs = append(recs, wire.Record{Key: offsetCommitKey(group, tp)})
		}
	}
	return recs
}
