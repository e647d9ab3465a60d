package handlers

import (
	"math"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/samsa-broker/samsa/storage"
	"github.com/samsa-broker/samsa/wire"
)

// Idempotent producers (KIP-98) and the producer checks of transactions.
//
// The producer state of a partition (per producer id: epoch, the last 5
// batches' sequences and offsets, open transaction, coordinator epoch of
// the last marker) belongs to the partition's storage.Log: every append
// updates it, the log snapshots it with its segments and restores it on
// open from the newest snapshot and the batches after it (see package
// storage), so a restart costs no replay of the whole log. This file
// checks produce batches and markers against it (checkBatch) and keeps,
// per partition, only what is not log state:
//
//   - a mutex that serializes check and append, so that two retries of
//     one batch on two connections cannot both pass the check (Kafka's log
//     lock covers check and append the same way);
//   - the markers appended per producer since the partition was loaded,
//     the guard of a transactional batch verified with the coordinator.
//
// Idle producers are forgotten by the log itself
// (storage.Log.ExpireProducers, run by the storage Manager for
// producer.id.expiration.ms), as in Kafka.
//
// Lock order: Idempotence.mu, then partitionProducers.mu, then the log's
// own locks. partitionProducers.mu is held across the append (file IO); it
// only serializes idempotent produce and markers of one partition.

// markerSweepInterval is how often a partition drops the marker counts of
// producers its log no longer knows (expired).
const markerSweepInterval = 10 * time.Minute

// ProducerIDs hands out producer ids that never repeat
// (storage.ProducerIDAllocator).
type ProducerIDs interface {
	Next() (int64, error)
}

// Idempotence holds the producer id allocator and the produce-path state
// of every partition led here.
type Idempotence struct {
	ids ProducerIDs

	mu struct {
		sync.Mutex
		partitions map[storage.TopicPartition]*partitionProducers
	}
}

// NewIdempotence returns the idempotence state.
func NewIdempotence(ids ProducerIDs) *Idempotence {
	i := &Idempotence{ids: ids}
	i.mu.partitions = map[storage.TopicPartition]*partitionProducers{}
	return i
}

// partitionProducers is the produce-path state of one partition.
type partitionProducers struct {
	mu struct {
		sync.Mutex
		log       *storage.Log // the log the state describes; nil until loaded
		lastSweep int64        // ms, of the marker counts
		// markers counts the markers appended per producer since the
		// state was loaded: a transactional batch verified with the
		// coordinator is appended only if no marker came in between
		// (Kafka's verification guard), so a late batch cannot reopen a
		// transaction that just ended.
		markers map[int64]uint64
	}
}

// inSequence reports whether next follows last.
func inSequence(last, next int32) bool {
	return int64(next) == int64(last)+1 || (next == 0 && last == math.MaxInt32)
}

// checkResult is the decision for one produce batch.
type checkResult struct {
	// code is a Kafka error code; 0 with duplicate nil means append.
	code int16
	// duplicate is the batch this one repeats: answer success with its
	// offsets and do not append.
	duplicate *storage.ProducerBatch
}

// checkBatch decides what to do with batch h of a producer whose state is
// e (nil: unknown). It follows Kafka 3.x/4.x: an older epoch is
// INVALID_PRODUCER_EPOCH; a producer we have no state for is accepted at
// any sequence (Kafka stopped answering UNKNOWN_PRODUCER_ID in 2.5/KIP-360,
// since the state may just have been removed by retention or expiry); a new
// epoch must start at sequence 0; within an epoch a repeat of one of the
// last storage.ProducerBatchWindow batches is a duplicate, the next
// sequence is appended and anything else is OUT_OF_ORDER_SEQUENCE_NUMBER.
func checkBatch(e *storage.ProducerEntry, h wire.BatchHeader) checkResult {
	if e == nil {
		return checkResult{}
	}
	switch {
	case h.ProducerEpoch < e.ProducerEpoch:
		return checkResult{code: kerr.InvalidProducerEpoch.Code}
	case h.ProducerEpoch > e.ProducerEpoch:
		if h.BaseSequence != 0 {
			return checkResult{code: kerr.OutOfOrderSequenceNumber.Code}
		}
		return checkResult{}
	}
	last := storage.BatchLastSequence(h)
	batches := e.Batches()
	for _, b := range batches {
		if b.FirstSeq == h.BaseSequence && b.LastSeq == last {
			return checkResult{duplicate: &b}
		}
	}
	if len(batches) == 0 || inSequence(batches[len(batches)-1].LastSeq, h.BaseSequence) {
		return checkResult{}
	}
	return checkResult{code: kerr.OutOfOrderSequenceNumber.Code}
}

// partition returns the producer state holder of tp.
func (i *Idempotence) partition(tp storage.TopicPartition) *partitionProducers {
	i.mu.Lock()
	defer i.mu.Unlock()
	p, ok := i.mu.partitions[tp]
	if !ok {
		p = &partitionProducers{}
		i.mu.partitions[tp] = p
	}
	return p
}

// loadLocked starts over when the state describes another log (first use,
// or the topic was deleted and re-created). The log itself holds the
// producer state, so this reads nothing.
// REQUIRES: p.mu held.
func (p *partitionProducers) loadLocked(l *storage.Log, nowMs int64) {
	if p.mu.log == l {
		return
	}
	p.mu.log, p.mu.lastSweep = l, nowMs
	p.mu.markers = map[int64]uint64{}
}

// sweepMarkersLocked drops the marker counts of producers the log no
// longer knows (expired, or truncated away).
// REQUIRES: p.mu held.
func (p *partitionProducers) sweepMarkersLocked(l *storage.Log, nowMs int64) {
	for id := range p.mu.markers {
		if _, ok := l.Producer(id); !ok {
			delete(p.mu.markers, id)
		}
	}
	p.mu.lastSweep = nowMs
}

// idempotentAppend is the outcome of appendIdempotent.
type idempotentAppend struct {
	code      int16
	duplicate *storage.ProducerBatch
	info      storage.AppendInfo
	err       error // from the append: a storage error
	// staleGuard is set when code is INVALID_TXN_STATE because a marker
	// was appended after the batch's verification.
	staleGuard bool
}

// appendIdempotent checks batch h (the only batch of the request) of tp
// against the producer state of the log l and, when it is new and in
// sequence, appends it with doAppend (which must append to l: the log
// updates its producer state), all under the partition's producer mutex.
//
// guard, when not nil, is the marker count txnGuard returned before the
// batch was verified with the transaction coordinator: if a marker was
// appended since, the verification is stale and the batch is
// INVALID_TXN_STATE.
func (i *Idempotence) appendIdempotent(tp storage.TopicPartition, l *storage.Log, h wire.BatchHeader, now time.Time, guard *uint64,
	doAppend func() (storage.AppendInfo, error)) idempotentAppend {
	nowMs := now.UnixMilli()
	p := i.partition(tp)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.loadLocked(l, nowMs)
	if nowMs-p.mu.lastSweep >= markerSweepInterval.Milliseconds() {
		p.sweepMarkersLocked(l, nowMs)
	}
	var e *storage.ProducerEntry
	if cur, ok := l.Producer(h.ProducerID); ok {
		e = &cur
	}
	res := checkBatch(e, h)
	stale := false
	if res.code == 0 && res.duplicate == nil && guard != nil && p.mu.markers[h.ProducerID] != *guard {
		res.code, stale = kerr.InvalidTxnState.Code, true
	}
	if res.code != 0 || res.duplicate != nil {
		return idempotentAppend{code: res.code, duplicate: res.duplicate, staleGuard: stale}
	}
	info, err := doAppend()
	if err != nil {
		return idempotentAppend{err: err}
	}
	return idempotentAppend{info: info}
}

// txnGuard reports whether producerID has an open transaction in tp with
// epoch, as the log's producer state knows it (the produce path then
// skips the coordinator's verification: Kafka verifies only the first
// batch of a transaction in a partition), and the producer's marker count,
// to pass to appendIdempotent after a verification.
func (i *Idempotence) txnGuard(tp storage.TopicPartition, l *storage.Log, producerID int64, epoch int16, now time.Time) (ongoing bool, guard uint64) {
	p := i.partition(tp)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.loadLocked(l, now.UnixMilli())
	e, ok := l.Producer(producerID)
	return ok && e.ProducerEpoch == epoch && e.CurrentTxnFirstOffset >= 0, p.mu.markers[producerID]
}

// txnOngoing is txnGuard's first answer.
func (i *Idempotence) txnOngoing(tp storage.TopicPartition, l *storage.Log, producerID int64, epoch int16) bool {
	ok, _ := i.txnGuard(tp, l, producerID, epoch, time.Now())
	return ok
}

// appendMarker appends a commit or abort marker of producerID with
// doAppend (which must append it to l), under the partition's producer
// mutex, after Kafka's checks: a marker older than the producer's epoch is
// INVALID_PRODUCER_EPOCH (the writer has been fenced), one from an older
// coordinator epoch TRANSACTION_COORDINATOR_FENCED. A marker for a
// producer without state is written: the coordinator aborts transactions
// whose data never arrived.
func (i *Idempotence) appendMarker(tp storage.TopicPartition, l *storage.Log, producerID int64, epoch int16, coordinatorEpoch int32, now time.Time,
	doAppend func() (storage.AppendInfo, error)) (int16, error) {
	nowMs := now.UnixMilli()
	p := i.partition(tp)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.loadLocked(l, nowMs)
	if e, ok := l.Producer(producerID); ok {
		if epoch < e.ProducerEpoch {
			return kerr.InvalidProducerEpoch.Code, nil
		}
		if e.CoordinatorEpoch > coordinatorEpoch && coordinatorEpoch >= 0 {
			return kerr.TransactionCoordinatorFenced.Code, nil
		}
	}
	if _, err := doAppend(); err != nil {
		return 0, err
	}
	p.mu.markers[producerID]++
	return 0, nil
}

// producerSnapshot is one producer as DescribeProducers reports it.
type producerSnapshot struct {
	id               int64
	epoch            int16
	lastSequence     int32
	lastTimestamp    int64
	coordinatorEpoch int32
	txnFirstOffset   int64
}

// producers lists the producer state of tp's log l, by producer id.
func (i *Idempotence) producers(tp storage.TopicPartition, l *storage.Log, now time.Time) []producerSnapshot {
	p := i.partition(tp)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.loadLocked(l, now.UnixMilli())
	entries := l.Producers()
	out := make([]producerSnapshot, 0, len(entries))
	for _, e := range entries {
		s := producerSnapshot{
			id: e.ProducerID, epoch: e.ProducerEpoch, lastSequence: e.LastSequence(), lastTimestamp: -1,
			coordinatorEpoch: e.CoordinatorEpoch, txnFirstOffset: e.CurrentTxnFirstOffset,
		}
		if e.LastTimestamp > 0 {
			s.lastTimestamp = e.LastTimestamp
		}
		out = append(out, s)
	}
	return out
}

// markerCount is the number of markers of producerID appended to tp since
// its state was loaded (for logs).
func (i *Idempotence) markerCount(tp storage.TopicPartition, producerID int64) uint64 {
	p := i.partition(tp)
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mu.markers[producerID]
}
