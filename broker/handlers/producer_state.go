package handlers

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/samsa-broker/samsa/storage"
	"github.com/samsa-broker/samsa/wire"
)

// Idempotent producers (KIP-98, without transactions).
//
// Each partition keeps, per producer id, the producer epoch and the
// metadata of the last producerBatchWindow batches appended for it. A
// produce batch with a producer id is checked against that state
// (checkBatch) and the check and the append run under the partition's
// producer mutex, so two retries of one batch on two connections cannot
// both pass the check.
//
// Lock order: Idempotence.mu, then partitionProducers.mu, then the log's
// own locks. partitionProducers.mu is held across the append (file IO); it
// only serializes idempotent produce to one partition, which Kafka does too
// (the log lock covers check and append there).
//
// State is in memory only. It is rebuilt on the first idempotent produce to
// a partition after start by replaying the batch headers of the whole log
// (no producer state snapshot files yet), so dedup survives a restart.

// producerBatchWindow is how many batches per producer are remembered for
// duplicate detection; clients keep at most 5 requests in flight.
const producerBatchWindow = 5

// producerExpirationCheckInterval is Kafka's default
// producer.id.expiration.check.interval.ms.
const producerExpirationCheckInterval = 10 * time.Minute

// ProducerIDs hands out producer ids that never repeat
// (storage.ProducerIDAllocator).
type ProducerIDs interface {
	Next() (int64, error)
}

// Idempotence holds the producer id allocator and the producer state of
// every partition led here.
type Idempotence struct {
	ids        ProducerIDs
	expiration time.Duration

	mu struct {
		sync.Mutex
		partitions map[storage.TopicPartition]*partitionProducers
	}
}

// NewIdempotence returns the idempotence state; producers are forgotten
// after expiration (producer.id.expiration.ms) without a write.
func NewIdempotence(ids ProducerIDs, expiration time.Duration) *Idempotence {
	i := &Idempotence{ids: ids, expiration: expiration}
	i.mu.partitions = map[storage.TopicPartition]*partitionProducers{}
	return i
}

// producerBatch is what is remembered of one appended batch.
type producerBatch struct {
	firstSeq, lastSeq       int32
	firstOffset, lastOffset int64
}

// producerEntry is one producer's state in one partition.
type producerEntry struct {
	epoch   int16
	batches []producerBatch // oldest first, at most producerBatchWindow
	// lastWrite is when the producer last appended (ms), for expiry.
	lastWrite int64
	// lastTimestamp is the max timestamp of the producer's last batch,
	// for DescribeProducers.
	lastTimestamp int64
	// txnOpen tells whether the producer has an open transaction in this
	// partition, starting at txnFirstOffset.
	txnOpen        bool
	txnFirstOffset int64
	// coordinatorEpoch is the coordinator epoch of the last marker.
	coordinatorEpoch int32
}

// partitionProducers is the producer state of one partition.
type partitionProducers struct {
	mu struct {
		sync.Mutex
		log       *storage.Log // the log the state describes; nil until loaded
		producers map[int64]*producerEntry
		lastSweep int64 // ms
		// markers counts the markers appended per producer since the
		// state was loaded: a transactional batch verified with the
		// coordinator is appended only if no marker came in between
		// (Kafka's verification guard), so a late batch cannot reopen a
		// transaction that just ended.
		markers map[int64]uint64
	}
}

// batchLastSeq is the sequence of the batch's last record; sequences wrap
// from MaxInt32 to 0.
func batchLastSeq(h wire.BatchHeader) int32 {
	return int32((int64(h.BaseSequence) + int64(h.LastOffsetDelta)) % (int64(math.MaxInt32) + 1))
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
	duplicate *producerBatch
}

// checkBatch decides what to do with batch h of a producer whose state is
// e (nil: unknown). It follows Kafka 3.x/4.x: an older epoch is
// INVALID_PRODUCER_EPOCH; a producer we have no state for is accepted at
// any sequence (Kafka stopped answering UNKNOWN_PRODUCER_ID in 2.5/KIP-360,
// since the state may just have been removed by retention or expiry); a new
// epoch must start at sequence 0; within an epoch a repeat of one of the
// last producerBatchWindow batches is a duplicate, the next sequence is
// appended and anything else is OUT_OF_ORDER_SEQUENCE_NUMBER.
func checkBatch(e *producerEntry, h wire.BatchHeader) checkResult {
	if e == nil {
		return checkResult{}
	}
	switch {
	case h.ProducerEpoch < e.epoch:
		return checkResult{code: kerr.InvalidProducerEpoch.Code}
	case h.ProducerEpoch > e.epoch:
		if h.BaseSequence != 0 {
			return checkResult{code: kerr.OutOfOrderSequenceNumber.Code}
		}
		return checkResult{}
	}
	last := batchLastSeq(h)
	for i := range e.batches {
		if b := &e.batches[i]; b.firstSeq == h.BaseSequence && b.lastSeq == last {
			dup := *b
			return checkResult{duplicate: &dup}
		}
	}
	if len(e.batches) == 0 || inSequence(e.batches[len(e.batches)-1].lastSeq, h.BaseSequence) {
		return checkResult{}
	}
	return checkResult{code: kerr.OutOfOrderSequenceNumber.Code}
}

// recordBatch updates the producer state with batch h appended at
// firstOffset at time nowMs and returns the (possibly new) entry.
func recordBatch(e *producerEntry, h wire.BatchHeader, firstOffset, nowMs int64) *producerEntry {
	if e == nil {
		e = &producerEntry{epoch: h.ProducerEpoch, coordinatorEpoch: -1}
	}
	if h.IsControl() {
		// A commit or abort marker ends the open transaction; its epoch
		// (bumped by the coordinator when it aborts a timed-out or fenced
		// transaction) becomes the producer's epoch, fencing older ones.
		if h.ProducerEpoch != e.epoch {
			e.epoch = h.ProducerEpoch
			e.batches = e.batches[:0]
		}
		// The marker's time is the producer's last write, as Kafka's
		// appendEndTxnMarker records it.
		if h.MaxTimestamp > 0 {
			e.lastTimestamp = h.MaxTimestamp
		}
		e.txnOpen = false
		e.lastWrite = max(e.lastWrite, nowMs)
		return e
	}
	if h.IsTransactional() && !e.txnOpen {
		e.txnOpen, e.txnFirstOffset = true, firstOffset
	}
	e.lastTimestamp = h.MaxTimestamp
	if h.ProducerEpoch != e.epoch {
		e.epoch = h.ProducerEpoch
		e.batches = e.batches[:0]
	}
	if len(e.batches) == producerBatchWindow {
		copy(e.batches, e.batches[1:])
		e.batches = e.batches[:producerBatchWindow-1]
	}
	e.batches = append(e.batches, producerBatch{
		firstSeq:    h.BaseSequence,
		lastSeq:     batchLastSeq(h),
		firstOffset: firstOffset,
		lastOffset:  firstOffset + int64(h.LastOffsetDelta),
	})
	e.lastWrite = max(e.lastWrite, nowMs)
	return e
}

// expireProducers removes the producers that have not written for
// expirationMs, except those with an open transaction (Kafka keeps them
// until the marker).
func expireProducers(m map[int64]*producerEntry, nowMs, expirationMs int64) {
	for id, e := range m {
		if nowMs-e.lastWrite >= expirationMs && !e.txnOpen {
			delete(m, id)
		}
	}
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

// errReplay wraps failures to rebuild producer state from a log.
var errReplay = errors.New("handlers: producer state replay")

// loadLocked (re)builds the state from l when it describes another log
// (first use, or the topic was deleted and re-created).
// REQUIRES: p.mu held.
func (p *partitionProducers) loadLocked(l *storage.Log, nowMs int64) error {
	if p.mu.log == l {
		return nil
	}
	m, err := replayProducers(l, nowMs)
	if err != nil {
		return err
	}
	p.mu.log, p.mu.producers, p.mu.lastSweep, p.mu.markers = l, m, nowMs, map[int64]uint64{}
	return nil
}

// replayProducers rebuilds producer state from the batch headers of l,
// from the log start to the log end. Replayed producers count as having
// written at nowMs: the state then lives one more expiration period after
// a restart, which errs towards deduplicating.
func replayProducers(l *storage.Log, nowMs int64) (map[int64]*producerEntry, error) {
	m := map[int64]*producerEntry{}
	off, end := l.LogStartOffset(), l.LogEndOffset()
	for off < end {
		buf, err := l.Read(off, 1<<20, end, true)
		if errors.Is(err, storage.ErrOffsetOutOfRange) && l.LogStartOffset() > off {
			off = l.LogStartOffset() // retention moved the start meanwhile
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("%w: read at %d: %w", errReplay, off, err)
		}
		if len(buf) == 0 {
			break
		}
		for pos := 0; pos+wire.BatchHeaderSize <= len(buf); {
			h, err := wire.ParseBatchHeader(buf[pos:])
			if err != nil || h.TotalSize() <= 0 || pos+h.TotalSize() > len(buf) {
				return nil, fmt.Errorf("%w: bad batch at offset %d", errReplay, off)
			}
			pos += h.TotalSize()
			off = h.LastOffset() + 1
			if h.ProducerID >= 0 {
				m[h.ProducerID] = recordBatch(m[h.ProducerID], h, h.BaseOffset, nowMs)
			}
		}
	}
	return m, nil
}

// idempotentAppend is the outcome of appendIdempotent.
type idempotentAppend struct {
	code      int16
	duplicate *producerBatch
	info      storage.AppendInfo
	err       error // from the append or the replay: a storage error
}

// appendIdempotent checks batch h (the only batch of the request) of tp
// against the producer state and, when it is new and in sequence, appends
// it with doAppend, all under the partition's producer mutex.
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
	if err := p.loadLocked(l, nowMs); err != nil {
		return idempotentAppend{err: err}
	}
	expMs := i.expiration.Milliseconds()
	if nowMs-p.mu.lastSweep >= producerExpirationCheckInterval.Milliseconds() {
		expireProducers(p.mu.producers, nowMs, expMs)
		p.mu.lastSweep = nowMs
		for id := range p.mu.markers {
			if _, ok := p.mu.producers[id]; !ok {
				delete(p.mu.markers, id)
			}
		}
	}
	e := p.mu.producers[h.ProducerID]
	if e != nil && nowMs-e.lastWrite >= expMs && !e.txnOpen {
		delete(p.mu.producers, h.ProducerID)
		e = nil
	}
	res := checkBatch(e, h)
	if res.code == 0 && res.duplicate == nil && guard != nil && p.mu.markers[h.ProducerID] != *guard {
		res.code = kerr.InvalidTxnState.Code
	}
	if res.code != 0 || res.duplicate != nil {
		return idempotentAppend{code: res.code, duplicate: res.duplicate}
	}
	info, err := doAppend()
	if err != nil {
		return idempotentAppend{err: err}
	}
	p.mu.producers[h.ProducerID] = recordBatch(e, h, info.FirstOffset, nowMs)
	return idempotentAppend{info: info}
}

// txnGuard reports whether producerID has an open transaction in tp with
// epoch, as this partition's producer state knows it (the produce path then
// skips the coordinator's verification: Kafka verifies only the first
// batch of a transaction in a partition), and the producer's marker count,
// to pass to appendIdempotent after a verification.
func (i *Idempotence) txnGuard(tp storage.TopicPartition, l *storage.Log, producerID int64, epoch int16, now time.Time) (ongoing bool, guard uint64, err error) {
	p := i.partition(tp)
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.loadLocked(l, now.UnixMilli()); err != nil {
		return false, 0, err
	}
	e := p.mu.producers[producerID]
	return e != nil && e.epoch == epoch && e.txnOpen, p.mu.markers[producerID], nil
}

// txnOngoing is txnGuard's first answer (false on a replay error).
func (i *Idempotence) txnOngoing(tp storage.TopicPartition, l *storage.Log, producerID int64, epoch int16) bool {
	ok, _, err := i.txnGuard(tp, l, producerID, epoch, time.Now())
	return ok && err == nil
}

// appendMarker appends a commit or abort marker of producerID with
// doAppend, under the partition's producer mutex, after Kafka's check: a
// marker older than the producer's epoch is INVALID_PRODUCER_EPOCH (the
// writer has been fenced). A marker for a producer without state is
// written: the coordinator aborts transactions whose data never arrived.
func (i *Idempotence) appendMarker(tp storage.TopicPartition, l *storage.Log, producerID int64, epoch int16, coordinatorEpoch int32, now time.Time,
	doAppend func() (storage.AppendInfo, error)) (int16, error) {
	nowMs := now.UnixMilli()
	p := i.partition(tp)
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.loadLocked(l, nowMs); err != nil {
		return 0, err
	}
	e := p.mu.producers[producerID]
	if e != nil && epoch < e.epoch {
		return kerr.InvalidProducerEpoch.Code, nil
	}
	if e != nil && e.coordinatorEpoch > coordinatorEpoch && coordinatorEpoch >= 0 {
		return kerr.TransactionCoordinatorFenced.Code, nil
	}
	info, err := doAppend()
	if err != nil {
		return 0, err
	}
	e = recordBatch(e, wire.BatchHeader{ProducerID: producerID, ProducerEpoch: epoch, Attributes: 0x30, BaseSequence: -1, MaxTimestamp: nowMs}, info.FirstOffset, nowMs)
	e.coordinatorEpoch = coordinatorEpoch
	p.mu.producers[producerID] = e
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

// producers lists the producer state of tp (loading it from l first).
func (i *Idempotence) producers(tp storage.TopicPartition, l *storage.Log, now time.Time) ([]producerSnapshot, error) {
	p := i.partition(tp)
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.loadLocked(l, now.UnixMilli()); err != nil {
		return nil, err
	}
	out := make([]producerSnapshot, 0, len(p.mu.producers))
	for id, e := range p.mu.producers {
		s := producerSnapshot{id: id, epoch: e.epoch, lastSequence: -1, lastTimestamp: -1, coordinatorEpoch: e.coordinatorEpoch, txnFirstOffset: -1}
		if e.txnOpen {
			s.txnFirstOffset = e.txnFirstOffset
		}
		if n := len(e.batches); n > 0 {
			s.lastSequence = e.batches[n-1].lastSeq
		}
		if e.lastTimestamp > 0 {
			s.lastTimestamp = e.lastTimestamp
		}
		out = append(out, s)
	}
	return out, nil
}
