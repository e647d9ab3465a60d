package share

import (
	sharestate "github.com/samsa-broker/samsa/coordinator/share"
)

// acquire acquires for the member the available offsets of batches (in
// offset order, as read from the log), within the request's record limit
// and the share-partition's in-flight limit. It returns the acquired
// ranges and whether any record changed state in a way that must be
// written (archived control or aborted records).
//
// Records are acquired by in-flight batch, as Kafka 4.4's SharePartition:
//
//   - New offsets (at or past the end offset) become in-flight batches as
//     they are acquired: one per fetch, except that in batch-optimized
//     mode the request's BatchSize splits them at log batch boundaries
//     (KIP-1206, Kafka's createBatches): a log batch starting batchSize
//     or more offsets after the batch's first starts a new one. When a
//     record-limit request stops inside a log batch, the rest of that log
//     batch joins the in-flight batch, available.
//   - Offsets already in flight keep the in-flight batch they were first
//     acquired in: a redelivery never joins two of them in one range, and
//     in batch-optimized mode the record limit is checked between
//     in-flight batches (a batch is taken whole).
//   - Delivery throttling (Kafka's shouldThrottleRecordsDelivery): an
//     in-flight batch whose available records in the read reached the
//     throttle count (see throttleCount) is acquired only when nothing was
//     acquired before it, and ends the fetch once it yielded a record; see
//     throttle for how many of its records go. So a record that fails
//     every delivery (a poison record) cannot take a whole batch to the
//     delivery limit with it.
//
// AcquiredRecords are runs of contiguous offsets of one in-flight batch
// with one delivery count.
func (s *partitionState) acquire(batches []batchRange, req acquireRequest, lim limits) (got []AcquiredRange, dirty bool) {
	a := acquisition{s: s, req: req, lim: lim, current: -1, newBatch: -1}
	if len(batches) > 0 {
		a.readFirst, a.readLast = batches[0].first, batches[len(batches)-1].last
	}
	for _, b := range batches {
		if a.stop || a.full() && (req.mode == AcquireRecordLimit || b.first >= s.end()) {
			break
		}
		if b.last < s.start {
			continue
		}
		first := max(b.first, s.start)
		if first >= s.end() && (a.throttledDone() || !a.startNew(b, first)) {
			break
		}
		for o := first; o <= b.last && !a.stop; o++ {
			if o >= s.end() {
				if o > first && o == s.end() && s.at(o-1).batch != a.newBatch && (a.full() || a.throttledDone() || !a.startNew(b, o)) {
					// A log batch reaching past the end: its new part
					// is new records, taken only below the record
					// limit and the in-flight limit (Kafka acquires
					// past its in-flight batches only then).
					a.stop = true
					break
				}
				a.acquireNew(b, o)
			} else {
				a.acquireInFlight(b, o)
			}
		}
	}
	if s.advanceStart() {
		a.dirty = true
	}
	return a.got, a.dirty
}

// acquisition is one acquire call under way.
type acquisition struct {
	s   *partitionState
	req acquireRequest
	lim limits
	// readFirst and readLast are the offsets the log read covers.
	readFirst, readLast int64
	got                 []AcquiredRange
	n                   int // records acquired
	dirty               bool
	stop                bool
	// current is the in-flight batch of old offsets acquired from (its
	// first offset; -1: none yet); throttled says it is throttled, limit
	// is how many of its records may go (0: not set yet), taken how many
	// went.
	current      int64
	throttled    bool
	limit, taken int
	newBatch     int64 // the in-flight batch new offsets join (-1: none yet)
}

// throttledDone reports whether a throttled in-flight batch yielded
// records: nothing else is acquired in this fetch.
func (a *acquisition) throttledDone() bool { return a.throttled && a.taken > 0 }

// full reports whether the request's record limit is reached.
func (a *acquisition) full() bool { return a.req.maxRecords > 0 && a.n >= a.req.maxRecords }

// startNew decides whether log batch b, whose offsets from first on are
// new, may start: only while the in-flight limit allows (a batch once
// started is taken whole, as Kafka). Offsets between the end and first
// hold no record (compacted away) and count as in flight: with nothing in
// flight the start moves over them, else they are archived one by one
// only when they fit the limit (a long compacted run would otherwise take
// a record each, unbounded); they form an in-flight batch of their own.
func (a *acquisition) startNew(b batchRange, first int64) bool {
	s, lim := a.s, a.lim
	if gap := first - s.end(); len(s.recs) >= lim.maxInFlight || len(s.recs) > 0 && gap >= int64(lim.maxInFlight-len(s.recs)) {
		return false
	}
	if len(s.recs) == 0 && s.start < first {
		s.start = first
		a.dirty = true
	}
	if s.end() < first {
		gapStart := s.end()
		for s.end() < first {
			s.recs = append(s.recs, record{state: sharestate.StateArchived, batch: gapStart})
		}
		a.dirty = true
		a.newBatch = -1 // the records after the gap start a new batch
	}
	return true
}

// acquireNew appends new offset o of log batch b and acquires it.
func (a *acquisition) acquireNew(b batchRange, o int64) {
	s, req := a.s, a.req
	if a.throttledDone() {
		a.stop = true
		return
	}
	if a.full() && !b.skip && req.mode == AcquireRecordLimit {
		// Stopped inside a log batch: its rest joins the in-flight
		// batch, available (Kafka keeps the whole batch in flight).
		if a.newBatch < 0 {
			a.newBatch = o
		}
		for ; o <= b.last; o++ {
			s.recs = append(s.recs, record{state: sharestate.StateAvailable, batch: a.newBatch})
		}
		s.splitBatch(s.end() - 1) // part of it acquired: per offset
		a.stop = true
		return
	}
	if a.newBatch < 0 || req.splitsAt(o, b, a.newBatch) {
		a.newBatch = o
	}
	s.recs = append(s.recs, record{state: sharestate.StateAvailable, batch: a.newBatch})
	r := s.at(o)
	if b.skip {
		r.state = sharestate.StateArchived
		a.dirty = true
		return
	}
	a.take(o, r)
}

// acquireInFlight acquires offset o of log batch b, already in flight,
// if it is available and its in-flight batch's turn allows.
func (a *acquisition) acquireInFlight(b batchRange, o int64) {
	s, req, lim := a.s, a.req, a.lim
	r := s.at(o)
	if r.batch != a.current {
		// Entering an in-flight batch: the record limit and throttling
		// are decided per batch.
		if a.throttledDone() || a.full() {
			a.stop = true
			return
		}
		a.current, a.limit, a.taken = r.batch, 0, 0
		a.throttled = s.throttled(o, a.readFirst, a.readLast, lim)
		if a.throttled && a.n > 0 {
			a.stop = true
			return
		}
		// Taking part of an available batch makes it track state per
		// offset (Kafka: not a full match of the read, more records
		// than a record-limit fetch has left, or throttled).
		if first, last := s.batchBounds(o); !r.split && r.state == sharestate.StateAvailable &&
			(a.throttled || first < a.readFirst || last > a.readLast || req.mode == AcquireRecordLimit && req.maxRecords > 0 && last-first+1 > int64(req.maxRecords-a.n)) {
			s.splitBatch(o)
		}
	}
	if a.full() && !b.skip && req.mode == AcquireRecordLimit {
		a.stop = true
		return
	}
	if r.state != sharestate.StateAvailable {
		return
	}
	if b.skip {
		r.state = sharestate.StateArchived
		a.dirty = true
		return
	}
	if a.throttled {
		if lim.deliveryLimit > 2 && r.count == lim.deliveryLimit-1 && a.taken > 0 {
			a.stop = true // its last delivery goes alone, next fetch
			return
		}
		if t := throttleCount(lim.deliveryLimit); r.count >= t && a.limit == 0 {
			first, last := s.batchBounds(o)
			a.limit = int(max(1, (last-first+1)>>(r.count-t+1)))
		}
	}
	a.take(o, r)
	a.taken++
	if a.throttled && (lim.deliveryLimit > 2 && r.count == lim.deliveryLimit || a.limit > 0 && a.taken >= a.limit) {
		a.stop = true
	}
}

// take acquires available record r at offset o for the member.
func (a *acquisition) take(o int64, r *record) {
	r.state, r.member, r.deadline = sharestate.StateAcquired, a.req.member, a.req.now.Add(a.lim.lockDuration)
	r.count++
	a.n++
	if k := len(a.got) - 1; k >= 0 && a.got[k].LastOffset == o-1 && a.got[k].DeliveryCount == r.count && r.batch != o {
		a.got[k].LastOffset = o
		return
	}
	a.got = append(a.got, AcquiredRange{FirstOffset: o, LastOffset: o, DeliveryCount: r.count})
}

// splitsAt reports whether new offset o, the first of log batch b,
// starts a new in-flight batch after the one starting at batchFirst: it
// holds batchSize offsets already (batch-optimized mode only).
func (req acquireRequest) splitsAt(o int64, b batchRange, batchFirst int64) bool {
	return req.mode == AcquireBatchOptimized && req.batchSize > 0 && o == b.first && o-batchFirst >= int64(req.batchSize)
}

// throttleCount is the delivery count from which records are throttled:
// half the delivery limit rounded up, at least 2 (Kafka 4.4).
func throttleCount(deliveryLimit int16) int16 {
	return max(2, (deliveryLimit+1)/2)
}

// batchBounds returns the first and last offset of the in-flight batch
// holding in-flight offset o (the first may lie below the start).
func (s *partitionState) batchBounds(o int64) (first, last int64) {
	first, last = s.at(o).batch, o
	for last+1 < s.end() && s.at(last+1).batch == first {
		last++
	}
	return first, last
}

// throttled reports whether the in-flight batch holding offset o is
// throttled: one of its available records within the read (readFirst to
// readLast) was delivered throttleCount times or more.
func (s *partitionState) throttled(o, readFirst, readLast int64, lim limits) bool {
	first, last := s.batchBounds(o)
	t := throttleCount(lim.deliveryLimit)
	for p := max(first, readFirst, s.start); p <= min(last, readLast); p++ {
		if r := s.at(p); r.state == sharestate.StateAvailable && r.count >= t {
			return true
		}
	}
	return false
}
