package storage

import (
	"math"
	"sort"

	"github.com/samsa-broker/samsa/wire"
)

// Producer sequence state (Kafka's ProducerStateManager): per producer id,
// the producer epoch, the last ProducerBatchWindow data batches (first and
// last sequence and offset), the max timestamp of the last batch and the
// coordinator epoch of the last transaction marker. The produce path
// checks idempotent and transactional batches against it (duplicates,
// sequence gaps, fenced epochs); the log keeps it because it is a function
// of the batches in the log: it is updated by every append, snapshotted
// with the open transactions (txn_snapshot.go) and rebuilt from the newest
// snapshot plus the batch headers after it on open and truncation.
//
// A producer's open transaction lives in txnState only (the last stable
// offset needs it as an immutable published value); ProducerEntry copies
// it out, so there is one source for it.

// ProducerBatchWindow is how many data batches per producer the state
// remembers for duplicate detection: clients keep at most 5 requests in
// flight per partition.
const ProducerBatchWindow = 5

// ProducerBatch is what the producer state remembers of one data batch.
type ProducerBatch struct {
	FirstSeq, LastSeq       int32
	FirstOffset, LastOffset int64
}

// ProducerEntry is a copy of one producer's state in a partition, as of
// the log end offset.
type ProducerEntry struct {
	ProducerID    int64
	ProducerEpoch int16
	// CoordinatorEpoch is the coordinator epoch of the producer's last
	// transaction marker, -1 before any.
	CoordinatorEpoch int32
	// LastTimestamp is the max timestamp of the producer's last batch
	// (of a marker, only when positive), -1 before any.
	LastTimestamp int64
	// CurrentTxnFirstOffset is the first offset of the producer's open
	// transaction, -1 when it has none.
	CurrentTxnFirstOffset int64

	batches    [ProducerBatchWindow]ProducerBatch
	numBatches int
}

// Batches returns the remembered data batches of the producer's current
// epoch, oldest first.
func (e *ProducerEntry) Batches() []ProducerBatch { return e.batches[:e.numBatches] }

// LastSequence returns the last sequence of the producer's last data batch
// of its current epoch, -1 if there is none.
func (e *ProducerEntry) LastSequence() int32 {
	if e.numBatches == 0 {
		return -1
	}
	return e.batches[e.numBatches-1].LastSeq
}

// BatchLastSequence returns the sequence of the last record of the batch
// h; sequences wrap from MaxInt32 to 0.
func BatchLastSequence(h wire.BatchHeader) int32 {
	return int32((int64(h.BaseSequence) + int64(h.LastOffsetDelta)) % (int64(math.MaxInt32) + 1))
}

// producerEntry is the state of one producer as the log keeps it: the
// fields of ProducerEntry that are not derived from elsewhere. The writer
// updates it in place.
type producerEntry struct {
	epoch            int16
	numBatches       uint8
	coordinatorEpoch int32
	lastTimestamp    int64
	batches          [ProducerBatchWindow]ProducerBatch // oldest first
}

// producerStates is the producer state of a partition, by producer id.
// Unlike txnState it is mutated in place, not cloned: it is touched by
// every batch of an idempotent producer, and only the writer (and readers
// that take Log.mu for a copy of one entry) look at it.
type producerStates map[int64]*producerEntry

// apply moves the state past batch h (offsets assigned); m is its marker
// when h is a control batch. These are the rules of the produce path:
//
//   - a batch without a producer id, or a control batch that is not a
//     commit or abort marker, changes nothing (Kafka ignores unknown
//     control types);
//   - a batch with another epoch than the producer's becomes its epoch
//     and empties the batch window, as a new epoch restarts sequences;
//   - a marker sets the coordinator epoch and, when positive, the last
//     timestamp (it ends the open transaction in txnState);
//   - a data batch sets the last timestamp and enters the window, which
//     drops its oldest batch beyond ProducerBatchWindow.
func (ps producerStates) apply(h batchHeader, m txnMarker) {
	if h.ProducerID < 0 || (h.IsControl() && !m.valid) {
		return
	}
	e := ps[h.ProducerID]
	if e == nil {
		e = &producerEntry{epoch: h.ProducerEpoch, coordinatorEpoch: -1, lastTimestamp: -1}
		ps[h.ProducerID] = e
	}
	if h.ProducerEpoch != e.epoch {
		// A coordinator that aborts a timed-out or fenced transaction
		// writes its marker with a bumped epoch: that fences the older
		// one too.
		e.epoch = h.ProducerEpoch
		e.numBatches = 0
	}
	if h.IsControl() {
		e.coordinatorEpoch = m.coordinatorEpoch
		if h.MaxTimestamp > 0 {
			e.lastTimestamp = h.MaxTimestamp
		}
		return
	}
	e.lastTimestamp = h.MaxTimestamp
	if e.numBatches == ProducerBatchWindow {
		copy(e.batches[:], e.batches[1:])
		e.numBatches--
	}
	e.batches[e.numBatches] = ProducerBatch{
		FirstSeq:    h.BaseSequence,
		LastSeq:     BatchLastSequence(h),
		FirstOffset: h.BaseOffset,
		LastOffset:  h.LastOffset(),
	}
	e.numBatches++
}

// entry returns the exported copy of producer id's state; txns supplies
// its open transaction.
func (e *producerEntry) entry(id int64, txns *txnState) ProducerEntry {
	out := ProducerEntry{
		ProducerID:            id,
		ProducerEpoch:         e.epoch,
		CoordinatorEpoch:      e.coordinatorEpoch,
		LastTimestamp:         e.lastTimestamp,
		CurrentTxnFirstOffset: -1,
		batches:               e.batches,
		numBatches:            int(e.numBatches),
	}
	if t, open := txns.ongoing[id]; open {
		out.CurrentTxnFirstOffset = t.FirstOffset
	}
	return out
}

// sortedIDs returns the producer ids, ascending.
func (ps producerStates) sortedIDs() []int64 {
	ids := make([]int64, 0, len(ps))
	for id := range ps {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids
}

// Producer returns producer id's state as of the log end offset; ok is
// false when the log knows no such producer.
func (l *Log) Producer(id int64) (e ProducerEntry, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	pe := l.producers[id]
	if pe == nil {
		return ProducerEntry{}, false
	}
	return pe.entry(id, l.txns), true
}

// Producers returns the state of every producer the log knows, by
// producer id (DescribeProducers, expiry sweeps).
func (l *Log) Producers() []ProducerEntry {
	l.mu.Lock()
	defer l.mu.Unlock()
	ids := l.producers.sortedIDs()
	out := make([]ProducerEntry, len(ids))
	for i, id := range ids {
		out[i] = l.producers[id].entry(id, l.txns)
	}
	return out
}

// ExpireProducers forgets the producers whose last batch (its max
// timestamp, or the time of its last marker) is expirationMs or more
// before nowMs, except those with an open transaction (they stay until
// their marker), and returns how many it removed: Kafka's
// producer.id.expiration.ms, which the Manager applies to every log each
// producer.id.expiration.check.interval.ms. Like Kafka, the log does not
// record removals: rebuilding the state from a snapshot taken before a
// removal (after a crash, or on truncation) brings back a removed producer
// whose batches are after the snapshot, until the next expiry. The next
// roll or clean Close writes a snapshot without them.
func (l *Log) ExpireProducers(nowMs, expirationMs int64) int {
	l.writeMu.Lock()
	defer l.writeMu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for id, e := range l.producers {
		if _, open := l.txns.ongoing[id]; open || nowMs-e.lastTimestamp < expirationMs {
			continue
		}
		delete(l.producers, id)
		n++
	}
	if n > 0 {
		l.producersRemoved = true
	}
	return n
}
