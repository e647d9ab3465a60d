package faults

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Ack is a record the broker acknowledged to a producer: value v is at
// Offset of Partition.
type Ack struct {
	Producer  int
	Seq       int64
	Partition int32
	Offset    int64
	Value     string
	// MsgID is librdkafka's number of the message in its partition (1,
	// 2, ...; 0: not a librdkafka producer, or unknown).
	MsgID uint64
}

// Failure is a send whose outcome the producer does not know (an error or a
// timeout): the record may or may not be in the log.
type Failure struct {
	Value string
	Err   string
}

// Poll is one record a consumer received. Epoch changes whenever the
// consumer's assignment changes (a group rebalance); within one epoch the
// offsets of a partition must only grow.
type Poll struct {
	Consumer  string
	Epoch     int
	Partition int32
	Offset    int64
	Value     string
}

// CommittedObs is one observation of a group's committed offset.
type CommittedObs struct {
	Partition int32
	Offset    int64
}

// Entry is one record of the final read of a partition.
type Entry struct {
	Offset int64
	Value  string
}

// History is everything a workload saw, in the order each observer saw it.
type History struct {
	Acks      []Ack
	Failures  []Failure
	Polls     []Poll
	Committed []CommittedObs
	// GroupConsumers names the consumers of Polls that belong to the group
	// whose committed offsets are in Committed.
	GroupConsumers map[string]bool
	// Final is the whole log of every partition read after the faults
	// healed, by offset.
	Final map[int32][]Entry
	// DataLoss counts franz-go ErrDataLoss reports (a consumer saw its
	// offset vanish, usually after truncation).
	DataLoss int
	// Librdkafka is each confluent producer's own debug log, by producer
	// id, as far as finding 17's chain is concerned (RdkEvidence).
	Librdkafka map[int]*RdkEvidence
}

// Report is what Check found. Each anomaly is counted and the first
// examples are kept.
type Report struct {
	Acked, Failed, FinalRecords int
	// FailedPresent counts sends with an unknown outcome that are in the log
	// (allowed: an unknown outcome may have succeeded).
	FailedPresent int

	Lost               Anomaly // acknowledged, not in the final log
	Duplicated         Anomaly // one value at two offsets of the final log
	Reordered          Anomaly // one producer's acknowledged records of a partition out of send order
	InconsistentOffset Anomaly // two different values seen at one offset
	NonMonotonicPoll   Anomaly // a consumer's offsets of a partition went backwards within an assignment
	CommittedBackwards Anomaly // a group's committed offset decreased
	CommittedSkipped   Anomaly // below the group's committed offset, never delivered to the group
	DataLossReported   int     // client-side data-loss reports (informative)
	// ClientImplicitAck are acknowledged records missing from the log
	// that librdkafka reported delivered by its implicit ack after the
	// broker had refused their batch with nothing appended, as the
	// producer's own debug log proves (finding 17): a client loss,
	// printed, not counted as an anomaly.
	ClientImplicitAck Anomaly
	// FailureErrors are the first distinct errors of failed sends, with
	// their counts (informative).
	FailureErrors map[string]int
}

// Anomaly counts one kind of anomaly and keeps a few examples.
type Anomaly struct {
	Count    int
	Examples []string
}

const maxExamples = 10

func (a *Anomaly) add(format string, args ...any) {
	a.Count++
	if len(a.Examples) < maxExamples {
		a.Examples = append(a.Examples, fmt.Sprintf(format, args...))
	}
}

// Anomalies is the number of anomalies of every kind.
func (r *Report) Anomalies() int {
	return r.Lost.Count + r.Duplicated.Count + r.Reordered.Count + r.InconsistentOffset.Count +
		r.NonMonotonicPoll.Count + r.CommittedBackwards.Count + r.CommittedSkipped.Count
}

// String prints counts and examples.
func (r *Report) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "acked=%d failed=%d (present %d) final=%d data-loss-reports=%d\n",
		r.Acked, r.Failed, r.FailedPresent, r.FinalRecords, r.DataLossReported)
	errs := make([]string, 0, len(r.FailureErrors))
	for e := range r.FailureErrors {
		errs = append(errs, e)
	}
	sort.Strings(errs)
	for _, e := range errs {
		fmt.Fprintf(&b, "  failed send: %dx %s\n", r.FailureErrors[e], e)
	}
	for _, a := range []struct {
		name string
		a    Anomaly
	}{
		{"lost", r.Lost}, {"duplicated", r.Duplicated}, {"reordered", r.Reordered},
		{"inconsistent-offset", r.InconsistentOffset}, {"nonmonotonic-poll", r.NonMonotonicPoll},
		{"committed-backwards", r.CommittedBackwards}, {"committed-skipped", r.CommittedSkipped},
	} {
		fmt.Fprintf(&b, "  %-20s %d", a.name, a.a.Count)
		for _, e := range a.a.Examples {
			fmt.Fprintf(&b, "\n    %s", e)
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "  client-implicit-ack: %d (not an anomaly: librdkafka reported a batch the broker refused as delivered, finding 17)",
		r.ClientImplicitAck.Count)
	for _, e := range r.ClientImplicitAck.Examples {
		fmt.Fprintf(&b, "\n    %s", e)
	}
	b.WriteString("\n")
	return b.String()
}

// parseValue splits a workload value "p<producer>-<seq>".
func parseValue(v string) (producer int, seq int64, ok bool) {
	rest, found := strings.CutPrefix(v, "p")
	if !found {
		return 0, 0, false
	}
	ps, ss, found := strings.Cut(rest, "-")
	if !found {
		return 0, 0, false
	}
	p, err1 := strconv.Atoi(ps)
	s, err2 := strconv.ParseInt(ss, 10, 64)
	return p, s, err1 == nil && err2 == nil
}

type partOffset struct {
	p int32
	o int64
}

// Check runs every checker over h. It is a pure function of the history.
func Check(h *History) *Report {
	r := &Report{Acked: len(h.Acks), Failed: len(h.Failures), DataLossReported: h.DataLoss}

	// Where each value sits in the final log; duplicates.
	finalAt := make(map[string][]partOffset)
	valueAt := make(map[partOffset]string)
	parts := make([]int32, 0, len(h.Final))
	for p := range h.Final {
		parts = append(parts, p)
	}
	sort.Slice(parts, func(i, j int) bool { return parts[i] < parts[j] })
	for _, p := range parts {
		for _, e := range h.Final[p] {
			r.FinalRecords++
			po := partOffset{p, e.Offset}
			if prev, ok := valueAt[po]; ok && prev != e.Value {
				r.InconsistentOffset.add("final read has %q and %q at %d/%d", prev, e.Value, p, e.Offset)
			}
			valueAt[po] = e.Value
			finalAt[e.Value] = append(finalAt[e.Value], po)
		}
	}
	for _, p := range parts {
		for _, e := range h.Final[p] {
			if at := finalAt[e.Value]; len(at) > 1 && at[0] == (partOffset{p, e.Offset}) {
				r.Duplicated.add("%q at %v", e.Value, at)
			}
		}
	}

	// Lost and acknowledged-offset consistency.
	for _, a := range h.Acks {
		if len(finalAt[a.Value]) == 0 {
			if why, ok := implicitAckProven(h, a); ok {
				r.ClientImplicitAck.add("%q acknowledged at %d/%d: %s", a.Value, a.Partition, a.Offset, why)
			} else {
				r.Lost.add("%q acknowledged at %d/%d", a.Value, a.Partition, a.Offset)
			}
		}
		po := partOffset{a.Partition, a.Offset}
		if v, ok := valueAt[po]; ok && v != a.Value {
			r.InconsistentOffset.add("%q acknowledged at %d/%d, final log has %q there", a.Value, a.Partition, a.Offset, v)
		}
	}
	for _, f := range h.Failures {
		if len(finalAt[f.Value]) > 0 {
			r.FailedPresent++
		}
		if _, ok := r.FailureErrors[f.Err]; ok || len(r.FailureErrors) < maxExamples {
			if r.FailureErrors == nil {
				r.FailureErrors = make(map[string]int)
			}
			r.FailureErrors[f.Err]++
		}
	}

	// Producer order: within a partition, one producer's acknowledged
	// records must be in the log in send (sequence) order.
	acked := make(map[string]bool, len(h.Acks))
	for _, a := range h.Acks {
		acked[a.Value] = true
	}
	type prodPart struct {
		producer int
		p        int32
	}
	for _, p := range parts {
		last := make(map[prodPart]Entry)
		for _, e := range h.Final[p] {
			if !acked[e.Value] {
				continue
			}
			prod, seq, ok := parseValue(e.Value)
			if !ok {
				continue
			}
			k := prodPart{prod, p}
			if prev, ok := last[k]; ok {
				_, prevSeq, _ := parseValue(prev.Value)
				if seq < prevSeq {
					r.Reordered.add("partition %d: %q at %d after %q at %d", p, e.Value, e.Offset, prev.Value, prev.Offset)
				}
			}
			last[k] = e
		}
	}

	// Polls: inconsistent offsets against the final log and between
	// consumers, and monotonic offsets within one assignment epoch.
	seenAt := make(map[partOffset]string)
	type consPart struct {
		consumer string
		epoch    int
		p        int32
	}
	lastPoll := make(map[consPart]int64)
	groupGot := make(map[partOffset]bool)
	for _, pl := range h.Polls {
		po := partOffset{pl.Partition, pl.Offset}
		if v, ok := valueAt[po]; ok && v != pl.Value {
			r.InconsistentOffset.add("%s read %q at %d/%d, final log has %q", pl.Consumer, pl.Value, pl.Partition, pl.Offset, v)
		} else if v, ok := seenAt[po]; ok && v != pl.Value {
			r.InconsistentOffset.add("%s read %q at %d/%d, another read saw %q", pl.Consumer, pl.Value, pl.Partition, pl.Offset, v)
		}
		seenAt[po] = pl.Value
		k := consPart{pl.Consumer, pl.Epoch, pl.Partition}
		if prev, ok := lastPoll[k]; ok && pl.Offset <= prev {
			r.NonMonotonicPoll.add("%s epoch %d partition %d: offset %d after %d", pl.Consumer, pl.Epoch, pl.Partition, pl.Offset, prev)
		}
		lastPoll[k] = pl.Offset
		if h.GroupConsumers[pl.Consumer] {
			groupGot[po] = true
		}
	}

	// Committed offsets: never backwards; everything below the last one
	// was delivered to some member.
	lastCommit := make(map[int32]int64)
	for _, c := range h.Committed {
		if prev, ok := lastCommit[c.Partition]; ok && c.Offset < prev {
			r.CommittedBackwards.add("partition %d: committed %d after %d", c.Partition, c.Offset, prev)
		}
		lastCommit[c.Partition] = max(lastCommit[c.Partition], c.Offset)
	}
	for _, p := range parts {
		for _, e := range h.Final[p] {
			if e.Offset >= lastCommit[p] {
				break
			}
			if !groupGot[partOffset{p, e.Offset}] {
				r.CommittedSkipped.add("partition %d offset %d (%q) below committed %d, never delivered to the group", p, e.Offset, e.Value, lastCommit[p])
			}
		}
	}
	return r
}

// implicitAckProven reports whether a, acknowledged and not in the log,
// is a librdkafka implicit ack of a refused batch (finding 17): it was
// acknowledged without an offset (librdkafka's -1001), and its producer's
// own debug log shows its batch refused with nothing appended and then the
// message implicitly acked (RdkEvidence.ProvesImplicitAck).
func implicitAckProven(h *History, a Ack) (string, bool) {
	if a.Offset >= 0 || a.MsgID == 0 {
		return "", false
	}
	ev := h.Librdkafka[a.Producer]
	if ev == nil {
		return "", false
	}
	return ev.ProvesImplicitAck(ev.Topic, a.Partition, a.MsgID)
}
