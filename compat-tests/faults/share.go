package faults

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Share groups (KIP-932) in the test bed: franz-go share consumers of one
// share group consume the queue topic, accept most records, release or
// reject some (chosen by a hash of the seed, partition, offset and delivery
// count, so a seed replays the same choices; a few "poison" records are
// released at every delivery until the delivery count limit archives
// them), flush their acknowledgements after every poll and record every
// delivery and the answer to its acknowledgement. CheckShare judges that
// history against the final log.

// ErrShareDrain is returned when the share group does not finish every
// record of the topic within its bound after the faults healed.
var ErrShareDrain = errors.New("faults: share group did not drain")

// ShareEnv is the broker environment of a cluster running the share-group
// workload: a 6 s share session timeout and 500 ms heartbeats (so that a
// crashed consumer is fenced within a fault run), the delivery count limit
// and record lock duration of the workload, and five __share_group_state
// partitions.
func ShareEnv(limit int, lock time.Duration) []string {
	return []string{
		"KAFKA_GROUP_SHARE_SESSION_TIMEOUT_MS=6000",
		"KAFKA_GROUP_SHARE_MIN_SESSION_TIMEOUT_MS=6000",
		"KAFKA_GROUP_SHARE_HEARTBEAT_INTERVAL_MS=500",
		"KAFKA_GROUP_SHARE_MIN_HEARTBEAT_INTERVAL_MS=500",
		fmt.Sprintf("KAFKA_GROUP_SHARE_DELIVERY_COUNT_LIMIT=%d", limit),
		fmt.Sprintf("KAFKA_GROUP_SHARE_RECORD_LOCK_DURATION_MS=%d", lock.Milliseconds()),
		"KAFKA_SHARE_COORDINATOR_STATE_TOPIC_NUM_PARTITIONS=5",
	}
}

// ShareOptions configures the share-group workload.
type ShareOptions struct {
	Topic      string
	Partitions int32
	Group      string
	// Consumers is the number of consumers kept in the group; a crashed
	// one is replaced by a new consumer.
	Consumers int
	// DeliveryLimit and LockDuration are what the brokers run with
	// (ShareEnv).
	DeliveryLimit int
	LockDuration  time.Duration
	// Seed chooses which deliveries are released or rejected.
	Seed uint64
	// StallEvery, if set, makes every third consumer (the first
	// included) hold the records of a poll past their lock duration
	// before acknowledging them, at most once per StallEvery and not
	// once the workload drains (Drain); the first consumers' first
	// stall comes two seconds in: their
	// locks expire, other consumers may acquire them, and those
	// acknowledgements must fail.
	StallEvery time.Duration
	// LogDir, if set, gets each consumer's franz-go log.
	LogDir   string
	LogDebug bool
}

// The actions a consumer takes on a delivery.
const (
	ShareAccept  = "accept"
	ShareRelease = "release"
	ShareReject  = "reject"
)

// ShareDelivery is one record polled by a consumer of the share group, and
// the answer to its acknowledgement.
type ShareDelivery struct {
	// Seq orders the deliveries of the whole workload by when they were
	// polled.
	Seq int64
	// At is when the consumer polled it, and Acquired when its client
	// decoded the ShareFetch answer that brought it (its acquisition lock
	// deadline less the lock duration), both since the workload started:
	// the broker acquired it before Acquired.
	At, Acquired time.Duration
	Consumer     string
	Partition    int32
	Offset       int64
	// Count is the delivery count the broker gave it.
	Count  int32
	Action string
	// AckSent is when the consumer marked its acknowledgement (the
	// client sends it no earlier).
	AckSent time.Duration
	// AckOK says the acknowledgement's partition answered with no error
	// (the broker applied it); AckErr says why not, when not: an error
	// code, a client error, or "not acknowledged" (the consumer crashed
	// before its flush ended). AckAt is when the answer arrived.
	AckOK  bool
	AckErr string `json:",omitempty"`
	AckAt  time.Duration
}

// ShareHistory is what the share-group workload saw.
type ShareHistory struct {
	Deliveries []ShareDelivery
	// DeliveryLimit is the brokers' group.share.delivery.count.limit.
	DeliveryLimit int
	// Crashes counts consumers cut off the network without leaving;
	// Stalls the polls whose records a consumer began to hold past their
	// lock (ShareOptions.StallEvery), StallsPastLock those it held that
	// long (a crash ends a stall).
	Crashes, Stalls, StallsPastLock int
	// Drained says that, after the faults healed and the producers
	// stopped, the group finished every record below the end offsets
	// (by its own history, or by DescribeShareGroupOffsets lag 0).
	Drained bool
	// AckErrors counts the deliveries whose acknowledgement failed (or
	// whose outcome is unknown), by error.
	AckErrors map[string]int
	// PollErrors counts poll errors by error.
	PollErrors map[string]int
	// Unseen are the deliveries the consumers' clients received and
	// the consumers never polled (ShareUnseen): the broker counted them.
	// A ShareFetch answer lost on the way (a consumer cut off while it
	// was in flight) is not among them.
	Unseen []ShareUnseen `json:",omitempty"`
	// Received counts the deliveries the consumers' clients received
	// (polled or not).
	Received int
	// LostFetches are the ShareFetch answers the consumers' clients did
	// not read (ShareLostFetch).
	LostFetches []ShareLostFetch `json:",omitempty"`
}

// shareConsumer is one franz-go share consumer and its loop.
type shareConsumer struct {
	name   string
	cl     *kgo.Client
	dialer *cutDialer
	cancel context.CancelFunc
	done   chan struct{}
	log    *os.File
	// buffer follows what the client buffered and the consumer did
	// not poll.
	buffer *shareBuffer

	// mu guards results: the ack answers by partition since the last
	// window was taken (the ack callback appends, the loop takes).
	mu      sync.Mutex
	results map[int32][]error

	// staller and lastStall: see ShareOptions.StallEvery.
	staller   bool
	lastStall time.Time
}

func (c *shareConsumer) onAck(_ *kgo.Client, rs kgo.ShareAckResults) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.results == nil {
		c.results = make(map[int32][]error)
	}
	for _, r := range rs {
		c.results[r.Partition] = append(c.results[r.Partition], r.Err)
	}
}

// takeResults returns the ack answers gathered since the last call.
func (c *shareConsumer) takeResults() map[int32][]error {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := c.results
	c.results = nil
	return r
}

// Share runs the share-group workload.
type Share struct {
	o     ShareOptions
	addrs []string
	start time.Time

	mu        sync.Mutex
	hist      ShareHistory
	seq       int64 // REQUIRES: mu held
	consumers []*shareConsumer
	crashed   []*shareConsumer
	next      int
	acked     atomic.Int64
	stalls    atomic.Int64
	// stallsFull counts the stalls that lasted past the lock.
	stallsFull atomic.Int64
	// draining is set once Drain starts: consumers stall no more.
	draining atomic.Bool
}

// stall waits d, or until ctx ends, and reports whether it waited d.
func (s *Share) stall(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// shareFlushBound bounds one flush of a consumer's acknowledgements.
const shareFlushBound = 60 * time.Second

// SetShareGroupEarliest sets the group config share.auto.offset.reset to
// earliest, so that the group starts at the start of the log.
func SetShareGroupEarliest(ctx context.Context, addrs []string, group string) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...))
	if err != nil {
		return err
	}
	defer cl.Close()
	return pollUntil(ctx, time.Minute, func(ctx context.Context) (bool, error) {
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		res := kmsg.NewIncrementalAlterConfigsRequestResource()
		res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
		res.Configs = []kmsg.IncrementalAlterConfigsRequestResourceConfig{{
			Name: "share.auto.offset.reset", Op: kmsg.IncrementalAlterConfigOpSet, Value: kmsg.StringPtr("earliest"),
		}}
		req.Resources = append(req.Resources, res)
		resp, err := req.RequestWith(ctx, cl)
		return err == nil && len(resp.Resources) == 1 && resp.Resources[0].ErrorCode == 0, nil
	})
}

// StartShare starts o.Consumers share consumers.
func StartShare(addrs []string, o ShareOptions) (*Share, error) {
	s := &Share{o: o, addrs: addrs, start: time.Now(), hist: ShareHistory{
		DeliveryLimit: o.DeliveryLimit, AckErrors: map[string]int{}, PollErrors: map[string]int{},
	}}
	for range o.Consumers {
		if err := s.addConsumer(true); err != nil {
			s.Stop()
			return nil, err
		}
	}
	return s, nil
}

func (s *Share) addConsumer(initial bool) error {
	s.mu.Lock()
	name := fmt.Sprintf("share-consumer%d", s.next)
	staller := s.o.StallEvery > 0 && s.next%3 == 0
	s.next++
	s.mu.Unlock()
	c := &shareConsumer{name: name, dialer: &cutDialer{}, done: make(chan struct{}), staller: staller,
		lastStall: time.Now(), buffer: &shareBuffer{name: name, start: s.start, lock: s.o.LockDuration}}
	if initial {
		// A first consumer's first stall comes two seconds in, so that
		// it lasts past the lock even in a short run.
		c.lastStall = c.lastStall.Add(2*time.Second - s.o.StallEvery)
	}
	opts := []kgo.Opt{kgo.SeedBrokers(s.addrs...), kgo.ClientID(name), kgo.Dialer(c.dialer.dial),
		kgo.ShareGroup(s.o.Group), kgo.ConsumeTopics(s.o.Topic), kgo.ShareAckCallback(c.onAck),
		kgo.WithHooks(c.buffer)}
	if s.o.LogDir != "" {
		f, err := os.Create(filepath.Join(s.o.LogDir, s.o.Group+"-"+name+".log"))
		if err != nil {
			return err
		}
		c.log = f
		level := kgo.LogLevelInfo
		if s.o.LogDebug {
			level = kgo.LogLevelDebug
		}
		c.buffer.logNext = kgo.BasicLogger(f, level, func() string {
			return time.Now().UTC().Format("15:04:05.000000 ")
		})
	}
	// The buffer also reads franz-go's log for the ShareFetch answers it
	// discards (shareDiscardMsg).
	opts = append(opts, kgo.WithLogger(c.buffer))
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		if c.log != nil {
			_ = c.log.Close()
		}
		return err
	}
	c.cl = cl
	ctx, cancel := context.WithCancel(context.Background())
	c.cancel = cancel
	s.mu.Lock()
	s.consumers = append(s.consumers, c)
	s.mu.Unlock()
	go s.consume(ctx, c)
	return nil
}

// action chooses what a consumer does with a delivery: one record in 40
// is poison (released at every delivery, so the delivery count limit
// archives it), one in 20 deliveries is released, one in 25 rejected, the
// rest accepted.
func (s *Share) action(p int32, o int64, count int32) string {
	h := fnv.New64a()
	fmt.Fprintf(h, "%d/%d/%d", s.o.Seed, p, o)
	rec := h.Sum64()
	if rec%40 == 0 {
		return ShareRelease
	}
	fmt.Fprintf(h, "/%d", count)
	d := h.Sum64()
	switch {
	case d%20 == 0:
		return ShareRelease
	case d%25 == 1:
		return ShareReject
	}
	return ShareAccept
}

func ackStatus(a string) kgo.AckStatus {
	switch a {
	case ShareRelease:
		return kgo.AckRelease
	case ShareReject:
		return kgo.AckReject
	}
	return kgo.AckAccept
}

// consume polls, acknowledges every record of the poll, flushes the
// acknowledgements and records each delivery with the answer for its
// partition: the answers gathered during one flush (FlushAcks returns
// once every acknowledgement sent has its answer) are those of this
// poll's acknowledgements (and of any earlier one answered late); a
// partition's acknowledgements count as applied only when every answer
// for that partition in the window is a success.
func (s *Share) consume(ctx context.Context, c *shareConsumer) {
	defer close(c.done)
	for ctx.Err() == nil {
		fs := c.cl.PollRecords(ctx, 200)
		at := time.Since(s.start)
		var ds []ShareDelivery
		fs.EachError(func(_ string, _ int32, err error) {
			if ctx.Err() == nil {
				s.mu.Lock()
				s.hist.PollErrors[err.Error()]++
				s.mu.Unlock()
			}
		})
		var recs []*kgo.Record
		fs.EachRecord(func(r *kgo.Record) {
			a := s.action(r.Partition, r.Offset, r.DeliveryCount())
			acq := r.AcquisitionDeadline().Add(-s.o.LockDuration).Sub(s.start)
			ds = append(ds, ShareDelivery{At: at, Acquired: acq, Consumer: c.name, Partition: r.Partition,
				Offset: r.Offset, Count: r.DeliveryCount(), Action: a})
			recs = append(recs, r)
		})
		if len(ds) == 0 {
			continue
		}
		s.mu.Lock()
		first := len(s.hist.Deliveries)
		for i := range ds {
			s.seq++
			ds[i].Seq = s.seq
		}
		s.hist.Deliveries = append(s.hist.Deliveries, ds...)
		s.mu.Unlock()
		if c.staller && !s.draining.Load() && time.Since(c.lastStall) >= s.o.StallEvery {
			// Hold the records past their lock: another consumer
			// may take them, and these acknowledgements must fail.
			s.stalls.Add(1)
			if s.stall(ctx, s.o.LockDuration+3*time.Second) {
				s.stallsFull.Add(1)
			}
			c.lastStall = time.Now()
		}
		sent := time.Since(s.start)
		if ctx.Err() == nil {
			for _, r := range recs {
				r.Ack(ackStatus(s.action(r.Partition, r.Offset, r.DeliveryCount())))
			}
		}

		fctx, cancel := context.WithTimeout(ctx, shareFlushBound)
		ferr := c.cl.FlushAcks(fctx)
		cancel()
		res := c.takeResults()
		ackAt := time.Since(s.start)
		s.mu.Lock()
		for i := range ds {
			d := &s.hist.Deliveries[first+i]
			d.AckSent, d.AckAt = sent, ackAt
			errs, got := res[d.Partition]
			switch {
			case ferr != nil:
				d.AckErr = "not acknowledged: " + ferr.Error()
			case !got:
				d.AckErr = "no answer"
			default:
				d.AckOK = true
				for _, e := range errs {
					if e != nil {
						d.AckOK, d.AckErr = false, e.Error()
						break
					}
				}
			}
			if d.AckOK {
				s.acked.Add(1)
			} else {
				s.hist.AckErrors[d.AckErr]++
			}
		}
		s.mu.Unlock()
	}
}

// Crash cuts consumer i (of the live ones, modulo their number) off the
// network without leaving, as a crashed process is, and starts a new
// consumer in its place: the records it holds come back after its share
// session ends or their locks expire.
func (s *Share) Crash(i int) (string, error) {
	s.mu.Lock()
	if len(s.consumers) == 0 {
		s.mu.Unlock()
		return "", fmt.Errorf("%w: no share consumer to crash", ErrNoTarget)
	}
	i %= len(s.consumers)
	c := s.consumers[i]
	s.consumers = append(s.consumers[:i], s.consumers[i+1:]...)
	s.crashed = append(s.crashed, c)
	s.hist.Crashes++
	s.mu.Unlock()
	c.dialer.crash()
	c.cancel()
	<-c.done
	return c.name, s.addConsumer(false)
}

// Consumers names the live consumers.
func (s *Share) Consumers() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, c := range s.consumers {
		out = append(out, c.name)
	}
	return out
}

// Deliveries is the number of deliveries so far.
func (s *Share) Deliveries() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.hist.Deliveries)
}

// Acked is the number of deliveries whose acknowledgement succeeded.
func (s *Share) Acked() int64 { return s.acked.Load() }

// finished reports whether the history has a final outcome for every
// offset below ends: an applied accept or reject, or a delivery at the
// delivery count limit (archived after it whatever its answer).
func (s *Share) finished(ends map[int32]int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	done := make(map[int32]map[int64]bool)
	for _, d := range s.hist.Deliveries {
		if (d.AckOK && d.Action != ShareRelease) || int(d.Count) >= s.o.DeliveryLimit {
			if done[d.Partition] == nil {
				done[d.Partition] = make(map[int64]bool)
			}
			done[d.Partition][d.Offset] = true
		}
	}
	for p, end := range ends {
		// Offsets are contiguous: the producers are idempotent and
		// not transactional.
		if int64(len(done[p])) < end {
			return false
		}
		for o := range end {
			if !done[p][o] {
				return false
			}
		}
	}
	return true
}

// lagZero reports whether DescribeShareGroupOffsets answers a lag of 0 for
// every partition.
func (s *Share) lagZero(ctx context.Context, cl *kgo.Client) bool {
	req := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
	g := kmsg.NewDescribeShareGroupOffsetsRequestGroup()
	g.GroupID = s.o.Group
	t := kmsg.NewDescribeShareGroupOffsetsRequestGroupTopic()
	t.Topic = s.o.Topic
	for p := range s.o.Partitions {
		t.Partitions = append(t.Partitions, p)
	}
	g.Topics = append(g.Topics, t)
	req.Groups = append(req.Groups, g)
	rctx, cancel := context.WithTimeout(ctx, 8*time.Second)
	defer cancel()
	resp, err := req.RequestWith(rctx, cl)
	if err != nil || len(resp.Groups) != 1 || resp.Groups[0].ErrorCode != 0 || len(resp.Groups[0].Topics) != 1 {
		return false
	}
	ps := resp.Groups[0].Topics[0].Partitions
	if len(ps) != int(s.o.Partitions) {
		return false
	}
	for _, p := range ps {
		if p.ErrorCode != 0 || p.Lag != 0 {
			return false
		}
	}
	return true
}

// Drain waits, at most d, until the group finished every record below the
// topic's end offsets: by its own history, or by a lag of 0 in
// DescribeShareGroupOffsets (an acknowledgement whose answer was lost may
// have been applied). Call it after the producers stopped. Consumers no
// longer stall (ShareOptions.StallEvery) once it starts.
func (s *Share) Drain(ctx context.Context, d time.Duration) error {
	s.draining.Store(true)
	cl, err := kgo.NewClient(kgo.SeedBrokers(s.addrs...), kgo.RequestRetries(2))
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	var ends map[int32]int64
	err = pollUntil(ctx, d, func(ctx context.Context) (bool, error) {
		if ends == nil {
			lctx, cancel := context.WithTimeout(ctx, 8*time.Second)
			lo, err := adm.ListEndOffsets(lctx, s.o.Topic)
			cancel()
			if err != nil || lo.Error() != nil {
				return false, nil
			}
			m := make(map[int32]int64)
			lo.Each(func(o kadm.ListedOffset) { m[o.Partition] = o.Offset })
			if len(m) != int(s.o.Partitions) {
				return false, nil
			}
			ends = m
		}
		return s.finished(ends) || s.lagZero(ctx, cl), nil
	})
	s.mu.Lock()
	s.hist.Drained = err == nil
	s.mu.Unlock()
	if err != nil {
		return fmt.Errorf("%w within %v (ends %v): %w", ErrShareDrain, d, ends, err)
	}
	return nil
}

// Stop closes every consumer (the live ones leave the group).
func (s *Share) Stop() {
	s.mu.Lock()
	all := append(append([]*shareConsumer(nil), s.consumers...), s.crashed...)
	s.mu.Unlock()
	for _, c := range all {
		c.cancel()
		<-c.done
	}
	var wg sync.WaitGroup
	for _, c := range all {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.cl.Close()
			if c.log != nil {
				_ = c.log.Close()
			}
		}()
	}
	wg.Wait()
}

// History returns a copy of what the workload saw.
func (s *Share) History() *ShareHistory {
	s.mu.Lock()
	defer s.mu.Unlock()
	h := s.hist
	h.Stalls, h.StallsPastLock = int(s.stalls.Load()), int(s.stallsFull.Load())
	h.Deliveries = append([]ShareDelivery(nil), s.hist.Deliveries...)
	h.AckErrors, h.PollErrors = make(map[string]int), make(map[string]int)
	for k, v := range s.hist.AckErrors {
		h.AckErrors[k] = v
	}
	for k, v := range s.hist.PollErrors {
		h.PollErrors[k] = v
	}
	h.Unseen = nil
	for _, c := range append(append([]*shareConsumer(nil), s.consumers...), s.crashed...) {
		us, n, ls := c.buffer.unseen()
		h.Unseen = append(h.Unseen, us...)
		h.Received += n
		h.LostFetches = append(h.LostFetches, ls...)
	}
	sort.Slice(h.Unseen, func(i, j int) bool {
		a, b := h.Unseen[i], h.Unseen[j]
		if a.Partition != b.Partition {
			return a.Partition < b.Partition
		}
		if a.Offset != b.Offset {
			return a.Offset < b.Offset
		}
		return a.Acquired < b.Acquired
	})
	sort.Slice(h.LostFetches, func(i, j int) bool { return h.LostFetches[i].At < h.LostFetches[j].At })
	return &h
}

// ShareReport is what CheckShare found. The share group's guarantees are
// at-least-once (KIP-932): a record may be delivered again after a
// release, a lock expiry, a consumer's crash, a leader change, or an
// acknowledgement whose answer was an error (its outcome is unknown: it
// may have been applied or not). The share-partition leader persists
// states and delivery counts through the share coordinator before it
// answers an acknowledgement, but not the Acquired state (KIP-932: an
// acquired record is written as available with the count before its
// acquisition), so after a leader change a record in flight comes back
// with a delivery count that does not count the lost delivery: in total a
// record may be delivered more often than the limit (TotalOverLimit,
// counted, not an anomaly). But
//
//   - an acknowledgement the broker answered with success is durable: a
//     record accepted, rejected, or released at the delivery count limit
//     (archived) that way is never acquired again (AcceptedRedelivered,
//     RejectedRedelivered, ArchivedRedelivered; checkShareRecord says how
//     this is judged, as a success can also answer an acknowledgement of
//     a record already finished, which Kafka ignores);
//   - the delivery count never exceeds group.share.delivery.count.limit
//     (OverLimit), and a record delivered at the limit is archived;
//   - a record is acquired by one consumer at a time: no consumer acquires
//     a record (with a higher delivery count) before another consumer,
//     whose acknowledgement of it was then applied, had even marked that
//     acknowledgement (AcquiredTwice);
//   - every record of the log is delivered, and, once the faults healed,
//     finished (accepted, rejected or archived) within a bound
//     (Unconsumed, Unfinished): a record whose last answered
//     acknowledgement was a successful release below the limit must be
//     delivered again (ReleasedLost), unless deliveries the consumers'
//     clients received and nobody polled (ShareHistory.Unseen) reached the
//     limit after it and archived it (ArchivedUnseen), or it was released
//     one delivery below the limit and a ShareFetch answer lost before any
//     higher offset reached a consumer carried it (ArchivedLostFetch).
type ShareReport struct {
	Deliveries, Redeliveries     int
	Accepted, Released, Rejected int
	AckFailed, Crashes, Stalls   int
	StallsPastLock               int
	// ArchivedAtLimit counts records delivered at the limit and then
	// released (or not acknowledged): the broker archived them.
	ArchivedAtLimit int
	// ArchivedUnseen counts records the group finished (it drained)
	// whose last polled delivery was released with success (or that no
	// consumer polled) and that a delivery no consumer polled
	// (ShareHistory.Unseen: a cut-off or stalled consumer's buffered
	// records) then brought to the limit: the broker archived it when
	// that delivery's lock expired. Counted, not an anomaly.
	ArchivedUnseen int
	// ArchivedLostFetch counts records released with success one delivery
	// below the limit, never delivered again to anyone, where a ShareFetch
	// answer was lost after the release's answer and before any consumer
	// received a delivery of a higher offset of that partition: the
	// share-partition hands out its lowest available offsets first, so
	// the record was acquired (at the limit) before that, and no consumer
	// got it: it went in the lost answer, and the broker archived it when
	// that acquisition ended (lock expiry, or at once when the session's
	// connection closed, as Kafka 4.4 does). Counted, not an anomaly
	// (docs/DURABILITY.md finding 19).
	ArchivedLostFetch int
	// Unseen counts the deliveries received and never polled, of
	// Received.
	Unseen, Received int
	// LostFetches counts the ShareFetch answers lost (ShareLostFetch).
	LostFetches int
	// TotalOverLimit counts records delivered more often than the limit
	// in all (deliveries a leader change forgot).
	TotalOverLimit        int
	MaxCount              int32
	DeliveryLimit         int
	Drained               bool
	FinalRecords          int
	AckErrors, PollErrors map[string]int
	AcceptedRedelivered   Anomaly
	RejectedRedelivered   Anomaly
	ArchivedRedelivered   Anomaly
	OverLimit             Anomaly
	AcquiredTwice         Anomaly
	Unconsumed            Anomaly
	Unfinished            Anomaly
	// ReleasedLost: a record whose last polled delivery was released
	// with success below the limit, never polled again though the group
	// drained (the broker holds it finished), and which no unseen
	// delivery brought to the limit. Seeds 503 and 505 showed it before
	// unseen deliveries were recorded (H8: archived by deliveries a
	// cut-off consumer never polled); a ShareFetch answer lost in flight
	// is still not recorded, so this can be that or a lost release.
	ReleasedLost        Anomaly
	AcquiredAfterPolled Anomaly // Acquired later than At: the lock duration is not what the options say
}

// shareAcquireSlack bounds how long a ShareFetch answer can take from the
// broker's acquisition of its records to the client's decoding of it.
// CheckShare counts a delivery decoded more than this after another
// delivery's accept was answered as acquired after that accept, whatever
// its delivery count (a broker that lost the accept may have counted
// again from a lower count).
const shareAcquireSlack = 30 * time.Second

// Anomalies is the number of anomalies found.
func (r *ShareReport) Anomalies() int {
	return r.AcceptedRedelivered.Count + r.RejectedRedelivered.Count + r.ArchivedRedelivered.Count + r.OverLimit.Count +
		r.AcquiredTwice.Count + r.Unconsumed.Count + r.Unfinished.Count + r.ReleasedLost.Count + r.AcquiredAfterPolled.Count
}

func (r *ShareReport) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "share group: %d deliveries (%d redeliveries, max count %d of limit %d), acks applied: %d accept %d release %d reject, %d failed; %d archived at the limit (%d more by unseen deliveries, %d by lost ShareFetch answers; %d deliveries never polled of %d received, %d ShareFetch answers lost), %d delivered more often than the limit in all; %d consumer crashes, %d stalls (%d past the lock); drained %v; %d final records",
		r.Deliveries, r.Redeliveries, r.MaxCount, r.DeliveryLimit, r.Accepted, r.Released, r.Rejected, r.AckFailed,
		r.ArchivedAtLimit, r.ArchivedUnseen, r.ArchivedLostFetch, r.Unseen, r.Received, r.LostFetches, r.TotalOverLimit, r.Crashes, r.Stalls, r.StallsPastLock, r.Drained, r.FinalRecords)
	if len(r.AckErrors) > 0 {
		fmt.Fprintf(&b, "\n  ack errors: %v", r.AckErrors)
	}
	if len(r.PollErrors) > 0 {
		fmt.Fprintf(&b, "\n  poll errors: %v", r.PollErrors)
	}
	for _, a := range []struct {
		name string
		a    Anomaly
	}{
		{"accepted-redelivered", r.AcceptedRedelivered}, {"rejected-redelivered", r.RejectedRedelivered},
		{"archived-redelivered", r.ArchivedRedelivered},
		{"over-limit", r.OverLimit}, {"acquired-twice", r.AcquiredTwice},
		{"unconsumed", r.Unconsumed}, {"unfinished", r.Unfinished}, {"released-lost", r.ReleasedLost},
		{"acquired-after-polled", r.AcquiredAfterPolled},
	} {
		if a.a.Count > 0 {
			fmt.Fprintf(&b, "\n  %s: %d, e.g. %s", a.name, a.a.Count, strings.Join(a.a.Examples, "; "))
		}
	}
	return b.String()
}

// shareKey is one record of a partition.
type shareKey struct {
	p int32
	o int64
}

func (k shareKey) String() string { return fmt.Sprintf("%d/%d", k.p, k.o) }

func (d ShareDelivery) String() string {
	ack := "ok"
	if !d.AckOK {
		ack = d.AckErr
	}
	return fmt.Sprintf("#%d %s count %d %s at %v (acquired by %v), answer %q at %v",
		d.Seq, d.Consumer, d.Count, d.Action, d.At.Round(time.Millisecond), d.Acquired.Round(time.Millisecond), ack, d.AckAt.Round(time.Millisecond))
}

// CheckShare judges a share group's history against the final log (the
// records of every partition, read back after the faults healed).
func CheckShare(h *ShareHistory, final map[int32][]Entry) *ShareReport {
	r := &ShareReport{Received: h.Received, LostFetches: len(h.LostFetches), DeliveryLimit: h.DeliveryLimit, Drained: h.Drained, Crashes: h.Crashes, Stalls: h.Stalls, StallsPastLock: h.StallsPastLock,
		AckErrors: h.AckErrors, PollErrors: h.PollErrors}
	by := make(map[shareKey][]ShareDelivery)
	for _, d := range h.Deliveries {
		k := shareKey{d.Partition, d.Offset}
		by[k] = append(by[k], d)
		r.Deliveries++
		if d.Count > 1 {
			r.Redeliveries++
		}
		r.MaxCount = max(r.MaxCount, d.Count)
		if d.AckOK {
			switch d.Action {
			case ShareAccept:
				r.Accepted++
			case ShareRelease:
				r.Released++
			case ShareReject:
				r.Rejected++
			}
		} else {
			r.AckFailed++
		}
		if int(d.Count) > h.DeliveryLimit {
			r.OverLimit.add("%s", fmt.Sprintf("%v: %v", k, d))
		}
		// The client decodes a fetch answer before it is polled; a
		// second of slack for the clock reads.
		if d.Acquired > d.At+time.Second {
			r.AcquiredAfterPolled.add("%s", fmt.Sprintf("%v: %v", k, d))
		}
	}
	unseen := make(map[shareKey][]ShareUnseen)
	for _, u := range h.Unseen {
		k := shareKey{u.Partition, u.Offset}
		unseen[k] = append(unseen[k], u)
		r.Unseen++
		if int(u.Count) > h.DeliveryLimit {
			r.OverLimit.add("%s", fmt.Sprintf("%v: %v", k, u))
		}
	}
	keys := make([]shareKey, 0, len(by))
	for k := range by {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].p != keys[j].p {
			return keys[i].p < keys[j].p
		}
		return keys[i].o < keys[j].o
	})
	for _, k := range keys {
		checkShareRecord(r, k, by[k], h.DeliveryLimit)
	}
	// An unseen delivery is an acquisition too: none comes long after a
	// finishing acknowledgement was answered with success.
	for _, u := range h.Unseen {
		k := shareKey{u.Partition, u.Offset}
		first := firstFinishing(by[k], h.DeliveryLimit)
		if first == nil || u.Acquired <= first.AckAt+shareAcquireSlack {
			continue
		}
		what := fmt.Sprintf("%v: %v, then %v", k, *first, u)
		switch first.Action {
		case ShareAccept:
			r.AcceptedRedelivered.add("%s", what)
		case ShareReject:
			r.RejectedRedelivered.add("%s", what)
		default:
			r.ArchivedRedelivered.add("%s", what)
		}
	}
	for p, es := range final {
		for _, e := range es {
			r.FinalRecords++
			k := shareKey{p, e.Offset}
			ds := by[k]
			if len(ds) == 0 {
				if h.Drained && unseenAtLimit(unseen[k], 0, h.DeliveryLimit) {
					r.ArchivedUnseen++
					continue
				}
				r.Unconsumed.add("%s", k.String())
				continue
			}
			if !shareFinished(ds, h.DeliveryLimit, h.Drained) {
				last := lastShareDelivery(ds)
				if h.Drained && last.AckOK && last.Action == ShareRelease {
					if unseenAtLimit(unseen[k], last.Count, h.DeliveryLimit) {
						r.ArchivedUnseen++
						continue
					}
					if int(last.Count) == h.DeliveryLimit-1 && lostBeforeHigher(h, k, last.AckAt) {
						r.ArchivedLostFetch++
						continue
					}
					r.ReleasedLost.add("%s", fmt.Sprintf("%v: last %v%s%s", k, last, unseenString(unseen[k]), lostAfter(h.LostFetches, last.At)))
					continue
				}
				r.Unfinished.add("%s", fmt.Sprintf("%v: last %v", k, last))
			}
		}
	}
	for _, ds := range by {
		if len(ds) > h.DeliveryLimit {
			r.TotalOverLimit++
		}
		for _, d := range ds {
			if int(d.Count) >= h.DeliveryLimit && (d.Action == ShareRelease || !d.AckOK) {
				r.ArchivedAtLimit++
				break
			}
		}
	}
	return r
}

// shareTerminal reports whether a delivery's acknowledgement, applied,
// finishes the record: an accept, a reject, or a release at the limit.
func shareTerminal(d ShareDelivery, limit int) bool {
	return d.Action != ShareRelease || int(d.Count) >= limit
}

// checkShareRecord checks the deliveries of one record. A successful
// answer does not always mean the acknowledgement was applied: Kafka
// answers an acknowledgement of a record already finished (below the
// start offset, or archived) with success and ignores it. So:
//
//   - no delivery is acquired (decoded) more than shareAcquireSlack after
//     the first successful answer to a finishing acknowledgement: the
//     record was finished by then either way;
//   - when a delivery d1's acknowledgement succeeded and nothing else
//     can have finished the record (no other delivery's finishing
//     acknowledgement succeeded, no other delivery reached the limit),
//     that acknowledgement was applied while d1's consumer held the
//     record: no other consumer acquired it later (with a higher count)
//     before d1's acknowledgement was marked (AcquiredTwice), and when
//     it finished the record, none acquired it after at all. The same
//     consumer acquiring it again is not judged by counts: the broker
//     ties an acquisition to a member, not a delivery, and applies d1's
//     acknowledgement to the new acquisition.
func checkShareRecord(r *ShareReport, k shareKey, ds []ShareDelivery, limit int) {
	redelivered := func(d1, d2 ShareDelivery) {
		what := fmt.Sprintf("%v: %v, then %v", k, d1, d2)
		switch {
		case d1.Action == ShareAccept:
			r.AcceptedRedelivered.add("%s", what)
		case d1.Action == ShareReject:
			r.RejectedRedelivered.add("%s", what)
		default:
			r.ArchivedRedelivered.add("%s", what)
		}
	}
	var first *ShareDelivery
	finishing, atLimit := 0, 0
	for i, d := range ds {
		if d.AckOK && shareTerminal(d, limit) {
			finishing++
			if first == nil || d.AckAt < first.AckAt {
				first = &ds[i]
			}
		}
		if int(d.Count) >= limit {
			atLimit++
		}
	}
	flagged := make(map[int64]bool)
	if first != nil {
		for _, d2 := range ds {
			if d2.Acquired > first.AckAt+shareAcquireSlack {
				redelivered(*first, d2)
				flagged[d2.Seq] = true
			}
		}
	}
	for _, d1 := range ds {
		if !d1.AckOK {
			continue
		}
		term := shareTerminal(d1, limit)
		otherFinishing := finishing
		if term {
			otherFinishing--
		}
		otherAtLimit := atLimit
		if int(d1.Count) >= limit {
			otherAtLimit--
		}
		if otherFinishing > 0 || otherAtLimit > 0 {
			continue
		}
		for _, d2 := range ds {
			if d2.Seq == d1.Seq || d2.Consumer == d1.Consumer || d2.Count <= d1.Count || flagged[d2.Seq] {
				continue
			}
			// d2 was acquired after d1 (its count is higher) and
			// decoded before d1's consumer marked its
			// acknowledgement, so before the broker applied it.
			if d2.Acquired < max(d1.At, d1.AckSent) {
				r.AcquiredTwice.add("%s", fmt.Sprintf("%v: %v, then %v", k, d1, d2))
				continue
			}
			if term {
				redelivered(d1, d2)
			}
		}
	}
}

// firstFinishing is the delivery whose finishing acknowledgement
// (shareTerminal) was answered with success first, or nil.
func firstFinishing(ds []ShareDelivery, limit int) *ShareDelivery {
	var first *ShareDelivery
	for i, d := range ds {
		if d.AckOK && shareTerminal(d, limit) && (first == nil || d.AckAt < first.AckAt) {
			first = &ds[i]
		}
	}
	return first
}

// unseenAtLimit reports whether one of a record's unseen deliveries
// reached the limit with a count above after (the count of its last
// polled delivery, whose release it followed): nobody acknowledged it, so
// its lock expired at the limit and the broker archived the record.
func unseenAtLimit(us []ShareUnseen, after int32, limit int) bool {
	for _, u := range us {
		if u.Count > after && int(u.Count) >= limit {
			return true
		}
	}
	return false
}

// unseenString lists a record's unseen deliveries for a report.
func unseenString(us []ShareUnseen) string {
	if len(us) == 0 {
		return "; no unseen delivery"
	}
	var b strings.Builder
	for _, u := range us {
		fmt.Fprintf(&b, "; unseen: %v", u)
	}
	return b.String()
}

// lastShareDelivery is the delivery with the highest count (the latest
// polled among equals).
func lastShareDelivery(ds []ShareDelivery) ShareDelivery {
	last := ds[0]
	for _, d := range ds[1:] {
		if d.Count > last.Count || (d.Count == last.Count && d.Seq > last.Seq) {
			last = d
		}
	}
	return last
}

// shareFinished reports whether a record's deliveries end it: an applied
// accept or reject, a delivery at the limit, or, once the group drained,
// a last delivery whose acknowledgement's outcome is unknown (the broker
// holds it finished, so that acknowledgement was applied). A last
// delivery released with success below the limit is not finished: the
// record had to come back.
func shareFinished(ds []ShareDelivery, limit int, drained bool) bool {
	for _, d := range ds {
		if (d.AckOK && d.Action != ShareRelease) || int(d.Count) >= limit {
			return true
		}
	}
	last := lastShareDelivery(ds)
	return drained && !last.AckOK
}
