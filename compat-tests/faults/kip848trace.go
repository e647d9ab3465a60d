package faults

import (
	"context"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// startTracer logs, into a KIP-848 member's log, where the member starts
// each partition it is given and where that offset came from: the
// committed offset its OffsetFetch returned, or a reset (no commit
// fetched, or a start elsewhere than the fetched commit: an
// OFFSET_OUT_OF_RANGE or a leader-epoch validation after the fetch),
// and every jump of a partition's offsets between two polls. franz-go's
// own lines (debug level) around these show the OffsetFetch, Fetch and
// ListOffsets exchanges behind a start (finding 16 of
// docs/DURABILITY.md).
type startTracer struct {
	topic string
	// log is the member's log, or nil.
	log kgo.Logger
	// onStart, if set, gets every start (its Seq, At and ResetAt left
	// to it) and the wall-clock time of its reset (zero: none).
	onStart func(GroupStart, time.Time)
	member  string

	mu sync.Mutex
	// fetched holds the committed offsets of the member's latest
	// OffsetFetch not yet followed by a delivery of the partition (-1:
	// the answer had none).
	fetched map[int32]fetchedOffset
	// next is the offset after the partition's last delivery.
	next map[int32]int64
	// resets holds, per partition, the reset after OFFSET_OUT_OF_RANGE
	// on the first fetch at the fetched commit, since that OffsetFetch.
	resets map[int32]resetSeen
}

// resetSeen is a reset after OFFSET_OUT_OF_RANGE on a first fetch.
type resetSeen struct {
	broker int32
	at     time.Time
}

// fetchedOffset is one partition of an OffsetFetch answer.
type fetchedOffset struct {
	offset int64
	epoch  int32
	err    error
}

func newStartTracer(topic string, log kgo.Logger) *startTracer {
	return &startTracer{topic: topic, log: log, fetched: map[int32]fetchedOffset{}, next: map[int32]int64{},
		resets: map[int32]resetSeen{}}
}

// logf logs to the member's log, if it has one.
func (s *startTracer) logf(msg string, kv ...any) {
	if s.log != nil {
		s.log.Log(kgo.LogLevelInfo, msg, kv...)
	}
}

// onReset notes franz-go's reset of partition after broker answered
// OFFSET_OUT_OF_RANGE to its first fetch at prior (resetLogger), when
// prior is the commit the last OffsetFetch answered.
func (s *startTracer) onReset(broker, partition int32, prior int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if f, ok := s.fetched[partition]; ok && f.err == nil && f.offset >= 0 && f.offset == prior {
		s.resets[partition] = resetSeen{broker: broker, at: time.Now()}
	}
}

// onFetched is a kgo.OnOffsetsFetched hook: it logs the answer's
// offsets for the topic and remembers them for the next delivery.
func (s *startTracer) onFetched(_ context.Context, _ *kgo.Client, resp *kmsg.OffsetFetchResponse) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, g := range resp.Groups {
		for _, t := range g.Topics {
			if t.Topic != s.topic && t.Topic != "" {
				continue
			}
			for _, p := range t.Partitions {
				f := fetchedOffset{offset: p.Offset, epoch: p.LeaderEpoch, err: kerr.ErrorForCode(p.ErrorCode)}
				s.fetched[p.Partition] = f
				delete(s.resets, p.Partition)
				s.logf("faults: OffsetFetch answered", "partition", p.Partition,
					"committed", p.Offset, "leader_epoch", p.LeaderEpoch, "err", f.err, "group_err", kerr.ErrorForCode(g.ErrorCode))
			}
		}
	}
	return nil
}

// delivered notes a poll's first and last offsets of one partition and
// logs a start after an OffsetFetch, or a jump from the last poll.
func (s *startTracer) delivered(partition int32, first, last int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	next, seen := s.next[partition]
	s.next[partition] = last + 1
	if f, ok := s.fetched[partition]; ok {
		delete(s.fetched, partition)
		r, reset := s.resets[partition]
		delete(s.resets, partition)
		s.logf("faults: partition started", "partition", partition, "at", first,
			"source", startSource(f, first), "fetched_commit", f.offset, "fetched_leader_epoch", f.epoch)
		if s.onStart != nil {
			st := GroupStart{Member: s.member, Partition: partition, Offset: first, Fetched: -1, ResetBroker: -1}
			if f.err == nil {
				st.Fetched = f.offset
			}
			var at time.Time
			if reset {
				st.ResetBroker, at = r.broker, r.at
			}
			s.onStart(st, at)
		}
		return
	}
	if seen && first != next {
		s.logf("faults: partition jumped", "partition", partition, "at", first, "expected", next,
			"source", "no OffsetFetch since the last poll of it")
	}
}

// startSource names where a start at offset at came from, given the
// OffsetFetch answer before it.
func startSource(f fetchedOffset, at int64) string {
	switch {
	case f.err != nil:
		return "reset: the OffsetFetch answered an error"
	case f.offset < 0:
		return "reset: the OffsetFetch had no committed offset"
	case at == f.offset:
		return "committed offset"
	case at < f.offset:
		return "reset below the fetched commit (OFFSET_OUT_OF_RANGE or epoch validation)"
	default:
		return "above the fetched commit (records skipped)"
	}
}
