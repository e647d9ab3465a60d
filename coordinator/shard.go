package coordinator

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/coordinator/internal/shards"
	"github.com/samsa-broker/samsa/wire"
)

// Log is the slice of a __consumer_offsets partition the coordinator uses.
// The broker adapts its partition log to it.
type Log interface {
	// Append writes one record batch (offsets are assigned by the log) and
	// returns once it is committed: durable, and replicated as far as the
	// partition requires. On a single node that also means advancing the
	// high watermark. A PipelinedLog's AppendUncommitted is used instead
	// when the log has it.
	Append(batch []byte) error
	// Read returns whole batches from offset on, at most maxBytes unless
	// minOneBatch, none at or past maxOffset.
	Read(offset int64, maxBytes int, maxOffset int64, minOneBatch bool) ([]byte, error)
	LogStartOffset() int64
	LogEndOffset() int64
}

// pendingReply is a blocked JoinGroup or SyncGroup: where its answer goes
// and the version to stamp on it.
type pendingReply struct {
	ch      chan kmsg.Response
	version int16
}

// shard owns one __consumer_offsets partition: its groups, their offsets and
// the writes to its log. One goroutine (run) owns all of it; callers hand it
// closures through its gate (call; STYLE rule 12).
type shard struct {
	c         *Coordinator
	partition int32
	log       Log
	logger    *slog.Logger

	gate  *shards.Gate  // callers' work comes through it (call)
	ready chan struct{} // closed when the load ended, well or not
	// written is the log end offset after the shard's last write attempt
	// (or its load): answers that must not get ahead of the shard's
	// writes wait until it is committed (barrier.go).
	written atomic.Int64
	// writeEpoch is the leader epoch of the shard's last append to an
	// EpochPipelinedLog, -1 before the first: the answers that wait for
	// the shard's writes wait in that epoch (commitBarrier).
	writeEpoch atomic.Int64

	// Owned by run.
	groups      map[string]*Group
	consumer    map[string]*ConsumerGroup // KIP-848 groups; offsets stay in groups
	share       map[string]*ShareGroup    // KIP-932 share groups (share_group_api.go)
	streams     map[string]*StreamsGroup  // KIP-1071 streams groups; offsets stay in groups
	waiters     map[Waiter]pendingReply
	lastWaiter  Waiter
	nextExpiry  time.Time
	groupConfig *GroupConfig
	txn         *txnOffsets // pending transactional offsets (txn_offsets.go)
	// uncommittedOffsets and uncommittedGroups are what reads of
	// committed state see while writes are past the high watermark
	// (pipeline.go).
	uncommittedOffsets uncommittedOffsets
	uncommittedGroups  map[string]*consumerGroupHistory
}

func newShard(c *Coordinator, partition int32) *shard {
	s := &shard{
		c:           c,
		partition:   partition,
		logger:      c.logger.With("partition", partition),
		gate:        shards.NewGate(),
		ready:       make(chan struct{}),
		groups:      map[string]*Group{},
		consumer:    map[string]*ConsumerGroup{},
		waiters:     map[Waiter]pendingReply{},
		groupConfig: &c.groupConfig,
	}
	s.writeEpoch.Store(-1)
	return s
}

// Ready is closed when the shard's load ended, well or not.
func (s *shard) Ready() <-chan struct{} { return s.ready }

// Done is closed when Run returns.
func (s *shard) Done() <-chan struct{} { return s.gate.Done() }

// Run loads the partition, then serves work and deadlines until ctx ends
// (shards.Set runs it in a goroutine of its own).
func (s *shard) Run(ctx context.Context) {
	defer s.gate.Close()
	defer s.shutdown()
	if err := s.load(); err != nil {
		s.logger.Error("coordinator: loading partition failed", "err", err)
		s.gate.LoadFailed(err)
	} else {
		s.gate.Loaded()
	}
	close(s.ready)
	s.nextExpiry = s.c.now().Add(s.c.opts.OffsetsRetentionCheckInterval)
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		timer.Reset(s.untilNextDeadline())
		select {
		case <-ctx.Done():
			return
		case fn := <-s.gate.Work():
			Guard(s.logger, "request", fn)
		case <-timer.C:
			Guard(s.logger, "timers", s.tick)
		}
	}
}

// untilNextDeadline is how long run may sleep: the earliest group deadline
// or the next offset expiry check. A linear scan; fine for thousands of
// groups per partition, a heap later if it shows in profiles.
func (s *shard) untilNextDeadline() time.Duration {
	next := earliestOf(s.groups, s.nextExpiry)
	next = earliestOf(s.consumer, next)
	next = earliestOf(s.share, next)
	next = earliestOf(s.streams, next)
	return max(next.Sub(s.c.now()), 0)
}

func (s *shard) tick() {
	now := s.c.now()
	for _, g := range s.groups {
		if d, ok := g.NextDeadline(); ok && !now.Before(d) {
			s.finish(g, now, g.Tick(now))
		}
	}
	s.consumerTick(now)
	s.shareTick(now)
	s.streamsTick(now)
	if !now.Before(s.nextExpiry) {
		s.expireOffsets(now)
		s.nextExpiry = now.Add(s.c.opts.OffsetsRetentionCheckInterval)
	}
}

// shutdown answers every blocked request with NOT_COORDINATOR: the
// partition moved or the broker is stopping.
func (s *shard) shutdown() {
	s.gate.Unload()
	for w, p := range s.waiters {
		delete(s.waiters, w)
		p.ch <- nil // the caller answers NOT_COORDINATOR
	}
}

// call runs fn on the shard goroutine and waits for it. It returns an
// error code when the shard is not serving (shards.Gate.Call).
func (s *shard) call(ctx context.Context, fn func()) int16 { return s.gate.Call(ctx, fn) }

// register returns a Waiter whose reply goes to ch.
// REQUIRES: on the shard goroutine.
func (s *shard) register(ch chan kmsg.Response, version int16) Waiter {
	s.lastWaiter++
	s.waiters[s.lastWaiter] = pendingReply{ch: ch, version: version}
	return s.lastWaiter
}

// finish completes one step of a group: it does the store the group asked
// for, delivers replies, and forgets a group that is gone.
// REQUIRES: on the shard goroutine.
func (s *shard) finish(g *Group, now time.Time, replies []Reply) {
	for i := 0; g.PendingStore(); i++ {
		if i > 3 {
			panic("coordinator: group keeps asking for stores")
		}
		err := s.writeGroup(g, now)
		if err != nil {
			s.logger.Warn("coordinator: writing group metadata failed", "group", g.id, "err", err)
		}
		replies = append(replies, g.Stored(now, err)...)
	}
	for _, r := range replies {
		p, ok := s.waiters[r.To]
		if !ok {
			continue
		}
		delete(s.waiters, r.To)
		if r.Join != nil {
			r.Join.Version = p.version
			p.ch <- r.Join
		} else {
			r.Sync.Version = p.version
			p.ch <- r.Sync
		}
	}
	if g.state == Dead {
		delete(s.groups, g.id)
	}
}

// append writes records as one batch.
func (s *shard) append(now time.Time, records []wire.Record) error {
	batch, err := encodeBatch(now, records)
	if err != nil {
		return fmt.Errorf("coordinator: encoding batch: %w", err)
	}
	_, err = s.appendAt(batch)
	return err
}

// appendLimited writes records as one batch, refused (ErrRecordTooLarge)
// when it exceeds max.message.bytes. Writes a client's request causes use
// it; the coordinator's own clean-up (tombstones of a deleted or expired
// group) uses append, so that a group can always be removed.
func (s *shard) appendLimited(now time.Time, records []wire.Record) error {
	batch, err := encodeBatch(now, records)
	if err != nil {
		return fmt.Errorf("coordinator: encoding batch: %w", err)
	}
	if err := s.checkBatchSize(batch); err != nil {
		return err
	}
	_, err = s.appendAt(batch)
	return err
}

// checkBatchSize refuses a batch larger than the offsets topic's
// max.message.bytes, as Kafka's CoordinatorRuntime does before it appends
// (RecordTooLargeException): a 50 MiB JoinGroup metadata must not become a
// 50 MiB record that every load of the partition then reads.
func (s *shard) checkBatchSize(batch []byte) error {
	if max := s.c.opts.MaxMessageBytes; len(batch) > max {
		return fmt.Errorf("%w: batch of %d bytes exceeds max.message.bytes %d", ErrRecordTooLarge, len(batch), max)
	}
	return nil
}

func (s *shard) writeGroup(g *Group, now time.Time) error {
	return s.appendLimited(now, []wire.Record{{
		Key:   groupMetadataKey(g.id),
		Value: g.metadataValue().AppendTo(nil),
	}})
}

// deleteGroup writes tombstones for a group's offsets and metadata, then
// drops it. Kafka writes both in one batch too.
func (s *shard) deleteGroup(g *Group, now time.Time) error {
	var recs []wire.Record
	for tp := range g.offsets {
		recs = append(recs, wire.Record{Key: offsetCommitKey(g.id, tp)})
	}
	recs = append(recs, s.txnTombstones(g.id, g.offsets)...)
	recs = append(recs, wire.Record{Key: groupMetadataKey(g.id)})
	if err := s.append(now, recs); err != nil {
		return err
	}
	tracked := s.trackOffsets(g.id, slices.Collect(maps.Keys(g.offsets)))
	g.state = Dead
	g.offsets = map[topicPartition]offsetEntry{}
	s.pendingTxn().dropGroup(g.id)
	delete(s.groups, g.id)
	tracked()
	return nil
}

// expireOffsets drops offsets past offsets.retention.minutes and groups
// left empty with none, writing tombstones.
func (s *shard) expireOffsets(now time.Time) {
	for _, g := range s.groups {
		if g.state == Dead {
			continue
		}
		if cg := s.consumer[g.id]; cg != nil {
			s.expireConsumerOffsets(cg, g, now)
			continue
		}
		if sg := s.streams[g.id]; sg != nil {
			s.expireStreamsOffsets(sg, g, now)
			continue
		}
		before := maps.Clone(g.offsets)
		expired := g.expiredOffsetsExcept(now, s.c.opts.OffsetsRetention, s.pendingTxnFunc(g.id))
		var recs []wire.Record
		for _, tp := range expired {
			recs = append(recs, wire.Record{Key: offsetCommitKey(g.id, tp)})
		}
		// The offsets left memory before their tombstones were
		// appended: reads of committed state see them until the
		// tombstones are committed, and they come back if the append
		// fails, as Kafka reverts a write whose append failed.
		tracked := func() {
			s.trackOffsetsFrom(g.id, expired, func(tp topicPartition) offsetVersion {
				e, ok := before[tp]
				return offsetVersion{entry: e, ok: ok}
			})()
		}
		restore := func() {
			for _, tp := range expired {
				g.offsets[tp] = before[tp]
			}
		}
		if g.deletable() && !s.pendingTxn().hasGroup(g.id) {
			if err := s.deleteGroupWith(g, now, recs); err != nil {
				s.logger.Warn("coordinator: expiring group failed", "group", g.id, "err", err)
				restore()
				continue
			}
			tracked()
			continue
		}
		if len(recs) > 0 {
			if err := s.append(now, recs); err != nil {
				s.logger.Warn("coordinator: expiring offsets failed", "group", g.id, "err", err)
				restore()
				continue
			}
			tracked()
		}
	}
}

func (s *shard) deleteGroupWith(g *Group, now time.Time, recs []wire.Record) error {
	recs = append(recs, wire.Record{Key: groupMetadataKey(g.id)})
	if err := s.append(now, recs); err != nil {
		return err
	}
	g.state = Dead
	delete(s.groups, g.id)
	return nil
}

// load rebuilds the partition's groups and offsets by reading its log from
// the start.
func (s *shard) load() error {
	log, err := s.c.opts.OpenLog(s.partition)
	if err != nil {
		return fmt.Errorf("%w: partition %d: %w", ErrLoad, s.partition, err)
	}
	s.log = log
	ls := newLoadState()
	ls.maxField = s.c.opts.MaxMessageBytes // a record this coordinator wrote fits
	end, err := shards.Replay(log, s.partition, ErrLoad, ls.applyBatches)
	if err != nil {
		return err
	}
	ls.LogSkips(s.logger, "coordinator", "__consumer_offsets")
	if ls.unknownTypes > 0 {
		s.logger.Warn("coordinator: ignored records of unknown types while loading (written by a newer Kafka, or not coordinator records)",
			"topic", "__consumer_offsets", "records", ls.unknownTypes, "first_offset", ls.firstUnknownOffset, "first_key_version", ls.firstUnknownVersion)
	}
	now := s.c.now()
	for id, v := range ls.groups {
		s.groups[id] = restoreGroup(s.groupConfig, id, v, now)
	}
	for id, offs := range ls.offsets {
		if len(offs) == 0 {
			continue
		}
		g := s.groups[id]
		if g == nil {
			g = NewGroup(s.groupConfig, id, now)
			s.groups[id] = g
		}
		g.offsets = offs
	}
	s.restoreConsumerGroups(ls, now)
	s.restoreShareGroups(ls, now)
	s.restoreStreamsGroups(ls, now)
	s.restoreTxnOffsets(ls, now)
	s.written.Store(end)
	s.logger.Debug("coordinator: loaded partition", "groups", len(s.groups), "end_offset", end)
	return nil
}

// Internal errors of the coordinator.
var (
	// ErrCorrupt is wrapped when a __consumer_offsets record does not decode.
	ErrCorrupt = errors.New("coordinator: corrupt record")
	// ErrLoad is wrapped when a partition cannot be loaded.
	ErrLoad = errors.New("coordinator: load failed")
	// ErrWrite is wrapped when appending to __consumer_offsets fails.
	ErrWrite = errors.New("coordinator: write failed")
	// ErrRecordTooLarge is wrapped when a batch to write exceeds the
	// offsets topic's max.message.bytes.
	ErrRecordTooLarge = errors.New("coordinator: record too large")
	// ErrClosed is returned by LoadPartition after Close.
	ErrClosed = errors.New("coordinator: closed")
)
