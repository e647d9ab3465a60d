package faults

import (
	"context"
	"sync"

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
	log   kgo.Logger

	mu sync.Mutex
	// fetched holds the committed offsets of the member's latest
	// OffsetFetch not yet followed by a delivery of the partition (-1:
	// the answer had none).
	fetched map[int32]fetchedOffset
	// next is the offset after the partition's last delivery.
	next map[int32]int64
}

// fetchedOffset is one partition of an OffsetFetch answer.
type fetchedOffset struct {
	offset int64
	epoch  int32
	err    error
}

func newStartTracer(topic string, log kgo.Logger) *startTracer {
	return &startTracer{topic: topic, log: log, fetched: map[int32]fetchedOffset{}, next: map[int32]int64{}}
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
				s.log.Log(kgo.LogLevelInfo, "faults: OffsetFetch answered", "partition", p.Partition,
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
		s.log.Log(kgo.LogLevelInfo, "faults: partition started", "partition", partition, "at", first,
			"source", startSource(f, first), "fetched_commit", f.offset, "fetched_leader_epoch", f.epoch)
		return
	}
	if seen && first != next {
		s.log.Log(kgo.LogLevelInfo, "faults: partition jumped", "partition", partition, "at", first, "expected", next,
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
