package txn

import (
	"maps"
	"math"

	"github.com/twmb/franz-go/pkg/kerr"
)

// State is a transaction's status, numbered as in TransactionLogValue's
// transaction_status.
type State int8

// The states of Kafka's TransactionState. Dead and PrepareEpochFence are
// never written: Dead is followed by a tombstone, and samsa writes an epoch
// fence directly as PrepareAbort with the bumped epoch.
const (
	Empty State = iota
	Ongoing
	PrepareCommit
	PrepareAbort
	CompleteCommit
	CompleteAbort
	Dead
	PrepareEpochFence
)

var stateNames = [...]string{"Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit", "CompleteAbort", "Dead", "PrepareEpochFence"}

// String returns Kafka's name of the state, as DescribeTransactions and
// ListTransactions show it.
func (s State) String() string {
	if s >= 0 && int(s) < len(stateNames) {
		return stateNames[s]
	}
	return "Unknown"
}

// stateByName is the inverse of String.
func stateByName(name string) (State, bool) {
	for i, n := range stateNames {
		if n == name {
			return State(i), true
		}
	}
	return 0, false
}

// noEpoch is RecordBatch.NO_PRODUCER_EPOCH.
const noEpoch = -1

// epochExhausted reports whether epoch leaves no room for the bump an
// abort marker may need: Kafka rotates the producer id at MaxInt16-1.
func epochExhausted(epoch int16) bool { return epoch >= math.MaxInt16-1 }

// txnMeta is one transactional id's state, Kafka's TransactionMetadata.
// Transitions never edit a txnMeta in place: they return the next value,
// which the shard writes and only then installs, so that memory never gets
// ahead of the log.
type txnMeta struct {
	id             string
	producerID     int64
	prevProducerID int64 // the id before the last rotation, -1 if none
	epoch          int16
	// lastEpoch is the epoch before the last bump, to recognise a retried
	// InitProducerId (KIP-360); in memory only, as in Kafka.
	lastEpoch  int16
	timeoutMs  int32
	state      State
	partitions map[TopicPartition]struct{}
	updateMs   int64 // transaction_last_update_timestamp_ms
	startMs    int64 // transaction_start_timestamp_ms, -1 when Empty
	// clientTV is the transaction version the client ends transactions
	// with (client_transaction_version): 2 once it used EndTxn v5 or the
	// implicit add of produce v12+ / TxnOffsetCommit v5.
	clientTV int16
	// nextProducerID is the producer id a transaction version 2 completion
	// moves to because the bumped epoch is exhausted (next_producer_id),
	// -1 when none.
	nextProducerID int64
}

func (m *txnMeta) clone() *txnMeta {
	n := *m
	n.partitions = maps.Clone(m.partitions)
	if n.partitions == nil {
		n.partitions = map[TopicPartition]struct{}{}
	}
	return &n
}

func (m *txnMeta) sortedPartitions() []TopicPartition {
	out := make([]TopicPartition, 0, len(m.partitions))
	for tp := range m.partitions {
		out = append(out, tp)
	}
	sortTPs(out)
	return out
}

func (m *txnMeta) completed() bool {
	return m.state == Empty || m.state == CompleteCommit || m.state == CompleteAbort
}

func (m *txnMeta) preparing() bool { return m.state == PrepareCommit || m.state == PrepareAbort }

// newTxnMeta is a transactional id seen for the first time: a fresh
// producer id and no epoch yet, which InitProducerId bumps to 0.
func newTxnMeta(id string, producerID int64, timeoutMs int32, nowMs int64) *txnMeta {
	return &txnMeta{
		id:             id,
		producerID:     producerID,
		prevProducerID: -1,
		epoch:          noEpoch,
		lastEpoch:      noEpoch,
		timeoutMs:      timeoutMs,
		state:          Empty,
		partitions:     map[TopicPartition]struct{}{},
		updateMs:       nowMs,
		startMs:        -1,
		nextProducerID: -1,
	}
}

// producerIDAndEpoch is the KIP-360 expectation an InitProducerId v3+ may
// carry.
type producerIDAndEpoch struct {
	producerID int64
	epoch      int16
}

// validExpectation is Kafka's isValidProducerId: the expected producer is
// acceptable if the id has no epoch yet, if it names the current producer
// id (the epoch is checked by the bump), or if it names the id before a
// rotation with the exhausted epoch (a retry of the rotation).
func (m *txnMeta) validExpectation(e producerIDAndEpoch) bool {
	return m.epoch == noEpoch || e.producerID == m.producerID ||
		(e.producerID == m.prevProducerID && epochExhausted(e.epoch))
}

// needsRotation reports whether InitProducerId must hand out a new
// producer id rather than bump the epoch.
func (m *txnMeta) needsRotation(expected *producerIDAndEpoch) bool {
	return epochExhausted(m.epoch) && (expected == nil || expected.epoch == m.epoch)
}

// initBump is InitProducerId on a completed transaction without rotation:
// the epoch goes up by one, or, for a retry whose expected epoch is the
// previous one, stays (the retry gets the answer the lost response had).
// REQUIRES: m.completed() and !m.needsRotation(expected).
func (m *txnMeta) initBump(expected *producerIDAndEpoch, timeoutMs int32, nowMs int64) (*txnMeta, int16) {
	next := m.clone()
	switch {
	case expected == nil || m.epoch == noEpoch || expected.epoch == m.epoch:
		next.lastEpoch = m.epoch
		next.epoch = m.epoch + 1
		if expected == nil {
			next.lastEpoch = noEpoch
		}
	case expected.epoch == m.lastEpoch:
		// A retry: answer the same epoch again.
	default:
		return nil, kerr.ProducerFenced.Code
	}
	next.resetEmpty(timeoutMs, nowMs)
	return next, 0
}

// initRotate is InitProducerId with an exhausted epoch: a new producer id
// at epoch 0, remembering the old one for retries.
func (m *txnMeta) initRotate(newProducerID int64, expected *producerIDAndEpoch, timeoutMs int32, nowMs int64) *txnMeta {
	next := m.clone()
	next.prevProducerID = m.producerID
	next.producerID = newProducerID
	next.epoch = 0
	next.lastEpoch = noEpoch
	if expected != nil {
		next.lastEpoch = m.epoch
	}
	next.resetEmpty(timeoutMs, nowMs)
	return next
}

func (m *txnMeta) resetEmpty(timeoutMs int32, nowMs int64) {
	m.state = Empty
	m.timeoutMs = timeoutMs
	m.partitions = map[TopicPartition]struct{}{}
	m.startMs = -1
	m.updateMs = nowMs
}

// fence is the abort of an ongoing transaction by the coordinator (a new
// producer instance, or the timeout): PrepareAbort with the epoch bumped,
// so that the old producer's requests are fenced and the markers carry the
// new epoch.
// REQUIRES: m.state == Ongoing.
func (m *txnMeta) fence(nowMs int64) *txnMeta {
	next := m.clone()
	if m.epoch < math.MaxInt16 {
		next.epoch = m.epoch + 1
	}
	next.lastEpoch = noEpoch
	next.state = PrepareAbort
	next.updateMs = nowMs
	return next
}

// rotatingTo reports whether producerID is the next producer id a
// completing transaction version 2 transaction moves to: until the
// rotation is done, requests with it are CONCURRENT_TRANSACTIONS.
func (m *txnMeta) rotatingTo(producerID int64) bool {
	return m != nil && m.nextProducerID == producerID && m.preparing()
}

// checkProducer is the producer id and epoch check of AddPartitionsToTxn,
// AddOffsetsToTxn and EndTxn. The producer id a completing transaction
// version 2 transaction rotates to is CONCURRENT_TRANSACTIONS until the
// rotation is done.
func (m *txnMeta) checkProducer(producerID int64, epoch int16) int16 {
	if m.rotatingTo(producerID) {
		return kerr.ConcurrentTransactions.Code
	}
	if m == nil || m.producerID != producerID {
		return kerr.InvalidProducerIDMapping.Code
	}
	if m.epoch != epoch {
		return kerr.ProducerFenced.Code
	}
	return 0
}

// addPartitions returns the state after adding tps, or nil when nothing
// changes (all already in the ongoing transaction), or an error code.
func (m *txnMeta) addPartitions(tps []TopicPartition, nowMs int64) (*txnMeta, int16) {
	switch {
	case m.preparing():
		return nil, kerr.ConcurrentTransactions.Code
	case m.state == Ongoing:
		added := false
		for _, tp := range tps {
			if _, ok := m.partitions[tp]; !ok {
				added = true
				break
			}
		}
		if !added {
			return nil, 0
		}
	case m.completed():
	default:
		return nil, kerr.InvalidTxnState.Code
	}
	next := m.clone()
	if m.state != Ongoing {
		next.partitions = map[TopicPartition]struct{}{}
		next.startMs = nowMs
		next.state = Ongoing
	}
	for _, tp := range tps {
		next.partitions[tp] = struct{}{}
	}
	next.updateMs = nowMs
	return next, 0
}

// endTxn returns the Prepare* state EndTxn moves an ongoing transaction
// to; nil with code 0 for an idempotent retry of a completed one.
func (m *txnMeta) endTxn(commit bool, nowMs int64) (*txnMeta, int16) {
	switch m.state {
	case Ongoing:
		next := m.clone()
		next.state = PrepareAbort
		if commit {
			next.state = PrepareCommit
		}
		next.updateMs = nowMs
		return next, 0
	case CompleteCommit:
		if commit {
			return nil, 0
		}
	case CompleteAbort:
		if !commit {
			return nil, 0
		}
	case PrepareCommit:
		if commit {
			return nil, kerr.ConcurrentTransactions.Code
		}
	case PrepareAbort:
		if !commit {
			return nil, kerr.ConcurrentTransactions.Code
		}
	}
	return nil, kerr.InvalidTxnState.Code
}

// complete is the state after every marker of a Prepare* transaction is
// written. A transaction version 2 completion whose bumped epoch is
// exhausted moves to its next producer id at epoch 0.
// REQUIRES: m.preparing().
func (m *txnMeta) complete(nowMs int64) *txnMeta {
	next := m.clone()
	next.state = CompleteAbort
	if m.state == PrepareCommit {
		next.state = CompleteCommit
	}
	if m.nextProducerID != -1 {
		next.prevProducerID = m.producerID
		next.producerID = m.nextProducerID
		next.nextProducerID = -1
		next.epoch = 0
		next.lastEpoch = noEpoch
	}
	next.partitions = map[TopicPartition]struct{}{}
	next.updateMs = nowMs
	return next
}

// endTxnV2Kind is how an EndTxn v5+ request relates to the transaction
// after the producer id and epoch checks.
type endTxnV2Kind int

const (
	// endTxnFenced: neither the current epoch nor a retry.
	endTxnFenced endTxnV2Kind = iota
	// endTxnCurrent: the current producer id and epoch.
	endTxnCurrent
	// endTxnRetry: the epoch (or producer id, after a rotation) before
	// the last bump: a retry of an EndTxn whose answer was lost.
	endTxnRetry
	// endTxnUnknownID: not this transactional id's producer id.
	endTxnUnknownID
)

// classifyV2 is the epoch check of EndTxn v5+ (transaction version 2):
// the epoch bumps with every EndTxn, so the epoch just before the current
// one (or, after a rotation to a new producer id, the old id at its last
// epoch) is a retry rather than a fenced producer.
func (m *txnMeta) classifyV2(producerID int64, epoch int16) endTxnV2Kind {
	switch {
	case m == nil:
		return endTxnUnknownID
	case m.producerID == producerID && m.epoch == epoch:
		return endTxnCurrent
	case m.producerID == producerID && int32(m.epoch) == int32(epoch)+1:
		return endTxnRetry
	case m.producerID != producerID && m.prevProducerID == producerID && epochExhausted(epoch) && m.epoch == 0:
		return endTxnRetry
	case m.producerID != producerID:
		return endTxnUnknownID
	}
	return endTxnFenced
}

// endTxnV2 is EndTxn v5+ on m (transaction version 2, KIP-890 part 2):
// ending a transaction bumps the epoch, so the markers carry the new
// epoch and every transaction fences the ones before it. An abort with no
// transaction ongoing is allowed (it only bumps the epoch). A retry of a
// completed EndTxn (same result) succeeds without a change (nil, 0); a
// commit retried into an abort the coordinator made itself (a timeout)
// is PRODUCER_FENCED, as Kafka (KAFKA-20785), since the commit did not
// happen. nextProducerID is used when the current epoch is exhausted.
// REQUIRES: kind is endTxnCurrent or endTxnRetry.
func (m *txnMeta) endTxnV2(commit bool, kind endTxnV2Kind, nextProducerID func() (int64, error), nowMs int64) (*txnMeta, int16) {
	retry := kind == endTxnRetry
	switch m.state {
	case Ongoing:
		if retry {
			return nil, kerr.ProducerFenced.Code
		}
		return m.prepareV2(commit, nextProducerID, nowMs)
	case PrepareCommit:
		if commit {
			return nil, kerr.ConcurrentTransactions.Code
		}
	case PrepareAbort:
		if !commit {
			return nil, kerr.ConcurrentTransactions.Code
		}
		if retry {
			return nil, kerr.ProducerFenced.Code
		}
	case CompleteCommit:
		switch {
		case commit && retry:
			return nil, 0
		case !commit && !retry:
			return m.prepareV2(false, nextProducerID, nowMs)
		}
	case CompleteAbort:
		switch {
		case !commit && retry:
			return nil, 0
		case !commit:
			return m.prepareV2(false, nextProducerID, nowMs)
		case retry:
			return nil, kerr.ProducerFenced.Code
		}
	case Empty:
		switch {
		case retry:
			return nil, kerr.ProducerFenced.Code
		case !commit:
			return m.prepareV2(false, nextProducerID, nowMs)
		}
	}
	return nil, kerr.InvalidTxnState.Code
}

// prepareV2 is the Prepare* state of a transaction version 2 EndTxn: the
// epoch goes up by one (the markers carry it); if the current epoch is
// already exhausted, a next producer id is taken for the completion.
func (m *txnMeta) prepareV2(commit bool, nextProducerID func() (int64, error), nowMs int64) (*txnMeta, int16) {
	next := m.clone()
	if epochExhausted(m.epoch) {
		pid, err := nextProducerID()
		if err != nil {
			return nil, kerr.CoordinatorNotAvailable.Code
		}
		next.nextProducerID = pid
	}
	next.lastEpoch = m.epoch
	if m.epoch < math.MaxInt16 {
		next.epoch = m.epoch + 1
	}
	next.state = PrepareAbort
	if commit {
		next.state = PrepareCommit
	}
	next.clientTV = 2
	next.updateMs = nowMs
	return next, 0
}

// answerV2 is the producer id and epoch an EndTxn v5+ answers: the ones
// the producer continues with.
func (m *txnMeta) answerV2() (int64, int16) {
	if m.nextProducerID != -1 {
		return m.nextProducerID, 0
	}
	return m.producerID, m.epoch
}

// verify is the check of KIP-890 part 1: is tp in the ongoing transaction
// of this producer? A stale epoch is PRODUCER_FENCED, which callers on the
// produce path report as INVALID_PRODUCER_EPOCH.
func (m *txnMeta) verify(producerID int64, epoch int16, tp TopicPartition) int16 {
	if code := m.checkProducer(producerID, epoch); code != 0 {
		return code
	}
	if m.preparing() {
		return kerr.ConcurrentTransactions.Code
	}
	if _, ok := m.partitions[tp]; ok && m.state == Ongoing {
		return 0
	}
	return kerr.InvalidTxnState.Code
}

// timedOut reports whether an ongoing transaction passed its timeout.
func (m *txnMeta) timedOut(nowMs int64) bool {
	return m.state == Ongoing && m.startMs+int64(m.timeoutMs) < nowMs
}

// expired reports whether an idle transactional id passed
// transactional.id.expiration.ms.
func (m *txnMeta) expired(nowMs, expirationMs int64) bool {
	return m.completed() && m.updateMs+expirationMs <= nowMs
}
