package storage

import (
	"fmt"
	"sort"

	"github.com/samsa-broker/samsa/wire"
)

// OngoingTxn is an open transaction of one producer in a partition: it
// began with the producer's first transactional batch at FirstOffset and
// ends with a commit or abort marker.
type OngoingTxn struct {
	ProducerID    int64
	ProducerEpoch int16
	FirstOffset   int64
}

// ControlMarker is a transaction marker to append (WriteTxnMarkers).
// Timestamp is the marker's timestamp in milliseconds; 0 or less means the
// log's clock (Kafka stamps markers with the broker's time).
type ControlMarker struct {
	ProducerID       int64
	ProducerEpoch    int16
	Commit           bool
	CoordinatorEpoch int32
	LeaderEpoch      int32
	Timestamp        int64
}

// txnMarker is what the state machines need of a control batch.
type txnMarker struct {
	valid            bool // a commit or abort marker
	commit           bool
	coordinatorEpoch int32
}

// txnState is the set of open transactions of a partition as of some
// offset: the pure state machine behind the last stable offset and the
// aborted transaction index (with producerStates, Kafka's
// ProducerStateManager).
//
// A published txnState (Log.txns) is immutable: writers clone it, apply
// batches to the clone and publish the clone.
type txnState struct {
	ongoing map[int64]OngoingTxn // by producer id
	// firstUnstable is the smallest FirstOffset in ongoing, -1 if none.
	firstUnstable int64
}

func newTxnState() *txnState {
	return &txnState{ongoing: map[int64]OngoingTxn{}, firstUnstable: -1}
}

func (s *txnState) clone() *txnState {
	c := &txnState{ongoing: make(map[int64]OngoingTxn, len(s.ongoing)+1), firstUnstable: s.firstUnstable}
	for k, v := range s.ongoing {
		c.ongoing[k] = v
	}
	return c
}

// affects reports whether the batch h can change the state: a control
// batch, or a transactional batch of a producer without an open
// transaction.
func (s *txnState) affects(h batchHeader) bool {
	if h.ProducerID < 0 {
		return false
	}
	if h.IsControl() {
		return true
	}
	if !h.IsTransactional() {
		return false
	}
	_, open := s.ongoing[h.ProducerID]
	return !open
}

// apply moves the state past the batch h (whose offsets are assigned); m
// is its marker for a control batch. It returns the transaction the batch
// aborted, if any. A marker for a producer without an open transaction
// changes nothing: coordinators write markers for empty or already
// completed transactions.
func (s *txnState) apply(h batchHeader, m txnMarker) (AbortedTxn, bool) {
	if h.ProducerID < 0 {
		return AbortedTxn{}, false
	}
	if h.IsControl() {
		if !m.valid {
			return AbortedTxn{}, false
		}
		t, open := s.ongoing[h.ProducerID]
		if !open {
			return AbortedTxn{}, false
		}
		delete(s.ongoing, h.ProducerID)
		s.firstUnstable = -1
		for _, o := range s.ongoing {
			if s.firstUnstable < 0 || o.FirstOffset < s.firstUnstable {
				s.firstUnstable = o.FirstOffset
			}
		}
		if m.commit {
			return AbortedTxn{}, false
		}
		lso := h.LastOffset() + 1
		if s.firstUnstable >= 0 {
			lso = s.firstUnstable
		}
		return AbortedTxn{ProducerID: h.ProducerID, FirstOffset: t.FirstOffset, LastOffset: h.LastOffset(), LastStableOffset: lso}, true
	}
	if !h.IsTransactional() {
		return AbortedTxn{}, false
	}
	if _, open := s.ongoing[h.ProducerID]; !open {
		s.ongoing[h.ProducerID] = OngoingTxn{ProducerID: h.ProducerID, ProducerEpoch: h.ProducerEpoch, FirstOffset: h.BaseOffset}
		if s.firstUnstable < 0 || h.BaseOffset < s.firstUnstable {
			s.firstUnstable = h.BaseOffset
		}
	}
	return AbortedTxn{}, false
}

// sorted returns the open transactions by first offset.
func (s *txnState) sorted() []OngoingTxn {
	out := make([]OngoingTxn, 0, len(s.ongoing))
	for _, t := range s.ongoing {
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].FirstOffset < out[j].FirstOffset })
	return out
}

// parseMarker reads the marker of the control batch b.
func parseMarker(b []byte) (txnMarker, error) {
	commit, coordinatorEpoch, ok, err := wire.ParseControlBatch(b)
	if err != nil {
		return txnMarker{}, err
	}
	return txnMarker{valid: ok, commit: commit, coordinatorEpoch: coordinatorEpoch}, nil
}

// parseMarkers returns the markers of the control batches among the
// batches hs of records, indexed like hs; nil (no allocation) when there
// is no control batch, the usual case.
func parseMarkers(records []byte, hs []batchHeader) ([]txnMarker, error) {
	var markers []txnMarker
	pos := 0
	for i, h := range hs {
		b := records[pos : pos+h.TotalSize()]
		pos += h.TotalSize()
		if !h.IsControl() || h.ProducerID < 0 {
			continue
		}
		m, err := parseMarker(b)
		if err != nil {
			return nil, fmt.Errorf("%w: control batch at offset %d: %w", ErrInvalidBatch, h.BaseOffset, err)
		}
		if markers == nil {
			markers = make([]txnMarker, len(hs))
		}
		markers[i] = m
	}
	return markers, nil
}

// markerAt returns markers[i], or no marker when markers is nil.
func markerAt(markers []txnMarker, i int) txnMarker {
	if markers == nil {
		return txnMarker{}
	}
	return markers[i]
}

// planTxns returns the state after the batches hs (offsets assigned, with
// markers from parseMarkers) and the transactions they abort, in order.
// next is cur itself when nothing changes; otherwise a new state (cur is
// not modified).
func planTxns(cur *txnState, hs []batchHeader, markers []txnMarker) (next *txnState, aborted []AbortedTxn) {
	next = cur
	for i, h := range hs {
		if !next.affects(h) {
			continue
		}
		if next == cur {
			next = cur.clone()
		}
		if a, ok := next.apply(h, markerAt(markers, i)); ok {
			aborted = append(aborted, a)
		}
	}
	return next, aborted
}

// LastStableOffset returns the last stable offset: the high watermark, or
// the first offset of the oldest open transaction if that is lower (but
// never below the log start offset). read_committed fetches read up to it.
func (l *Log) LastStableOffset() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lastStableOffsetLocked()
}

// REQUIRES: l.mu held.
func (l *Log) lastStableOffsetLocked() int64 {
	lso := l.mu.highWatermark
	if fu := l.txns.firstUnstable; fu >= 0 && fu < lso {
		lso = max(fu, l.mu.logStartOffset)
	}
	return lso
}

// AbortedTransactions lists the aborted transactions whose range
// [FirstOffset, LastOffset] overlaps [from, upTo), oldest marker first. A
// read_committed fetch that returns batches from from up to (not
// including) upTo answers with these as its aborted_transactions. Like
// Kafka it searches the segments from the one holding from onwards and
// stops at the first entry whose last stable offset reaches upTo.
func (l *Log) AbortedTransactions(from, upTo int64) []AbortedTxn {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.mu.closed || upTo <= from {
		return nil
	}
	segs := l.mu.segments
	i := sort.Search(len(segs), func(i int) bool { return segs[i].baseOffset > from })
	i = max(i-1, 0)
	var out []AbortedTxn
	for _, s := range segs[i:] {
		var complete bool
		if out, complete = s.txnIndex.collect(from, upTo, out); complete {
			break
		}
	}
	return out
}

// OngoingTransactions lists the open transactions, oldest first
// (DescribeProducers; the first one bounds the last stable offset).
func (l *Log) OngoingTransactions() []OngoingTxn {
	l.mu.Lock()
	st := l.txns
	l.mu.Unlock()
	return st.sorted()
}

// AppendControl appends a commit or abort marker for a producer at the
// log end offset: it ends the producer's open transaction (if it has one)
// and, for an abort, adds the transaction to the aborted transaction index.
func (l *Log) AppendControl(m ControlMarker) (AppendInfo, error) {
	ts := m.Timestamp
	if ts <= 0 {
		ts = l.now().UnixMilli()
	}
	b, err := wire.EncodeControlBatch(m.ProducerID, m.ProducerEpoch, m.Commit, m.CoordinatorEpoch, m.LeaderEpoch, ts)
	if err != nil {
		return AppendInfo{}, fmt.Errorf("storage: encode control batch: %w", err)
	}
	return l.Append(b)
}
