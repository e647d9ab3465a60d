package txn

import (
	"context"
	"log/slog"
	"maps"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/samsa-broker/samsa/coordinator"
	"github.com/samsa-broker/samsa/coordinator/internal/shards"
)

// waiter is told how a marker round (or the Complete write) of a
// transaction ended: 0 completed, CONCURRENT_TRANSACTIONS not yet (some
// marker or the write failed and is retried), NOT_COORDINATOR the shard
// stopped.
type waiter func(code int16)

// completion is a Prepare* transaction whose markers are not all written,
// or whose Complete state is not yet durable.
type completion struct {
	remaining map[TopicPartition]struct{}
	inFlight  bool
	retryAt   time.Time
	waiters   []waiter
}

// markerResult is what a marker goroutine reports back.
type markerResult struct {
	id         string
	producerID int64
	epoch      int16
	sent       []TopicPartition
	codes      map[TopicPartition]int16
}

// shard owns one __transaction_state partition: its transactional ids and
// every write to its log. One goroutine (run) owns all of it; callers hand
// it closures through its gate (call). Marker writes run on goroutines of
// their own, which report to results, so a slow partition never blocks the
// shard.
type shard struct {
	c         *Coordinator
	partition int32
	log       Log
	logger    *slog.Logger

	gate     *shards.Gate // callers' work comes through it (call)
	results  chan markerResult
	ready    chan struct{}  // closed when the load ended, well or not
	markerWG sync.WaitGroup // marker goroutines and the commit watcher

	// pl is the log when its writes are pipelined (pipeline.go), nil
	// when every Append is committed when it returns. The watcher
	// reports the high watermark to committed once it passes
	// watchTarget, woken by watchWake.
	pl          coordinator.PipelinedLog
	el          coordinator.EpochPipelinedLog // pl's epochs, if it has them
	committed   chan int64
	watchWake   chan struct{}
	watchTarget atomic.Pointer[watchPoint]

	// Owned by run.
	ctx            context.Context
	txns           map[string]*txnMeta
	pending        map[string]*completion
	nextAbortCheck time.Time
	nextExpiry     time.Time
	// inFlight are the writes appended and not yet committed, in log
	// order; writing the one of each id; queued the requests of an id
	// waiting for its write (pipeline.go).
	inFlight []*txnWrite
	writing  map[string]*txnWrite
	queued   map[string][]func()
}

func newShard(c *Coordinator, partition int32, log Log) *shard {
	pl, _ := log.(coordinator.PipelinedLog)
	el, _ := log.(coordinator.EpochPipelinedLog) // implies pl
	return &shard{
		c:         c,
		partition: partition,
		log:       log,
		logger:    c.logger.With("partition", partition),
		gate:      shards.NewGate(),
		results:   make(chan markerResult),
		ready:     make(chan struct{}),
		pl:        pl,
		el:        el,
		committed: make(chan int64),
		watchWake: make(chan struct{}, 1),
		txns:      map[string]*txnMeta{},
		pending:   map[string]*completion{},
		writing:   map[string]*txnWrite{},
		queued:    map[string][]func(){},
	}
}

func (s *shard) now() time.Time { return s.c.now() }

// Ready is closed when the shard's load ended, well or not.
func (s *shard) Ready() <-chan struct{} { return s.ready }

// Done is closed when Run returns.
func (s *shard) Done() <-chan struct{} { return s.gate.Done() }

// Run loads the partition, then serves work, marker results, commits and
// deadlines until ctx ends (shards.Set runs it in a goroutine of its own).
func (s *shard) Run(ctx context.Context) {
	s.ctx = ctx
	defer s.gate.Close()
	defer s.shutdown()
	if err := s.load(); err != nil {
		s.logger.Error("txn: loading partition failed", "err", err)
		s.gate.LoadFailed(err)
		close(s.ready)
		<-ctx.Done()
		return
	}
	s.gate.Loaded()
	close(s.ready)
	now := s.now()
	s.nextAbortCheck = now.Add(s.c.opts.AbortTimedOutInterval)
	s.nextExpiry = now.Add(s.c.opts.RemoveExpiredInterval)
	if s.pl != nil {
		s.markerWG.Go(func() { s.watch(ctx) })
	}
	for id := range s.pending {
		s.sendMarkers(id)
	}
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		timer.Reset(s.untilNextDeadline())
		select {
		case <-ctx.Done():
			return
		case fn := <-s.gate.Work():
			coordinator.Guard(s.logger, "request", fn)
		case r := <-s.results:
			coordinator.Guard(s.logger, "marker result", func() { s.markersDone(r) })
		case hw := <-s.committed:
			coordinator.Guard(s.logger, "commit", func() { s.settle(hw) })
		case <-timer.C:
			coordinator.Guard(s.logger, "timers", s.tick)
		}
	}
}

// untilNextDeadline is how long run may sleep: the next cleanup or marker
// retry.
func (s *shard) untilNextDeadline() time.Duration {
	next := s.nextAbortCheck
	if s.nextExpiry.Before(next) {
		next = s.nextExpiry
	}
	for _, p := range s.pending {
		if !p.inFlight && p.retryAt.Before(next) {
			next = p.retryAt
		}
	}
	return max(next.Sub(s.now()), 0)
}

// tick retries due markers and runs the cleanups that are due.
func (s *shard) tick() {
	now := s.now()
	for id, p := range s.pending {
		if !p.inFlight && !now.Before(p.retryAt) {
			s.sendMarkers(id)
		}
	}
	if !now.Before(s.nextAbortCheck) {
		s.abortTimedOut(now)
		s.nextAbortCheck = now.Add(s.c.opts.AbortTimedOutInterval)
	}
	if !now.Before(s.nextExpiry) {
		s.removeExpired(now)
		s.nextExpiry = now.Add(s.c.opts.RemoveExpiredInterval)
	}
}

// shutdown cancels marker writes and tells every waiter NOT_COORDINATOR.
// Writes in flight are left as they are: their batches may be in the
// log, which the next leader loads; their requests see the shard stop.
func (s *shard) shutdown() {
	s.gate.Unload()
	// Marker goroutines and the watcher end on ctx; drain their results
	// meanwhile.
	stopped := make(chan struct{})
	go func() { s.markerWG.Wait(); close(stopped) }()
	for {
		select {
		case <-s.results:
			continue
		case <-stopped:
		}
		break
	}
	for _, p := range s.pending {
		for _, w := range p.waiters {
			w(kerr.NotCoordinator.Code)
		}
		p.waiters = nil
	}
}

// call runs fn on the shard goroutine and waits for it. It returns an
// error code when the shard is not serving (shards.Gate.Call).
func (s *shard) call(ctx context.Context, fn func()) int16 { return s.gate.Call(ctx, fn) }

// prepared starts completing a transaction whose Prepare* state is durable.
// REQUIRES: on the shard goroutine.
func (s *shard) prepared(id string, w waiter) {
	m := s.txns[id]
	p := &completion{remaining: maps.Clone(m.partitions)}
	if p.remaining == nil {
		p.remaining = map[TopicPartition]struct{}{}
	}
	if w != nil {
		p.waiters = append(p.waiters, w)
	}
	s.pending[id] = p
	s.sendMarkers(id)
}

// wait registers w for the end of the next marker round of a Prepare*
// transaction.
// REQUIRES: on the shard goroutine; id in s.pending.
func (s *shard) wait(id string, w waiter) {
	s.pending[id].waiters = append(s.pending[id].waiters, w)
}

// sendMarkers starts a marker round for what remains of a Prepare*
// transaction, or writes its Complete state when nothing remains.
// Partitions that no longer exist (deleted topics) are dropped, as Kafka's
// marker channel drops them.
// REQUIRES: on the shard goroutine.
func (s *shard) sendMarkers(id string) {
	p, m := s.pending[id], s.txns[id]
	if p == nil || p.inFlight {
		return
	}
	for tp := range p.remaining {
		// __consumer_offsets partitions (AddOffsetsToTxn) always exist;
		// never risk dropping a group's transactional offsets.
		if tp.Topic != coordinator.OffsetsTopic && !s.c.opts.PartitionExists(tp.Topic, tp.Partition) {
			s.logger.Info("txn: dropping marker for a partition that no longer exists", "transactional_id", id, "partition", tp)
			delete(p.remaining, tp)
		}
	}
	if len(p.remaining) == 0 {
		s.finishCompletion(id)
		return
	}
	tps := make([]TopicPartition, 0, len(p.remaining))
	for tp := range p.remaining {
		tps = append(tps, tp)
	}
	sortTPs(tps)
	p.inFlight = true
	pid, epoch, commit := m.producerID, m.epoch, m.state == PrepareCommit
	coordEpoch := s.c.opts.CoordinatorEpoch(s.partition)
	ctx := s.ctx
	s.markerWG.Go(func() {
		codes := s.c.opts.Markers.WriteMarkers(ctx, pid, epoch, commit, coordEpoch, tps)
		select {
		case s.results <- markerResult{id: id, producerID: pid, epoch: epoch, sent: tps, codes: codes}:
		case <-ctx.Done():
		}
	})
}

// markersDone folds a marker round's result in: written partitions are
// done, so are those a newer producer epoch or coordinator already owns;
// the rest are retried after MarkerRetryBackoff.
// REQUIRES: on the shard goroutine.
func (s *shard) markersDone(r markerResult) {
	p, m := s.pending[r.id], s.txns[r.id]
	if p == nil || m == nil || m.producerID != r.producerID || m.epoch != r.epoch {
		return
	}
	p.inFlight = false
	for _, tp := range r.sent {
		code, ok := r.codes[tp]
		switch {
		case !ok:
			continue
		case code == 0:
		case code == kerr.InvalidProducerEpoch.Code || code == kerr.TransactionCoordinatorFenced.Code:
			// A newer epoch or coordinator wrote to the partition since:
			// this marker is moot.
			s.logger.Warn("txn: marker rejected, dropping it", "transactional_id", r.id, "partition", tp, "err", kerr.ErrorForCode(code))
		default:
			s.logger.Debug("txn: marker failed, will retry", "transactional_id", r.id, "partition", tp, "err", kerr.ErrorForCode(code))
			continue
		}
		delete(p.remaining, tp)
	}
	if len(p.remaining) == 0 {
		s.finishCompletion(r.id)
		return
	}
	p.retryAt = s.now().Add(s.c.opts.MarkerRetryBackoff)
	s.notify(p, kerr.ConcurrentTransactions.Code)
}

// finishCompletion writes the Complete state of a transaction whose
// markers are all written; a failed write is retried after the backoff.
// While the write is in flight no marker round starts (inFlight).
// REQUIRES: on the shard goroutine.
func (s *shard) finishCompletion(id string) {
	p := s.pending[id]
	p.inFlight = true
	s.forID(id, nil, func() {
		m := s.txns[id]
		s.write(id, m.complete(s.now().UnixMilli()), func(code int16) {
			p.inFlight = false
			if code != 0 {
				p.retryAt = s.now().Add(s.c.opts.MarkerRetryBackoff)
				s.notify(p, kerr.ConcurrentTransactions.Code)
				return
			}
			delete(s.pending, id)
			s.notify(p, 0)
		})
	})
}

func (s *shard) notify(p *completion, code int16) {
	ws := p.waiters
	p.waiters = nil
	for _, w := range ws {
		w(code)
	}
}

// abortTimedOut aborts, with an epoch bump that fences the producer, every
// ongoing transaction older than its timeout.
// REQUIRES: on the shard goroutine.
func (s *shard) abortTimedOut(now time.Time) {
	nowMs := now.UnixMilli()
	for id, m := range s.txns {
		if !m.timedOut(nowMs) || s.writing[id] != nil {
			continue
		}
		s.logger.Info("txn: aborting timed out transaction", "transactional_id", id, "producer_id", m.producerID, "epoch", m.epoch)
		s.write(id, m.fence(nowMs), func(code int16) {
			if code == 0 {
				s.prepared(id, nil)
			}
		})
	}
}

// removeExpired tombstones transactional ids idle longer than
// transactional.id.expiration.ms.
// REQUIRES: on the shard goroutine.
func (s *shard) removeExpired(now time.Time) {
	nowMs, exp := now.UnixMilli(), s.c.opts.IDExpiration.Milliseconds()
	for id, m := range s.txns {
		if _, busy := s.pending[id]; busy || s.writing[id] != nil || !m.expired(nowMs, exp) {
			continue
		}
		s.logger.Debug("txn: expiring transactional id", "transactional_id", id)
		s.write(id, nil, nil)
	}
}

// load rebuilds the partition's transactions by reading its log from the
// start; Prepare* ones are queued for completion.
func (s *shard) load() error {
	ls := &loadState{txns: map[string]*txnMeta{}}
	end, err := shards.Replay(s.log, s.partition, ErrLoad, ls.applyBatches)
	if err != nil {
		return err
	}
	ls.LogSkips(s.logger, "txn", "__transaction_state")
	if ls.unknownTypes > 0 {
		s.logger.Warn("txn: ignored records of unknown types while loading", "topic", "__transaction_state", "records", ls.unknownTypes)
	}
	s.txns = ls.txns
	for id, m := range s.txns {
		if m.preparing() {
			p := &completion{remaining: maps.Clone(m.partitions)}
			s.pending[id] = p
		}
	}
	s.logger.Debug("txn: loaded partition", "transactional_ids", len(s.txns), "completing", len(s.pending), "end_offset", end)
	return nil
}
