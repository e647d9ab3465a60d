package replica

import (
	"context"
	"errors"
	"reflect"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/controller"
	"github.com/samsa-broker/samsa/storage"
)

// FetchReplicaID returns the replica id of a Fetch (ReplicaState.ID from
// v15, ReplicaID before); >= 0 means a follower fetch.
func FetchReplicaID(req *kmsg.FetchRequest) int32 {
	if req.Version >= 15 {
		return req.ReplicaState.ID
	}
	return req.ReplicaID
}

// ServeReplicaFetch answers a follower's Fetch on the leader (Kafka's
// fetchMessages with a replica id): for each partition it checks the
// leader epoch, reports divergence (DivergingEpoch, v12+), reads up to
// the log end offset (not the high watermark), records the follower's
// fetch (LEO, caught-up time, high watermark, ISR expansion) and returns
// the leader's high watermark and log start offset. Follower fetches are
// sessionless. When nothing is ready it waits up to max_wait_ms for an
// append or high watermark change of one of the partitions (the log's
// notification), for ctx, or for the Manager to close.
func (m *Manager) ServeReplicaFetch(ctx context.Context, req *kmsg.FetchRequest) *kmsg.FetchResponse {
	resp, _ := m.serveReplicaFetch(ctx, req, false)
	return resp
}

// FetchRange is the record range of one partition of a follower fetch
// served by ServeReplicaFetchRanges: Topics[Topic].Partitions[Partition]
// of the response, whose RecordBatches are left empty.
type FetchRange struct {
	Topic, Partition int
	Slice            storage.FileSlice
}

// ServeReplicaFetchRanges is ServeReplicaFetch returning the records as
// pinned segment file ranges (in response order) instead of copies, so
// that a plaintext inter-broker connection sends them with sendfile, as a
// consumer fetch. The caller must Release every range's Slice.
func (m *Manager) ServeReplicaFetchRanges(ctx context.Context, req *kmsg.FetchRequest) (*kmsg.FetchResponse, []FetchRange) {
	return m.serveReplicaFetch(ctx, req, true)
}

func (m *Manager) serveReplicaFetch(ctx context.Context, req *kmsg.FetchRequest, sendFiles bool) (*kmsg.FetchResponse, []FetchRange) {
	resp := req.ResponseKind().(*kmsg.FetchResponse)
	replicaID := FetchReplicaID(req)
	maxBytes := int(req.MaxBytes)
	type slot struct {
		topic int
		// index is the partition's place in resp.Topics[topic].Partitions.
		index int
		p     *Partition
		rp    *kmsg.FetchRequestTopicPartition
		// file is the range read (sendFiles), pinned until handed over.
		file storage.FileSlice
	}
	var slots []slot
	img := m.Image()
	for _, rt := range req.Topics {
		st := kmsg.NewFetchResponseTopic()
		st.Topic, st.TopicID = rt.Topic, rt.TopicID
		ti := len(resp.Topics)
		for i := range rt.Partitions {
			rp := &rt.Partitions[i]
			var p *Partition
			var ok bool
			if req.Version >= 13 {
				p, ok = m.partitionByID(controller.Uuid(rt.TopicID), rp.Partition)
			} else {
				p, ok = m.Partition(storage.TopicPartition{Topic: rt.Topic, Partition: rp.Partition})
			}
			sp := kmsg.NewFetchResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = -1, -1, -1
			sp.RecordBatches = []byte{}
			if !ok {
				sp.ErrorCode = unknownPartitionCode(img, req.Version, rt.Topic, controller.Uuid(rt.TopicID))
			} else {
				slots = append(slots, slot{topic: ti, index: len(st.Partitions), p: p, rp: rp})
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	// out[i] is the response partition of slots[i].
	out := func(i int) *kmsg.FetchResponseTopicPartition {
		return &resp.Topics[slots[i].topic].Partitions[slots[i].index]
	}
	// Ranges not handed over (a read again after a wake-up, a panic) are
	// unpinned here.
	defer func() {
		for i := range slots {
			slots[i].file.Release()
		}
	}()
	waits := make([]<-chan struct{}, len(slots))
	advanced := false
	read := func() (total int, done bool) {
		remaining := maxBytes
		for i := range slots {
			s := &slots[i]
			s.file.Release()
			s.file = storage.FileSlice{}
			sp := out(i)
			waits[i] = s.p.log.Wait()
			res, code := s.p.FollowerFetch(replicaID, s.rp.CurrentLeaderEpoch, s.rp.FetchOffset, s.rp.LogStartOffset, s.rp.LastFetchedEpoch)
			sp.ErrorCode = code
			sp.HighWatermark = res.HighWatermark
			sp.LogStartOffset = s.p.log.LogStartOffset()
			sp.LastStableOffset = min(s.p.log.LastStableOffset(), s.p.log.HighWatermark())
			sp.DivergingEpoch.Epoch, sp.DivergingEpoch.EndOffset = res.DivergingEpoch, res.DivergingEndOffset
			sp.RecordBatches = []byte{}
			// This fetch moved the high watermark: the follower
			// needs the new one now, not after max_wait.
			advanced = advanced || (code == 0 && res.NewHighWatermark)
			if code != 0 {
				if code == kerr.NotLeaderForPartition.Code || code == kerr.FencedLeaderEpoch.Code {
					sp.CurrentLeader.LeaderID, sp.CurrentLeader.LeaderEpoch = s.p.Leader()
				}
				done = true
				continue
			}
			if res.Diverged {
				done = true
				continue
			}
			limit := min(int(s.rp.PartitionMaxBytes), remaining)
			if limit <= 0 && total > 0 {
				continue
			}
			var recs []byte
			var err error
			if sendFiles {
				s.file, err = s.p.log.ReadSlice(s.rp.FetchOffset, max(limit, 0), s.p.log.LogEndOffset(), total == 0)
				total += int(s.file.Length)
				remaining -= int(s.file.Length)
			} else {
				recs, err = s.p.log.Read(s.rp.FetchOffset, max(limit, 0), s.p.log.LogEndOffset(), total == 0)
			}
			if err != nil {
				switch {
				case errors.Is(err, storage.ErrOffsetOutOfRange):
					sp.ErrorCode = kerr.OffsetOutOfRange.Code
				case errors.Is(err, storage.ErrClosed) && !m.opts.Logs.PartitionOffline(s.p.tp):
					// The partition is being stopped or deleted
					// (its log closed under this fetch, its
					// directory online): not a disk failure but a
					// partition this node no longer serves, as
					// Kafka answers a fetch for one it removed.
					t := resp.Topics[s.topic]
					sp.ErrorCode = unknownPartitionCode(m.Image(), req.Version, t.Topic, controller.Uuid(t.TopicID))
				default:
					m.logger.Error("replica fetch read failed", "topic", s.p.tp.Topic, "partition", s.p.tp.Partition, "err", err)
					sp.ErrorCode = kerr.KafkaStorageError.Code
				}
				done = true
				continue
			}
			if len(recs) > 0 {
				sp.RecordBatches = recs
				total += len(recs)
				remaining -= len(recs)
			}
		}
		return total, done
	}
	total, done := read()
	hws := make([]int64, len(slots))
	for i := range slots {
		hws[i] = out(i).HighWatermark
	}
	if wait := time.Duration(req.MaxWaitMillis) * time.Millisecond; !done && !advanced && total < int(req.MinBytes) && wait > 0 && len(slots) > 0 {
		deadline := time.NewTimer(wait)
		defer deadline.Stop()
		for {
			cases := []reflect.SelectCase{
				{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(deadline.C)},
				{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(ctx.Done())},
				{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(m.stopping)},
			}
			for _, w := range waits {
				cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(w)})
			}
			if chosen, _, _ := reflect.Select(cases); chosen < 3 {
				break
			}
			total, done = read()
			moved := false
			for i := range slots {
				moved = moved || out(i).HighWatermark != hws[i]
			}
			// A follower learns a new high watermark at once, not at
			// its next fetch: that is what lets acks=all answer within
			// one round trip of the slowest follower.
			if done || moved || total >= int(req.MinBytes) {
				break
			}
		}
	}
	if req.Version >= 16 && img != nil {
		resp.Brokers = nodeEndpoints(img, resp)
	}
	var ranges []FetchRange
	for i := range slots {
		s := &slots[i]
		if s.file.Length > 0 && out(i).ErrorCode == 0 {
			ranges = append(ranges, FetchRange{Topic: s.topic, Partition: s.index, Slice: s.file})
			s.file = storage.FileSlice{}
		}
	}
	return resp, ranges
}

// unknownPartitionCode answers a partition not hosted here.
func unknownPartitionCode(img *controller.Image, version int16, topic string, id controller.Uuid) int16 {
	if img == nil {
		return kerr.NotLeaderForPartition.Code
	}
	if version >= 13 {
		if _, ok := img.TopicsByID[id]; !ok {
			return kerr.UnknownTopicID.Code
		}
		return kerr.NotLeaderForPartition.Code
	}
	if _, ok := img.Topics[topic]; !ok {
		return kerr.UnknownTopicOrPartition.Code
	}
	return kerr.NotLeaderForPartition.Code
}

// nodeEndpoints lists the brokers named as CurrentLeader in resp (KIP-951).
func nodeEndpoints(img *controller.Image, resp *kmsg.FetchResponse) []kmsg.FetchResponseBroker {
	seen := map[int32]bool{}
	var out []kmsg.FetchResponseBroker
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			id := p.CurrentLeader.LeaderID
			if id < 0 || seen[id] {
				continue
			}
			seen[id] = true
			if b, ok := img.Brokers[id]; ok {
				fb := kmsg.NewFetchResponseBroker()
				fb.NodeID, fb.Host, fb.Port, fb.Rack = b.ID, b.Host, b.Port, b.Rack
				out = append(out, fb)
			}
		}
	}
	return out
}
