package faults

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// ErrFinalRead is returned when the final read cannot get every partition
// to its end offset before its deadline.
var ErrFinalRead = errors.New("faults: final read incomplete")

// QueueOptions configures the queue workload.
type QueueOptions struct {
	Topic      string
	Partitions int32
	// Producers is the number of idempotent acks=all franz-go producers.
	Producers int
	// Interval is the pause between two sends of one producer.
	Interval time.Duration
	// Group and GroupMembers: consumers in one classic consumer group that
	// commit after every poll. GroupMembers 0 runs none.
	Group        string
	GroupMembers int
	// Acks is the producers' acks: -1 (all, with idempotence) or 1 (leader
	// only, idempotence off).
	Acks int
	// TopicConfigs are set on the topic at creation.
	TopicConfigs map[string]*string
}

// Queue runs producers and consumers against a Cluster and records a
// History for Check.
type Queue struct {
	o     QueueOptions
	addrs []string

	mu   sync.Mutex
	hist History

	cancel context.CancelFunc
	wg     sync.WaitGroup
	// producersWG is waited for first, so consumers see the last records.
	producersWG sync.WaitGroup
	sent        atomic.Int64
}

// CreateTopic creates the workload's topic with replication factor rf and
// waits until every partition has a leader.
func CreateTopic(ctx context.Context, addrs []string, o QueueOptions, rf int16) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...))
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	r, err := adm.CreateTopic(ctx, o.Partitions, rf, o.TopicConfigs, o.Topic)
	if err != nil {
		return fmt.Errorf("faults: create topic: %w", err)
	}
	if r.Err != nil {
		return fmt.Errorf("faults: create topic: %w (%s)", r.Err, r.ErrMessage)
	}
	return pollUntil(ctx, time.Minute, func(ctx context.Context) (bool, error) {
		md, err := adm.Metadata(ctx, o.Topic)
		if err != nil {
			return false, err
		}
		td, ok := md.Topics[o.Topic]
		if !ok || td.Err != nil || len(td.Partitions) != int(o.Partitions) {
			return false, nil
		}
		for _, p := range td.Partitions {
			if p.Leader < 0 || len(p.ISR) < int(rf) {
				return false, nil
			}
		}
		return true, nil
	})
}

// pollUntil calls f every 200ms until it returns true, ctx ends or d passes.
func pollUntil(ctx context.Context, d time.Duration, f func(context.Context) (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	var last error
	for {
		rctx, rcancel := context.WithTimeout(ctx, 5*time.Second)
		ok, err := f(rctx)
		rcancel()
		if ok {
			return nil
		}
		if err != nil {
			last = err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("faults: condition not met within %v: %w (last error: %v)", d, ctx.Err(), last)
		case <-tick.C:
		}
	}
}

// StartQueue starts the producers and consumers; Stop ends them.
func StartQueue(addrs []string, o QueueOptions) (*Queue, error) {
	q := &Queue{o: o, addrs: addrs}
	q.hist.GroupConsumers = make(map[string]bool)
	ctx, cancel := context.WithCancel(context.Background())
	q.cancel = cancel
	var clients []*kgo.Client
	fail := func(err error) (*Queue, error) {
		cancel()
		for _, c := range clients {
			c.Close()
		}
		return nil, err
	}
	for i := range o.Producers {
		opts := []kgo.Opt{
			kgo.SeedBrokers(addrs...),
			kgo.DefaultProduceTopic(o.Topic),
			kgo.RecordPartitioner(kgo.ManualPartitioner()),
			kgo.RecordDeliveryTimeout(2 * time.Minute),
			kgo.ProducerLinger(2 * time.Millisecond),
		}
		if o.Acks == 1 {
			opts = append(opts, kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
		} else {
			opts = append(opts, kgo.RequiredAcks(kgo.AllISRAcks()))
		}
		cl, err := kgo.NewClient(opts...)
		if err != nil {
			return fail(err)
		}
		clients = append(clients, cl)
		q.producersWG.Add(1)
		go q.produce(ctx, cl, i)
	}
	direct, err := kgo.NewClient(kgo.SeedBrokers(addrs...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{o.Topic: allAtStart(o.Partitions)}),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(500*time.Millisecond))
	if err != nil {
		return fail(err)
	}
	clients = append(clients, direct)
	q.wg.Add(1)
	go q.consume(ctx, direct, "direct", nil)
	for i := range o.GroupMembers {
		name := fmt.Sprintf("member%d", i)
		epoch := new(atomic.Int64)
		bump := func(context.Context, *kgo.Client, map[string][]int32) { epoch.Add(1) }
		cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...),
			kgo.ConsumerGroup(o.Group), kgo.ConsumeTopics(o.Topic),
			kgo.DisableAutoCommit(), kgo.BlockRebalanceOnPoll(),
			kgo.SessionTimeout(10*time.Second), kgo.HeartbeatInterval(time.Second),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
			kgo.FetchMaxWait(500*time.Millisecond),
			kgo.OnPartitionsAssigned(bump), kgo.OnPartitionsRevoked(bump), kgo.OnPartitionsLost(bump))
		if err != nil {
			return fail(err)
		}
		clients = append(clients, cl)
		q.hist.GroupConsumers[name] = true
		q.wg.Add(1)
		go q.consume(ctx, cl, name, epoch)
	}
	if o.GroupMembers > 0 {
		q.wg.Add(1)
		go q.observeCommits(ctx)
	}
	return q, nil
}

func allAtStart(n int32) map[int32]kgo.Offset {
	m := make(map[int32]kgo.Offset, n)
	for p := range n {
		m[p] = kgo.NewOffset().AtStart()
	}
	return m
}

// Sent is the number of records handed to producers so far.
func (q *Queue) Sent() int64 { return q.sent.Load() }

// Acked is the number of acknowledged records so far.
func (q *Queue) Acked() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.hist.Acks)
}

// maxBuffered bounds the records one producer keeps in flight.
const maxBuffered = 4000

func (q *Queue) produce(ctx context.Context, cl *kgo.Client, id int) {
	defer q.producersWG.Done()
	defer cl.Close()
	tick := time.NewTicker(q.o.Interval)
	defer tick.Stop()
	for seq := int64(0); ; seq++ {
		select {
		case <-ctx.Done():
			// Give records in flight a bounded time to settle; whatever is
			// still pending then is failed by Close with an unknown outcome.
			fctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			_ = cl.Flush(fctx)
			cancel()
			return
		case <-tick.C:
		}
		if cl.BufferedProduceRecords() >= maxBuffered {
			// The cluster takes nothing now (a partition, a lost quorum):
			// skip a tick rather than block in Produce past the stop.
			seq--
			continue
		}
		rec := &kgo.Record{Partition: int32(seq % int64(q.o.Partitions)), Value: fmt.Appendf(nil, "p%d-%d", id, seq)}
		q.sent.Add(1)
		cl.Produce(context.Background(), rec, func(r *kgo.Record, err error) {
			q.mu.Lock()
			defer q.mu.Unlock()
			if err != nil {
				q.hist.Failures = append(q.hist.Failures, Failure{Value: string(r.Value), Err: err.Error()})
				return
			}
			q.hist.Acks = append(q.hist.Acks, Ack{Producer: id, Seq: seq, Partition: r.Partition, Offset: r.Offset, Value: string(r.Value)})
		})
	}
}

func (q *Queue) consume(ctx context.Context, cl *kgo.Client, name string, epoch *atomic.Int64) {
	defer q.wg.Done()
	defer cl.Close()
	for ctx.Err() == nil {
		fs := cl.PollFetches(ctx)
		var e int
		if epoch != nil {
			e = int(epoch.Load())
		}
		var polls []Poll
		fs.EachRecord(func(r *kgo.Record) {
			polls = append(polls, Poll{Consumer: name, Epoch: e, Partition: r.Partition, Offset: r.Offset, Value: string(r.Value)})
		})
		loss := 0
		fs.EachError(func(_ string, _ int32, err error) {
			var dl *kgo.ErrDataLoss
			if errors.As(err, &dl) {
				loss++
			}
		})
		q.mu.Lock()
		q.hist.Polls = append(q.hist.Polls, polls...)
		q.hist.DataLoss += loss
		q.mu.Unlock()
		if epoch != nil {
			cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			_ = cl.CommitUncommittedOffsets(cctx)
			cancel()
			cl.AllowRebalance()
		}
	}
}

// observeCommits reads the group's committed offsets twice a second.
func (q *Queue) observeCommits(ctx context.Context) {
	defer q.wg.Done()
	observeTwiceASecond(ctx, q.addrs, q.observeCommitsOnce)
}

// observeTwiceASecond calls once with an admin client of addrs every
// 500 ms until ctx ends (the commit observers of Queue and Group).
func observeTwiceASecond(ctx context.Context, addrs []string, once func(context.Context, *kadm.Client)) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...))
	if err != nil {
		return
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		once(ctx, adm)
	}
}

func (q *Queue) observeCommitsOnce(ctx context.Context, adm *kadm.Client) {
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	offs, err := adm.FetchOffsets(rctx, q.o.Group)
	if err != nil {
		return
	}
	var obs []CommittedObs
	offs.Each(func(o kadm.OffsetResponse) {
		if o.Err == nil && o.Topic == q.o.Topic && o.At >= 0 {
			obs = append(obs, CommittedObs{Partition: o.Partition, Offset: o.At})
		}
	})
	sort.Slice(obs, func(i, j int) bool { return obs[i].Partition < obs[j].Partition })
	q.mu.Lock()
	q.hist.Committed = append(q.hist.Committed, obs...)
	q.mu.Unlock()
}

// StopProducers stops sending and waits until every record in flight is
// acknowledged or failed.
func (q *Queue) StopProducers() {
	q.cancel()
	q.producersWG.Wait()
}

// Stop ends producers and consumers and waits for them.
func (q *Queue) Stop() {
	q.cancel()
	q.producersWG.Wait()
	q.wg.Wait()
}

// History returns the recorded history (call after Stop and FinalRead).
func (q *Queue) History() *History {
	q.mu.Lock()
	defer q.mu.Unlock()
	return &q.hist
}

// hwWait bounds how long FinalRead waits for the high watermarks to cover
// every acknowledged offset before it reads anyway.
const hwWait = 90 * time.Second

// FinalRead reads every partition from its start to its high watermark
// with a fresh client into the history's Final, retrying until d passes.
func (q *Queue) FinalRead(ctx context.Context, d time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(q.addrs...))
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	// The high watermark can lag after a restart (followers still
	// catching up): wait, bounded, until it covers every acknowledged
	// offset, so that "lost" means lost, not "not yet visible".
	q.mu.Lock()
	maxAcked := make(map[int32]int64)
	for _, a := range q.hist.Acks {
		maxAcked[a.Partition] = max(maxAcked[a.Partition], a.Offset)
	}
	q.mu.Unlock()
	var starts, ends kadm.ListedOffsets
	_ = pollUntil(ctx, hwWait, func(ctx context.Context) (bool, error) {
		e, err := adm.ListEndOffsets(ctx, q.o.Topic)
		if err != nil || e.Error() != nil {
			return false, errors.Join(err, e.Error())
		}
		covered := true
		e.Each(func(o kadm.ListedOffset) {
			if m, ok := maxAcked[o.Partition]; ok && o.Offset <= m {
				covered = false
			}
		})
		return covered, nil
	})
	err = pollUntil(ctx, d, func(ctx context.Context) (bool, error) {
		s, err := adm.ListStartOffsets(ctx, q.o.Topic)
		if err != nil || s.Error() != nil {
			return false, errors.Join(err, s.Error())
		}
		e, err := adm.ListEndOffsets(ctx, q.o.Topic)
		if err != nil || e.Error() != nil {
			return false, errors.Join(err, e.Error())
		}
		starts, ends = s, e
		return true, nil
	})
	if err != nil {
		return err
	}
	// The group's final committed offsets, once the members stopped.
	if q.o.GroupMembers > 0 {
		q.observeCommitsOnce(ctx, adm)
	}
	final := make(map[int32][]Entry)
	from := make(map[int32]kgo.Offset)
	remaining := make(map[int32]int64)
	ends.Each(func(o kadm.ListedOffset) {
		s, _ := starts.Lookup(o.Topic, o.Partition)
		final[o.Partition] = nil
		if o.Offset > s.Offset {
			from[o.Partition] = kgo.NewOffset().At(s.Offset)
			remaining[o.Partition] = o.Offset
		}
	})
	if len(from) > 0 {
		rd, err := kgo.NewClient(kgo.SeedBrokers(q.addrs...),
			kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{q.o.Topic: from}),
			kgo.FetchMaxWait(500*time.Millisecond))
		if err != nil {
			return err
		}
		defer rd.Close()
		for len(remaining) > 0 {
			fs := rd.PollFetches(ctx)
			if ctx.Err() != nil {
				return fmt.Errorf("%w: partitions not read to their end: %v", ErrFinalRead, remaining)
			}
			fs.EachRecord(func(r *kgo.Record) {
				end, ok := remaining[r.Partition]
				if !ok || r.Offset >= end {
					return
				}
				final[r.Partition] = append(final[r.Partition], Entry{Offset: r.Offset, Value: string(r.Value)})
				if r.Offset+1 >= end {
					delete(remaining, r.Partition)
				}
			})
		}
	}
	q.mu.Lock()
	q.hist.Final = final
	q.mu.Unlock()
	return nil
}
