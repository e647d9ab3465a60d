package replica

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/controller"
	"github.com/samsa-broker/samsa/storage"
)

// fetchPartition is one partition a fetcher copies, for one leader epoch.
type fetchPartition struct {
	p           *Partition
	leaderEpoch int32
	// retryAt delays the partition after an error (replica.fetch.backoff.ms).
	retryAt time.Time
}

// fetcher is Kafka's ReplicaFetcherThread: one goroutine per source
// broker, sending Fetch with this node's replica id for every partition
// that broker leads and this node follows.
type fetcher struct {
	m      *Manager
	leader int32
	cancel context.CancelFunc
	done   chan struct{}

	mu struct {
		sync.Mutex
		parts map[storage.TopicPartition]*fetchPartition
	}
	wake chan struct{}
}

func newFetcher(m *Manager, leader int32) *fetcher {
	f := &fetcher{m: m, leader: leader, done: make(chan struct{}), wake: make(chan struct{}, 1)}
	f.mu.parts = map[storage.TopicPartition]*fetchPartition{}
	ctx, cancel := context.WithCancel(m.ctx)
	f.cancel = cancel
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		defer close(f.done)
		m.supervise("fetcher", ctx.Done(), func() { f.run(ctx) }, nil)
	}()
	return f
}

// assign replaces the fetcher's partitions; a partition kept at the same
// leader epoch keeps its backoff.
func (f *fetcher) assign(parts map[storage.TopicPartition]*fetchPartition) {
	f.mu.Lock()
	for tp, fp := range parts {
		if old, ok := f.mu.parts[tp]; ok && old.p == fp.p && old.leaderEpoch == fp.leaderEpoch {
			parts[tp] = old
		}
	}
	f.mu.parts = parts
	f.mu.Unlock()
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

func (f *fetcher) stop() {
	f.cancel()
	<-f.done
}

// ready returns the partitions to fetch now, and when the next one in
// backoff is due (zero if none).
func (f *fetcher) ready(now time.Time) ([]*fetchPartition, time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []*fetchPartition
	var next time.Time
	for _, fp := range f.mu.parts {
		if fp.retryAt.After(now) {
			if next.IsZero() || fp.retryAt.Before(next) {
				next = fp.retryAt
			}
			continue
		}
		out = append(out, fp)
	}
	return out, next
}

func (f *fetcher) run(ctx context.Context) {
	for {
		parts, next := f.ready(f.m.now())
		if len(parts) == 0 {
			var timer *time.Timer
			var due <-chan time.Time
			if !next.IsZero() {
				timer = time.NewTimer(next.Sub(f.m.now()))
				due = timer.C
			}
			select {
			case <-ctx.Done():
			case <-f.wake:
			case <-due:
			}
			if timer != nil {
				timer.Stop()
			}
			if ctx.Err() != nil {
				return
			}
			continue
		}
		req := f.buildRequest(parts)
		resp, err := f.m.opts.Fetch(ctx, f.leader, req)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			f.m.logger.Debug("follower fetch failed", "leader", f.leader, "err", err)
			f.backoff(parts)
			continue
		}
		f.handle(parts, resp)
	}
}

func (f *fetcher) backoff(parts []*fetchPartition) {
	at := f.m.now().Add(f.m.opts.FetchBackoff)
	f.mu.Lock()
	for _, fp := range parts {
		fp.retryAt = at
	}
	f.mu.Unlock()
}

// buildRequest is a sessionless Fetch v12+ (session epoch -1) from this
// replica: fetch offset = log end offset, last fetched epoch = the
// newest epoch of the log, read_uncommitted.
func (f *fetcher) buildRequest(parts []*fetchPartition) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(16)
	req.ReplicaID = f.m.opts.NodeID
	req.ReplicaState.ID = f.m.opts.NodeID
	req.MaxWaitMillis = int32(f.m.opts.FetchMaxWait / time.Millisecond)
	req.MinBytes = 1
	req.MaxBytes = f.m.opts.FetchMaxBytes
	req.IsolationLevel = 0
	req.SessionID = 0
	req.SessionEpoch = -1
	idx := map[string]int{}
	for _, fp := range parts {
		i, ok := idx[fp.p.tp.Topic]
		if !ok {
			i = len(req.Topics)
			idx[fp.p.tp.Topic] = i
			rt := kmsg.NewFetchRequestTopic()
			rt.Topic = fp.p.tp.Topic
			rt.TopicID = fp.p.topicID
			req.Topics = append(req.Topics, rt)
		}
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition = fp.p.tp.Partition
		rp.CurrentLeaderEpoch = fp.leaderEpoch
		rp.FetchOffset = fp.p.log.LogEndOffset()
		rp.LastFetchedEpoch = fp.p.log.LatestEpoch()
		rp.LogStartOffset = fp.p.log.LogStartOffset()
		rp.PartitionMaxBytes = f.m.opts.PartitionFetchMaxBytes
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, rp)
	}
	return req
}

// handle applies a fetch response: appends, high watermarks, truncation
// on divergence or out of range, backoff on errors.
func (f *fetcher) handle(parts []*fetchPartition, resp *kmsg.FetchResponse) {
	byTP := make(map[storage.TopicPartition]*fetchPartition, len(parts))
	names := map[controller.Uuid]string{}
	for _, fp := range parts {
		byTP[fp.p.tp] = fp
		names[fp.p.topicID] = fp.p.tp.Topic
	}
	if resp.ErrorCode != 0 {
		f.m.logger.Warn("follower fetch refused", "leader", f.leader, "code", resp.ErrorCode)
		f.backoff(parts)
		return
	}
	var failed []*fetchPartition
	for _, rt := range resp.Topics {
		name := rt.Topic
		if name == "" {
			name = names[controller.Uuid(rt.TopicID)]
		}
		for _, rp := range rt.Partitions {
			fp, ok := byTP[storage.TopicPartition{Topic: name, Partition: rp.Partition}]
			if !ok {
				continue
			}
			if err := f.handlePartition(fp, &rp); err != nil {
				if !errors.Is(err, ErrStaleEpoch) {
					f.m.logger.Warn("follower fetch of partition failed", "topic", name, "partition", rp.Partition, "leader", f.leader, "err", err)
				}
				failed = append(failed, fp)
			}
		}
	}
	f.backoff(failed)
}

// errFetch wraps a partition error code of a fetch response.
var errFetch = errors.New("replica: fetch error")

func (f *fetcher) handlePartition(fp *fetchPartition, rp *kmsg.FetchResponseTopicPartition) error {
	p, epoch := fp.p, fp.leaderEpoch
	switch rp.ErrorCode {
	case 0:
	case kerr.OffsetOutOfRange.Code:
		// Below the leader's log start: start over there. Above its log
		// end (this replica has records the leader never had, after an
		// unclean election): truncate to what the leader has committed.
		if p.log.LogEndOffset() < rp.LogStartOffset {
			return p.truncateFullyAndStartAt(epoch, rp.LogStartOffset)
		}
		if rp.HighWatermark >= 0 {
			return p.truncateTo(epoch, rp.HighWatermark)
		}
		return fmtFetchErr(rp.ErrorCode)
	default:
		// NOT_LEADER_OR_FOLLOWER, FENCED_LEADER_EPOCH: the next image
		// moves the partition; UNKNOWN_LEADER_EPOCH: the leader has not
		// seen our image yet. Either way, retry after the backoff.
		return fmtFetchErr(rp.ErrorCode)
	}
	if d := rp.DivergingEpoch; d.EndOffset >= 0 || d.Epoch >= 0 {
		off, _ := TruncationOffset(d.Epoch, d.EndOffset, p.log.EndOffsetForEpoch, p.log.LogEndOffset(), p.log.HighWatermark())
		f.m.logger.Info("follower log diverges from leader; truncating", "topic", p.tp.Topic, "partition", p.tp.Partition,
			"diverging_epoch", d.Epoch, "diverging_end_offset", d.EndOffset, "truncate_to", off)
		return p.truncateTo(epoch, off)
	}
	if err := p.appendFromLeader(epoch, rp.RecordBatches, rp.HighWatermark); err != nil {
		if errors.Is(err, storage.ErrUnexpectedOffset) {
			// The log moved under us (a truncation raced the fetch):
			// the next fetch starts from the new end.
			return nil
		}
		return err
	}
	if rp.LogStartOffset >= 0 {
		return p.advanceLogStart(epoch, rp.LogStartOffset)
	}
	return nil
}

func fmtFetchErr(code int16) error {
	if e := kerr.ErrorForCode(code); e != nil {
		return errors.Join(errFetch, e)
	}
	return errFetch
}
