package share

import (
	"encoding/binary"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	sharestate "github.com/samsa-broker/samsa/coordinator/share"
)

// FuzzPartitionState runs random sequences of acquisitions,
// acknowledgements, releases, lock expiries, log start moves and changes
// of leader (the durable state written and restored) against one
// share-partition's delivery state machine, and checks after every step
// that no offset is held by two members at once, that delivery counts
// never fall nor pass the delivery limit, that finished records stay
// finished, that refused acknowledgements change nothing, that accepted
// ones held only the member's own acquired records, and that the
// in-flight records stay within the in-flight limit plus one batch.
//
//	go test -run '^$' -fuzz FuzzPartitionState -parallel 1 ./broker/share/
func FuzzPartitionState(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15})
	f.Add([]byte{0, 0, 10, 1, 0, 0, 0, 0, 3, 0, 0, 2, 0, 4, 20, 5, 0})
	// A log whose first batch lies far past the start (offsets compacted
	// away): acquisition must not fill the gap record by record.
	f.Add([]byte{7, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0, 5})
	f.Fuzz(func(t *testing.T, data []byte) {
		h := newStateHarness(t, data)
		for step := 0; !h.in.empty() && step < 200; step++ {
			h.step()
		}
	})
}

// fuzzInput hands out the fuzzer's bytes as small numbers; past the end
// every number is zero.
type fuzzInput struct{ b []byte }

func (in *fuzzInput) empty() bool { return len(in.b) == 0 }

func (in *fuzzInput) byte() byte {
	if len(in.b) == 0 {
		return 0
	}
	v := in.b[0]
	in.b = in.b[1:]
	return v
}

// n returns a number in [0, k).
func (in *fuzzInput) n(k int) int { return int(in.byte()) % k }

func (in *fuzzInput) u32() uint32 {
	var b [4]byte
	for i := range b {
		b[i] = in.byte()
	}
	return binary.BigEndian.Uint32(b[:])
}

// stateHarness drives a partitionState and keeps what the invariants need
// of the past: the highest delivery count and whether each offset was
// seen finished.
type stateHarness struct {
	t        *testing.T
	in       *fuzzInput
	s        partitionState
	lim      limits
	now      time.Time
	logStart int64
	logEnd   int64 // the log holds offsets below logEnd
	// maxBatch is the largest batch span handed to acquire.
	maxBatch int64
	// gaps are runs of offsets the log holds no record at (compacted
	// away), in offset order.
	gaps []offsetRun
	// counts is the highest delivery count seen per offset.
	counts map[int64]int16
	// finished are the offsets seen acknowledged or archived.
	finished map[int64]bool
	// extra counts, per offset, the changes of leader that found it
	// acquired at its last delivery: a new leader that restores it
	// available at that count delivers it once more (the limit is
	// checked when a record is released, as Kafka 4.4).
	extra map[int64]int16
}

var fuzzMembers = []string{"m0", "m1", "m2"}

func newStateHarness(t *testing.T, data []byte) *stateHarness {
	in := &fuzzInput{b: data}
	h := &stateHarness{t: t, in: in, now: t0, counts: map[int64]int16{}, finished: map[int64]bool{}, extra: map[int64]int16{}}
	h.lim = limits{lockDuration: time.Duration(1+in.n(50)) * time.Second, deliveryLimit: int16(1 + in.n(6)), maxInFlight: 1 + in.n(64)}
	h.s.start = int64(in.n(8))
	h.logStart, h.logEnd = h.s.start, h.s.start+int64(in.n(40))
	return h
}

// logBatches returns the log's batches from offset from up to its end,
// of random sizes, control batches now and then.
func (h *stateHarness) logBatches(from int64) []batchRange {
	var out []batchRange
	o := h.skipGaps(max(from, h.logStart))
	for o < h.logEnd && len(out) < 32 {
		size := int64(1 + h.in.n(8))
		last := min(o+size-1, h.logEnd-1)
		out = append(out, batchRange{first: o, last: last, skip: h.in.n(8) == 0})
		h.maxBatch = max(h.maxBatch, last-o+1)
		o = h.skipGaps(last + 1)
	}
	return out
}

// skipGaps returns the first offset from o on that is in no gap.
func (h *stateHarness) skipGaps(o int64) int64 {
	for _, g := range h.gaps {
		if g.from <= o && o < g.to {
			o = g.to
		}
	}
	return o
}

// offsetRun is the offsets from to to (exclusive).
type offsetRun struct{ from, to int64 }

func (h *stateHarness) step() {
	in := h.in
	before := h.snapshot()
	op := in.n(9)
	defer func() { h.t.Logf("op %d: start %d end %d", op, h.s.start, h.s.end()) }()
	switch op {
	case 0, 1: // a member fetches
		req := acquireRequest{member: fuzzMembers[in.n(3)], maxRecords: in.n(12) - 1, mode: int8(in.n(2)), now: h.now}
		bs := h.logBatches(h.s.nextFetchOffset())
		got, _ := h.s.acquire(bs, req, h.lim)
		h.checkAcquired(before, bs, req, got)
	case 2, 3: // a member acknowledges
		req := h.ackRequest()
		code, _, _ := h.s.acknowledge(req, h.lim)
		h.checkAcknowledged(before, req, code)
	case 4: // the clock moves, locks expire
		h.now = h.now.Add(time.Duration(in.n(40)) * time.Second)
		h.s.expireLocks(h.now, h.lim)
	case 5: // a member's session closes
		h.s.releaseMember(fuzzMembers[in.n(3)], h.lim)
	case 6: // records are produced
		h.logEnd += int64(in.n(30))
	case 7: // compaction empties offsets; retention or DeleteRecords moves the log start
		switch in.n(3) {
		case 0:
			gap := int64(in.u32() % (1 << 22)) // at most 4M offsets: a filled gap fails the capacity check, not the machine
			h.gaps = append(h.gaps, offsetRun{from: h.logEnd, to: h.logEnd + gap})
			h.logEnd += gap
		default:
			ls := h.logStart + int64(in.n(10))
			h.logStart = min(ls, h.logEnd)
			h.s.advanceLogStart(h.logStart)
		}
	case 8: // a change of leader: the durable state is read again
		for i, r := range h.s.recs {
			if r.state != sharestate.StateAcquired {
				continue
			}
			o := h.s.start + int64(i)
			if r.count >= h.lim.deliveryLimit {
				h.extra[o]++
			}
			// Kafka 4.4 writes nothing at an acquisition: the new leader
			// may find the record at the count before it (KIP-932).
			h.counts[o] = r.count - 1
		}
		start, batches := h.s.durable()
		h.s = restore(start, batches)
		h.s.advanceLogStart(h.logStart)
		for i := range h.s.recs {
			if r := h.s.recs[i]; r.state == sharestate.StateAcquired {
				h.t.Fatalf("offset %d restored as acquired", h.s.start+int64(i))
			}
		}
	}
	h.checkInvariants(before)
}

// ackRequest builds acknowledgement batches around the offsets in
// flight: mostly well-formed, sometimes reversed, overlapping, out of
// order, with unknown types or lists of types of the wrong length.
func (h *stateHarness) ackRequest() ackRequest {
	in := h.in
	req := ackRequest{member: fuzzMembers[in.n(3)], renew: in.n(4) == 0, now: h.now}
	prev := h.s.start - int64(in.n(4))
	for range 1 + in.n(3) {
		first := prev + int64(in.n(12)) - 2
		last := first + int64(in.n(6))
		switch in.n(16) {
		case 0:
			first, last = last, first // reversed
		case 1:
			first = -1 - int64(in.n(3))
		case 2:
			last = 1<<63 - 1
		}
		b := AckBatch{FirstOffset: first, LastOffset: last}
		nt := 1
		if in.n(3) == 0 && last >= first && last-first < 16 {
			nt = int(last - first + 1)
		}
		if in.n(16) == 0 {
			nt = in.n(4)
		}
		for range nt {
			typ := int8(in.n(5))
			if in.n(20) == 0 {
				typ = int8(in.byte())
			}
			b.Types = append(b.Types, typ)
		}
		req.batches = append(req.batches, b)
		prev = last + 1
	}
	return req
}

// recSnapshot is one in-flight record as it was before a step.
type recSnapshot struct {
	state  int8
	count  int16
	member string
}

type stateSnapshot struct {
	start int64
	end   int64
	recs  map[int64]recSnapshot
}

func (h *stateHarness) snapshot() stateSnapshot {
	ss := stateSnapshot{start: h.s.start, end: h.s.end(), recs: make(map[int64]recSnapshot, len(h.s.recs))}
	for i, r := range h.s.recs {
		ss.recs[h.s.start+int64(i)] = recSnapshot{state: r.state, count: r.count, member: r.member}
	}
	return ss
}

// stateOf returns an offset's state in a snapshot: below the start it is
// finished, at or past the end never delivered.
func (ss stateSnapshot) stateOf(o int64) (recSnapshot, bool) {
	r, ok := ss.recs[o]
	return r, ok
}

func (h *stateHarness) checkAcquired(before stateSnapshot, bs []batchRange, req acquireRequest, got []AcquiredRange) {
	t := h.t
	n := 0
	prevLast := int64(-1 << 63)
	for _, g := range got {
		if g.FirstOffset > g.LastOffset || g.FirstOffset <= prevLast {
			t.Fatalf("acquired ranges %v are not ascending and disjoint", got)
		}
		prevLast = g.LastOffset
		for o := g.FirstOffset; o <= g.LastOffset; o++ {
			n++
			if o < before.start {
				t.Fatalf("acquired %d below the start %d", o, before.start)
			}
			if r, ok := before.stateOf(o); ok && r.state != sharestate.StateAvailable {
				t.Fatalf("acquired %d, which was in state %d (member %q)", o, r.state, r.member)
			}
			inBatch := false
			for _, b := range bs {
				if b.first <= o && o <= b.last {
					inBatch = !b.skip
				}
			}
			if !inBatch {
				t.Fatalf("acquired %d, which no delivered batch of %v holds", o, bs)
			}
			if o >= h.s.start {
				if r := h.s.at(o); r.state != sharestate.StateAcquired || r.member != req.member || r.count != g.DeliveryCount {
					t.Fatalf("acquired %d for %s with count %d, but it is %+v", o, req.member, g.DeliveryCount, *r)
				}
			}
		}
	}
	if req.mode == AcquireRecordLimit && req.maxRecords > 0 && n > req.maxRecords {
		t.Fatalf("acquired %d records with a record limit of %d", n, req.maxRecords)
	}
	// Delivery throttling: a record's last delivery goes alone (Kafka
	// 4.4), so a poison record takes no other to the limit with it.
	for _, g := range got {
		if h.lim.deliveryLimit > 2 && g.DeliveryCount == h.lim.deliveryLimit && (len(got) != 1 || g.FirstOffset != g.LastOffset) {
			t.Fatalf("acquired %v: a last delivery (count %d) not alone", got, g.DeliveryCount)
		}
	}
}

func (h *stateHarness) checkAcknowledged(before stateSnapshot, req ackRequest, code int16) {
	t := h.t
	if code != 0 {
		if code != kerr.InvalidRequest.Code && code != kerr.InvalidRecordState.Code {
			t.Fatalf("acknowledgement %+v: code %d", req, code)
		}
		after := h.snapshot()
		if after.start != before.start || after.end != before.end || fmt.Sprint(after.recs) != fmt.Sprint(before.recs) {
			t.Fatalf("refused acknowledgement %+v (code %d) changed the state", req.batches, code)
		}
		return
	}
	prevLast := int64(-1)
	for _, b := range req.batches {
		if b.FirstOffset < 0 || b.FirstOffset > b.LastOffset || b.FirstOffset <= prevLast {
			t.Fatalf("accepted malformed acknowledgement batches %+v", req.batches)
		}
		prevLast = b.LastOffset
		if span := b.LastOffset - b.FirstOffset + 1; len(b.Types) != 1 && int64(len(b.Types)) != span {
			t.Fatalf("accepted %d types for %d offsets", len(b.Types), span)
		}
		for i, typ := range b.Types {
			if typ < AckGap || typ > AckRenew || (typ == AckRenew && !req.renew) {
				t.Fatalf("accepted acknowledgement type %d (type %d, renew %v)", typ, i, req.renew)
			}
		}
		for o := max(b.FirstOffset, before.start); o <= b.LastOffset; o++ {
			r, ok := before.stateOf(o)
			if !ok || r.state != sharestate.StateAcquired || r.member != req.member {
				t.Fatalf("%s acknowledged %d, which it did not hold (%+v, in flight %v)", req.member, o, r, ok)
			}
		}
	}
}

// checkInvariants checks the state after every step.
func (h *stateHarness) checkInvariants(before stateSnapshot) {
	t := h.t
	s := &h.s
	if s.start < before.start {
		t.Fatalf("start offset moved back from %d to %d", before.start, s.start)
	}
	if len(s.recs) > 0 {
		if st := s.recs[0].state; st == sharestate.StateAcknowledged || st == sharestate.StateArchived {
			t.Fatalf("start %d stays on a finished record", s.start)
		}
	}
	// The in-flight window: at most the limit, then a batch taken whole
	// and one reaching into the window from before it (a batch once
	// started goes out whole). The capacity too: a window that grew for
	// a moment (filling a compacted gap record by record) is memory all
	// the same.
	if bound := int64(h.lim.maxInFlight) + 2*h.maxBatch; int64(len(s.recs)) > bound || int64(cap(s.recs)) > 2*bound+64 {
		t.Fatalf("%d records in flight (capacity %d), more than the limit %d plus two batches of %d", len(s.recs), cap(s.recs), h.lim.maxInFlight, h.maxBatch)
	}
	for i := range s.recs {
		o := s.start + int64(i)
		r := &s.recs[i]
		// In-flight batches are runs: each record's batch starts at or
		// before it (the first may start below the start offset), and a
		// record either continues its predecessor's batch or starts one.
		if r.batch > o || i > 0 && r.batch != s.recs[i-1].batch && r.batch != o {
			t.Fatalf("offset %d in in-flight batch %d after one of %d", o, r.batch, s.recs[max(i-1, 0)].batch)
		}
		switch r.state {
		case sharestate.StateAcquired:
			if r.member == "" || r.deadline.IsZero() {
				t.Fatalf("offset %d acquired without member or deadline: %+v", o, *r)
			}
			if h.finished[o] {
				t.Fatalf("offset %d was finished and is acquired again", o)
			}
		case sharestate.StateAvailable:
			if r.member != "" {
				t.Fatalf("offset %d available but held by %q", o, r.member)
			}
			if h.finished[o] {
				t.Fatalf("offset %d was finished and is available again", o)
			}
		case sharestate.StateAcknowledged, sharestate.StateArchived:
			h.finished[o] = true
		default:
			t.Fatalf("offset %d in unknown state %d", o, r.state)
		}
		if r.count < h.counts[o] {
			t.Fatalf("delivery count of %d fell from %d to %d", o, h.counts[o], r.count)
		}
		if r.count > h.lim.deliveryLimit+h.extra[o] {
			t.Fatalf("delivery count of %d is %d, past the limit %d (and %d changes of leader at it)", o, r.count, h.lim.deliveryLimit, h.extra[o])
		}
		h.counts[o] = r.count
	}
}

// FuzzRestore restores durable states as a persister may hand them over
// (unsorted, overlapping, inverted or enormous batches, counts and start
// offsets of any size; a WriteShareGroupState can carry them): restore
// never panics, keeps at most maxRestoredSpan records in flight, none of
// them acquired, and what it restores is a fixed point (writing it and
// restoring it again changes nothing).
//
//	go test -run '^$' -fuzz FuzzRestore -parallel 1 ./broker/share/
func FuzzRestore(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{0, 1, 0, 0, 5, 2, 1})
	f.Add([]byte{3, 200, 1, 0, 0, 4, 3, 0xff, 0xff, 0xff, 0xff, 1, 2, 1})
	f.Fuzz(func(t *testing.T, data []byte) {
		in := &fuzzInput{b: data}
		offset := func() int64 {
			switch in.n(12) {
			case 0:
				return 1<<63 - 1 - int64(in.n(4))
			case 1:
				return 1<<62 + int64(in.n(4)) - 2
			case 2:
				return int64(in.u32())
			default:
				return int64(in.n(64))
			}
		}
		start := offset()
		var batches []sharestate.Batch
		for range in.n(6) {
			first := offset()
			last := first + int64(in.n(16)) - 2
			if in.n(8) == 0 {
				last = offset()
			}
			st := []int8{sharestate.StateAvailable, sharestate.StateAcquired, sharestate.StateAcknowledged, sharestate.StateArchived}[in.n(4)]
			batches = append(batches, sharestate.Batch{FirstOffset: first, LastOffset: last, DeliveryState: st, DeliveryCount: int16(in.n(7))})
		}
		s := restore(start, batches)
		if len(s.recs) > maxRestoredSpan || s.start < start {
			t.Fatalf("restored start %d (from %d) with %d records in flight", s.start, start, len(s.recs))
		}
		for i, r := range s.recs {
			if r.state == sharestate.StateAcquired || r.member != "" {
				t.Fatalf("offset %d restored as %+v", s.start+int64(i), r)
			}
		}
		if len(s.recs) > 0 {
			if st := s.recs[0].state; st == sharestate.StateAcknowledged || st == sharestate.StateArchived {
				t.Fatalf("restored start %d stays on a finished record", s.start)
			}
		}
		again := restore(s.durable())
		if again.start != s.start || !slices.Equal(again.recs, trimNeverDelivered(s.recs)) {
			t.Fatalf("restore is no fixed point: start %d -> %d, %d -> %d records", s.start, again.start, len(s.recs), len(again.recs))
		}
	})
}

// trimNeverDelivered drops the available records never delivered at the
// tail (durable state does not name them, so the end offset comes back
// before them).
func trimNeverDelivered(recs []record) []record {
	for len(recs) > 0 && recs[len(recs)-1].state == sharestate.StateAvailable && recs[len(recs)-1].count == 0 {
		recs = recs[:len(recs)-1]
	}
	return recs
}
