package share

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	sharestate "github.com/samsa-broker/samsa/coordinator/share"
)

// Acknowledgement types of ShareFetch and ShareAcknowledge
// (AcknowledgeTypes): 0 marks an offset that holds no record (a gap left
// by compaction or a control record), renew (KIP-1222) extends the
// acquisition lock and is allowed only in requests with IsRenewAck.
const (
	AckGap     int8 = 0
	AckAccept  int8 = 1
	AckRelease int8 = 2
	AckReject  int8 = 3
	AckRenew   int8 = 4
)

// Acquire modes of ShareFetch v2 (ShareAcquireMode, KIP-1206).
const (
	// AcquireBatchOptimized may pass MaxRecords to end on a batch
	// boundary (the default, and the only mode of v1).
	AcquireBatchOptimized int8 = 0
	// AcquireRecordLimit never acquires more than MaxRecords.
	AcquireRecordLimit int8 = 1
)

// record is the delivery state of one offset in flight.
type record struct {
	state int8 // sharestate.StateAvailable, ...
	count int16
	// batch is the first offset of the record's in-flight batch: the
	// offsets acquired together when first delivered (Kafka's
	// InFlightBatch). It may lie below the start offset once the
	// batch's head is finished. Redeliveries keep these boundaries.
	batch int64
	// split: the in-flight batch tracks state per offset (Kafka
	// initializes an InFlightBatch's offsetState once a fetch or an
	// acknowledgement takes part of it); only the wording of
	// INVALID_RECORD_STATE depends on it.
	split bool
	// member holds the record while it is Acquired, until deadline.
	member   string
	deadline time.Time
}

// limits are a share-partition's group settings, read when it is served.
type limits struct {
	lockDuration  time.Duration // share.record.lock.duration.ms
	deliveryLimit int16         // share.delivery.count.limit
	maxInFlight   int           // share.partition.max.record.locks
	// noRenew: share.renew.acknowledge.enable is false, renew
	// acknowledgements are refused.
	noRenew bool
}

// partitionState is the delivery state machine of one share-partition
// (Kafka's SharePartition without its IO): the share-partition start
// offset (SPSO) start, and one record per offset from start up to the end
// offset (SPEO, start+len(recs)); offsets at or past the end are
// available and were never delivered. It is pure: the caller passes the
// clock and serializes the calls.
type partitionState struct {
	start int64
	recs  []record
}

// end is the share-partition end offset (SPEO): one past the last offset
// ever acquired.
func (s *partitionState) end() int64 { return s.start + int64(len(s.recs)) }

// at returns the record of an in-flight offset.
func (s *partitionState) at(offset int64) *record { return &s.recs[offset-s.start] }

// nextFetchOffset is where a fetch reads from: the first available offset
// in flight, or the end offset.
func (s *partitionState) nextFetchOffset() int64 {
	for i := range s.recs {
		if s.recs[i].state == sharestate.StateAvailable {
			return s.start + int64(i)
		}
	}
	return s.end()
}

// batchRange is one batch of the log as acquisition sees it: its offsets,
// and whether its records are never delivered (a control batch, or a
// batch of an aborted transaction under read_committed): those are
// archived at once.
type batchRange struct {
	first, last int64
	skip        bool
}

// acquireRequest is what one member asks of a share-partition.
type acquireRequest struct {
	member     string
	maxRecords int // <= 0: no limit
	mode       int8
	// batchSize is the request's BatchSize (<= 0: none): see acquire.
	batchSize int
	now       time.Time
}

// AcquiredRange is a run of acquired offsets with one delivery count
// (ShareFetch's AcquiredRecords).
type AcquiredRange struct {
	FirstOffset, LastOffset int64
	DeliveryCount           int16
}

// AckBatch is one acknowledgement batch of a request: offsets
// FirstOffset to LastOffset, with one type for all of them or one per
// offset.
type AckBatch struct {
	FirstOffset, LastOffset int64
	Types                   []int8
}

// typeAt is the acknowledgement type of offset o of the batch.
func (b AckBatch) typeAt(o int64) int8 {
	if len(b.Types) > 1 {
		return b.Types[o-b.FirstOffset]
	}
	return b.Types[0]
}

// ackRequest is a member's acknowledgements of one share-partition.
type ackRequest struct {
	member string
	// renew: the request is a renew request (IsRenewAck), the only kind
	// that may carry AckRenew.
	renew   bool
	batches []AckBatch
	now     time.Time
}

// Messages of acknowledgement errors, as Kafka 4.4 answers them
// (AcknowledgeErrorMessage / ErrorMessage).
const (
	msgPastAcquired = "Batch record not found. The first offset in request is past acquired records."
	msgNotInCache   = "Batch record not found. The request batch offsets are not found in the cache."
	// msgLastPastAcquired answers a batch starting among the acquired
	// records and ending past them (INVALID_REQUEST).
	msgLastPastAcquired = "Batch record not found. The last offset in request is past acquired records."
	// Messages of INVALID_RECORD_STATE for a record the member does not
	// hold: Kafka 4.4 words them by whether the record's in-flight batch
	// tracks state per offset (record.split) or as a whole.
	msgOffsetNotAcquired = "The offset cannot be acknowledged. The offset is not acquired."
	msgNotOffsetOwner    = "Member is not the owner of offset"
	msgBatchNotAcquired  = "The batch cannot be acknowledged. The batch is not in the acquired state."
	msgNotBatchOwner     = "Member is not the owner of batch record"
	// msgRenewDisabled answers a renew acknowledgement in a group with
	// share.renew.acknowledge.enable=false (INVALID_RECORD_STATE).
	msgRenewDisabled = "Renewing acquisition locks is not enabled for the group."
)

// acknowledge applies a member's acknowledgements, all or none: it
// returns a Kafka error code and message (INVALID_REQUEST for a malformed
// batch or one past the acquired records, INVALID_RECORD_STATE for an
// offset the member does not hold) and whether the durable state
// changed. Offsets below the start offset are done already and ignored,
// as Kafka 4.4 does.
func (s *partitionState) acknowledge(req ackRequest, lim limits) (code int16, msg string, dirty bool) {
	if code, msg := s.checkAcks(req, lim); code != 0 {
		return code, msg, false
	}
	for _, b := range req.batches {
		s.splitForAck(b)
	}
	for _, b := range req.batches {
		for o := max(b.FirstOffset, s.start); o <= b.LastOffset; o++ {
			r := s.at(o)
			switch b.typeAt(o) {
			case AckAccept:
				r.state = sharestate.StateAcknowledged
			case AckGap, AckReject:
				r.state = sharestate.StateArchived
			case AckRelease:
				s.releaseRecord(r, lim)
			case AckRenew:
				r.deadline = req.now.Add(lim.lockDuration)
				continue
			}
			r.member, r.deadline = "", time.Time{}
			dirty = true
		}
	}
	if s.advanceStart() {
		dirty = true
	}
	return 0, "", dirty
}

// checkAcks validates acknowledgements without applying them. A renew of
// records the member holds in a group whose
// share.renew.acknowledge.enable is false is INVALID_RECORD_STATE, as
// Kafka 4.4 answers it (after the checks of the offsets' state and
// owner).
func (s *partitionState) checkAcks(req ackRequest, lim limits) (int16, string) {
	prevLast := int64(-1)
	for _, b := range req.batches {
		span := b.LastOffset - b.FirstOffset + 1
		if b.FirstOffset < 0 || span <= 0 || b.FirstOffset <= prevLast || len(b.Types) == 0 || (len(b.Types) != 1 && int64(len(b.Types)) != span) {
			return kerr.InvalidRequest.Code, ""
		}
		prevLast = b.LastOffset
		for _, t := range b.Types {
			// Renew is allowed only in a request that says it
			// renews (IsRenewAck); unknown types are malformed.
			if t < AckGap || t > AckRenew || (t == AckRenew && !req.renew) {
				return kerr.InvalidRequest.Code, ""
			}
		}
		if b.LastOffset < s.start {
			continue // done already
		}
		switch {
		case len(s.recs) == 0:
			return kerr.InvalidRecordState.Code, msgNotInCache
		case b.FirstOffset >= s.end():
			return kerr.InvalidRequest.Code, msgPastAcquired
		case b.LastOffset >= s.end():
			return kerr.InvalidRequest.Code, msgLastPastAcquired
		}
		for o := max(b.FirstOffset, s.start); o <= b.LastOffset; o++ {
			if r := s.at(o); r.state != sharestate.StateAcquired || r.member != req.member {
				return kerr.InvalidRecordState.Code, notHeldMessage(r)
			}
			if lim.noRenew && b.typeAt(o) == AckRenew {
				return kerr.InvalidRecordState.Code, msgRenewDisabled
			}
		}
	}
	return 0, ""
}

// releaseRecord makes an acquired record available again, or archives it
// once it was delivered share.delivery.count.limit times.
func (s *partitionState) releaseRecord(r *record, lim limits) {
	r.state = sharestate.StateAvailable
	if r.count >= lim.deliveryLimit {
		r.state = sharestate.StateArchived
	}
	r.member, r.deadline = "", time.Time{}
}

// releaseMember releases every record the member holds (its share
// session closed or it left the group). It reports whether any changed.
func (s *partitionState) releaseMember(member string, lim limits) bool {
	changed := false
	for i := range s.recs {
		if r := &s.recs[i]; r.state == sharestate.StateAcquired && r.member == member {
			s.releaseRecord(r, lim)
			changed = true
		}
	}
	if changed {
		s.advanceStart()
	}
	return changed
}

// expireLocks releases the records whose acquisition lock expired by now,
// and returns whether any did and the next lock deadline (zero: none).
func (s *partitionState) expireLocks(now time.Time, lim limits) (changed bool, next time.Time) {
	for i := range s.recs {
		r := &s.recs[i]
		if r.state != sharestate.StateAcquired {
			continue
		}
		if !r.deadline.After(now) {
			s.releaseRecord(r, lim)
			changed = true
			continue
		}
		if next.IsZero() || r.deadline.Before(next) {
			next = r.deadline
		}
	}
	if changed {
		s.advanceStart()
	}
	return changed, next
}

// nextDeadline returns the earliest acquisition lock deadline (zero: none).
func (s *partitionState) nextDeadline() (next time.Time) {
	for i := range s.recs {
		if r := &s.recs[i]; r.state == sharestate.StateAcquired && (next.IsZero() || r.deadline.Before(next)) {
			next = r.deadline
		}
	}
	return next
}

// advanceStart moves the start offset over the finished (acknowledged or
// archived) records at its head, and reports whether it moved.
func (s *partitionState) advanceStart() bool {
	i := 0
	for i < len(s.recs) && (s.recs[i].state == sharestate.StateAcknowledged || s.recs[i].state == sharestate.StateArchived) {
		i++
	}
	if i == 0 {
		return false
	}
	s.start += int64(i)
	s.recs = append(s.recs[:0], s.recs[i:]...)
	return true
}

// advanceLogStart moves the start offset to the log start offset when
// retention or DeleteRecords removed the records before it, and reports
// whether it moved: the removed records are gone, whatever their state.
func (s *partitionState) advanceLogStart(logStart int64) bool {
	if logStart <= s.start {
		return false
	}
	if logStart >= s.end() {
		s.recs = s.recs[:0]
	} else {
		s.recs = append(s.recs[:0], s.recs[logStart-s.start:]...)
	}
	s.start = logStart
	s.advanceStart()
	return true
}

// durable returns the state to write: the start offset and the runs of
// in-flight records that are not plain available-and-never-delivered. An
// acquired record is written as available with the delivery count it had
// before its acquisition (KIP-932: the acquisition does not survive a
// change of leader, and Kafka 4.4 writes no state when it acquires): a new
// leader delivers it again at that count plus one, never past
// share.delivery.count.limit.
func (s *partitionState) durable() (start int64, batches []sharestate.Batch) {
	for i := range s.recs {
		r := s.recs[i]
		st, count := r.state, r.count
		if st == sharestate.StateAcquired {
			st, count = sharestate.StateAvailable, r.count-1
		}
		if st == sharestate.StateAvailable && count == 0 {
			continue
		}
		o := s.start + int64(i)
		if k := len(batches) - 1; k >= 0 && batches[k].LastOffset == o-1 && batches[k].DeliveryState == st && batches[k].DeliveryCount == count {
			batches[k].LastOffset = o
			continue
		}
		batches = append(batches, sharestate.Batch{FirstOffset: o, LastOffset: o, DeliveryState: st, DeliveryCount: count})
	}
	return s.start, batches
}

// maxRestoredSpan bounds the offsets restore brings back in flight. A
// leader keeps at most share.partition.max.record.locks (10000 at most)
// plus a batch or two in flight, so durable state never spans more; a
// state that does (a WriteShareGroupState of one batch over 2^62
// offsets) would otherwise take a record per offset. Offsets past the
// bound are taken as never delivered.
const maxRestoredSpan = 1 << 20

// maxRestoredOffset is past any offset a log reaches; restore ignores
// state beyond it (so that no offset arithmetic overflows).
const maxRestoredOffset = 1 << 62

// restore rebuilds the state from its durable form (start >= 0): batches
// below the start are dropped, finished batches at the head move the
// start over them, the end offset is one past the last batch (at most
// maxRestoredSpan past the start).
func restore(start int64, batches []sharestate.Batch) partitionState {
	s := partitionState{start: start}
	for _, b := range batches {
		st := b.DeliveryState
		if st == sharestate.StateAcquired {
			st = sharestate.StateAvailable
		}
		last := min(b.LastOffset, maxRestoredOffset)
		from := max(b.FirstOffset, s.end()) // overlapping batches: the first wins
		if from > last {
			continue
		}
		if finished := st == sharestate.StateAcknowledged || st == sharestate.StateArchived; finished && len(s.recs) == 0 && from == s.start {
			s.start = last + 1
			continue
		}
		if from-s.start >= maxRestoredSpan {
			break
		}
		last = min(last, s.start+maxRestoredSpan-1)
		for s.end() < from {
			s.appendRestored(sharestate.StateAvailable, 0)
		}
		for o := from; o <= last; o++ {
			s.appendRestored(st, b.DeliveryCount)
		}
	}
	s.advanceStart()
	return s
}

// appendRestored appends a restored record at the end. Restored records
// form in-flight batches by runs of one state and delivery count (the
// durable state names runs, not the batches they were acquired in; a new
// leader of Kafka 4.4 likewise makes each state batch it reads an
// in-flight batch).
func (s *partitionState) appendRestored(state int8, count int16) {
	o := s.end()
	batch := o
	if k := len(s.recs) - 1; k >= 0 && s.recs[k].state == state && s.recs[k].count == count {
		batch = s.recs[k].batch
	}
	s.recs = append(s.recs, record{state: state, count: count, batch: batch})
}

// notHeldMessage words INVALID_RECORD_STATE for record r, which the
// acknowledging member does not hold, as Kafka 4.4: per offset, whether
// it is not acquired or another member's; as a whole batch, whether the
// batch is held by no member or by another.
func notHeldMessage(r *record) string {
	switch {
	case r.split && r.state != sharestate.StateAcquired:
		return msgOffsetNotAcquired
	case r.split:
		return msgNotOffsetOwner
	case r.member == "":
		return msgBatchNotAcquired
	}
	return msgNotBatchOwner
}

// splitBatch makes the in-flight batch holding offset o track state per
// offset.
func (s *partitionState) splitBatch(o int64) {
	first, last := s.batchBounds(o)
	for p := max(first, s.start); p <= last; p++ {
		s.at(p).split = true
	}
}

// splitForAck splits the in-flight batches acknowledgement batch b takes
// part of (b does not cover the whole batch, names a type per offset, or
// the batch's head is below the start), as Kafka 4.4's acknowledge
// initializes their per-offset state.
func (s *partitionState) splitForAck(b AckBatch) {
	for o := max(b.FirstOffset, s.start); o <= b.LastOffset && o < s.end(); {
		first, last := s.batchBounds(o)
		if !s.at(o).split && (first < b.FirstOffset || last > b.LastOffset || len(b.Types) > 1 || first < s.start) {
			s.splitBatch(o)
		}
		o = last + 1
	}
}
