package replica

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/controller"
	"github.com/samsa-broker/samsa/storage"
)

// ErrClosed is returned by a closed Manager.
var ErrClosed = errors.New("replica: manager closed")

// ISRChanger sends a leader's ISR change to the active controller (Kafka's
// AlterPartition, key 56). It returns the partition as the controller has
// it after the call (the current state when refused, so a stale leader
// learns the new epochs) and a Kafka error code; error is for transport
// failures.
type ISRChanger interface {
	AlterPartition(ctx context.Context, req controller.AlterPartition) (controller.Partition, int16, error)
}

// LocalISRChanger adapts the local controller to ISRChanger (a single
// node, and tests). Controller returns it; it is a function because the
// Manager exists before the controller, whose New already calls
// OnChange.
type LocalISRChanger struct{ Controller func() *controller.Controller }

// AlterPartition implements ISRChanger.
func (l LocalISRChanger) AlterPartition(_ context.Context, req controller.AlterPartition) (controller.Partition, int16, error) {
	c := l.Controller()
	if c == nil {
		return controller.Partition{}, 0, fmt.Errorf("%w: no controller yet", ErrClosed)
	}
	p, code, _ := c.AlterPartition(req)
	return p, code, nil
}

// FetchFunc sends a follower's Fetch to broker leader and returns its
// response.
type FetchFunc func(ctx context.Context, leader int32, req *kmsg.FetchRequest) (*kmsg.FetchResponse, error)

// Options configures a Manager. Zero fields take Kafka's defaults.
type Options struct {
	// NodeID is this broker's id: the replica id of its fetches.
	NodeID int32
	// Logs holds the partitions' logs; the Manager hosts a partition once
	// its log exists (broker.LogSyncer creates them).
	Logs *storage.Manager
	// ISR receives the leaders' ISR changes; nil leaves ISRs unchanged.
	ISR ISRChanger
	// MinInsyncReplicas returns a topic's min.insync.replicas (1 if nil).
	MinInsyncReplicas func(t *controller.Topic) int
	// ReplicaLagTimeMax is replica.lag.time.max.ms (30 s).
	ReplicaLagTimeMax time.Duration
	// FetchMaxWait is replica.fetch.wait.max.ms (500 ms).
	FetchMaxWait time.Duration
	// FetchBackoff is replica.fetch.backoff.ms (1 s).
	FetchBackoff time.Duration
	// FetchMaxBytes is replica.fetch.response.max.bytes (10 MiB) and
	// PartitionFetchMaxBytes replica.fetch.max.bytes (1 MiB).
	FetchMaxBytes, PartitionFetchMaxBytes int32
	// BrokerAddr gives the host:port of a broker for the default fetch
	// transport; nil looks it up in the newest image.
	BrokerAddr func(id int32) (addr string, ok bool)
	// Fetch sends followers' fetches; nil uses one kgo client per leader
	// (kgo.go). Tests pass an in-process function.
	Fetch FetchFunc
	// Now is the clock (time.Now).
	Now    func() time.Time
	Logger *slog.Logger
}

// Manager hosts this node's partitions (Kafka's ReplicaManager): it
// reconciles them against each published metadata image, runs one fetcher
// per source broker, checks the ISRs of the partitions it leads every
// replica.lag.time.max.ms/2, and serves followers' fetches.
type Manager struct {
	opts   Options
	logger *slog.Logger

	ctx      context.Context
	cancel   context.CancelFunc
	stopping <-chan struct{}
	wg       sync.WaitGroup

	mu struct {
		sync.Mutex
		partitions map[storage.TopicPartition]*Partition
		byID       map[controller.Uuid]storage.TopicPartition // topic id -> name (partition unused)
		image      *controller.Image
		closed     bool
	}
	// reconcile holds the newest image for the fetcher goroutine (latest
	// wins: it reconciles against the whole image, so nothing is lost
	// when images are coalesced).
	reconcile chan struct{}

	fetchers  map[int32]*fetcher // REQUIRES: only the reconcile goroutine
	transport *kgoTransport

	// isrShrinks and isrExpands count the ISR changes of partitions led
	// here that the controller accepted (Kafka's IsrShrinksPerSec and
	// IsrExpandsPerSec meters), for metrics.
	isrShrinks, isrExpands atomic.Int64
}

// ISRChanges returns how many ISR shrinks and expands of partitions led by
// this broker the controller has accepted since start.
func (m *Manager) ISRChanges() (shrinks, expands int64) {
	return m.isrShrinks.Load(), m.isrExpands.Load()
}

// NewManager starts a Manager; Close stops it.
func NewManager(o Options) *Manager {
	if o.ReplicaLagTimeMax <= 0 {
		o.ReplicaLagTimeMax = 30 * time.Second
	}
	if o.FetchMaxWait <= 0 {
		o.FetchMaxWait = 500 * time.Millisecond
	}
	if o.FetchBackoff <= 0 {
		o.FetchBackoff = time.Second
	}
	if o.FetchMaxBytes <= 0 {
		o.FetchMaxBytes = 10 << 20
	}
	if o.PartitionFetchMaxBytes <= 0 {
		o.PartitionFetchMaxBytes = 1 << 20
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	m := &Manager{opts: o, logger: o.Logger, reconcile: make(chan struct{}, 1), fetchers: map[int32]*fetcher{}}
	m.ctx, m.cancel = context.WithCancel(context.Background())
	m.stopping = m.ctx.Done()
	m.mu.partitions = map[storage.TopicPartition]*Partition{}
	m.mu.byID = map[controller.Uuid]storage.TopicPartition{}
	if o.Fetch == nil {
		m.transport = newKgoTransport(m)
		m.opts.Fetch = m.transport.fetch
	}
	m.wg.Add(2)
	go func() { defer m.wg.Done(); m.supervise("reconcile", m.stopping, m.runReconcile, m.wakeReconcile) }()
	go func() { defer m.wg.Done(); m.supervise("ISR checks", m.stopping, m.runISRChecks, nil) }()
	return m
}

// Close stops the fetchers and background work and waits for them.
// Waiting produces and fetches return.
func (m *Manager) Close() {
	m.mu.Lock()
	if m.mu.closed {
		m.mu.Unlock()
		return
	}
	m.mu.closed = true
	m.mu.Unlock()
	m.cancel()
	m.wg.Wait()
	if m.transport != nil {
		m.transport.close()
	}
}

func (m *Manager) now() time.Time { return m.opts.Now() }

// go runs fn on a goroutine owned by the Manager.
func (m *Manager) goOwned(fn func(ctx context.Context)) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.mu.closed {
		return
	}
	m.wg.Add(1)
	go func() { defer m.wg.Done(); m.runRecovered("owned task", func() { fn(m.ctx) }) }()
}

// alterPartition sends an ISR change on its own goroutine (it must not
// run under the partition's lock: the local controller's write calls back
// into Apply).
func (m *Manager) alterPartition(p *Partition, req controller.AlterPartition) {
	if m.opts.ISR == nil {
		go p.completeAlter(req, controller.Partition{}, 0, fmt.Errorf("%w: no ISR changer", ErrClosed))
		return
	}
	m.goOwned(func(ctx context.Context) {
		ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		got, code, err := m.opts.ISR.AlterPartition(ctx, req)
		p.completeAlter(req, got, code, err)
	})
}

// Partition returns the hosted partition tp, or false.
func (m *Manager) Partition(tp storage.TopicPartition) (*Partition, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p, ok := m.mu.partitions[tp]
	return p, ok
}

// Lookup returns the hosted partition of img's topic t, hosting it first
// if img makes this node a replica and its log exists but no image was
// applied for it yet (logs created outside LogSyncer, as in tests).
func (m *Manager) Lookup(img *controller.Image, t *controller.Topic, partition int32) (*Partition, bool) {
	tp := storage.TopicPartition{Topic: t.Name, Partition: partition}
	if p, ok := m.Partition(tp); ok {
		return p, true
	}
	if partition < 0 || int(partition) >= len(t.Partitions) || !slices.Contains(t.Partitions[partition].Replicas, m.opts.NodeID) {
		return nil, false
	}
	p, err := m.host(t, t.Partitions[partition])
	if err != nil || p == nil {
		return nil, false
	}
	return p, true
}

// minISR returns a topic's min.insync.replicas.
func (m *Manager) minISR(t *controller.Topic) int {
	if m.opts.MinInsyncReplicas == nil {
		return 1
	}
	return max(m.opts.MinInsyncReplicas(t), 1)
}

// host makes (or updates) the partition from the image's state. It
// returns nil without error when the log does not exist yet.
func (m *Manager) host(t *controller.Topic, cp controller.Partition) (*Partition, error) {
	tp := storage.TopicPartition{Topic: t.Name, Partition: cp.Partition}
	m.mu.Lock()
	if m.mu.closed {
		m.mu.Unlock()
		return nil, ErrClosed
	}
	p, ok := m.mu.partitions[tp]
	if ok && p.topicID != t.ID {
		delete(m.mu.partitions, tp)
		m.mu.Unlock()
		p.stop()
		m.mu.Lock()
		ok = false
	}
	if !ok {
		l, found := m.opts.Logs.Log(tp)
		if !found {
			m.mu.Unlock()
			return nil, nil
		}
		p = newPartition(m, tp, t.ID, l)
		m.mu.partitions[tp] = p
		m.mu.byID[t.ID] = storage.TopicPartition{Topic: t.Name}
	}
	m.mu.Unlock()
	if _, err := p.apply(cp, m.minISR(t)); err != nil {
		return p, err
	}
	return p, nil
}

// Apply reconciles the hosted partitions with next (become leader, become
// follower, stop): it is the controller's OnChange callback, called after
// broker.LogSyncer created the logs. Role changes happen here, before the
// image is published, so a handler never sees an image that this node
// leads a partition whose Partition does not know it yet; they are memory
// changes plus the leader-epoch checkpoint of a new leader (the same write
// LogSyncer made here before). Fetchers start, stop and truncate on the
// Manager's own goroutine: Apply never waits for the network.
func (m *Manager) Apply(prev, next *controller.Image) {
	_ = prev // reconcile against the whole image, not the difference
	want := map[storage.TopicPartition]bool{}
	var hosts []hostWork
	for _, t := range next.Topics {
		for _, cp := range t.Partitions {
			if !slices.Contains(cp.Replicas, m.opts.NodeID) {
				continue
			}
			tp := storage.TopicPartition{Topic: t.Name, Partition: cp.Partition}
			want[tp] = true
			hosts = append(hosts, hostWork{t, cp})
		}
	}
	m.hostAll(hosts)
	var stopped []*Partition
	m.mu.Lock()
	for tp, p := range m.mu.partitions {
		if !want[tp] {
			delete(m.mu.partitions, tp)
			stopped = append(stopped, p)
		}
	}
	for id, tp := range m.mu.byID {
		if t, ok := next.TopicsByID[id]; !ok || t.Name != tp.Topic {
			delete(m.mu.byID, id)
		}
	}
	m.mu.image = next
	m.mu.Unlock()
	for _, p := range stopped {
		p.stop()
	}
	select {
	case m.reconcile <- struct{}{}:
	default:
	}
}

// isrEligible reports whether broker id may join an ISR by the newest
// image: registered and not fenced (Kafka's Partition.isReplicaIsrEligible).
// The controller refuses any other with INELIGIBLE_REPLICA, and without
// this check a leader proposed the addition again on every fetch of the
// fenced broker (a restarted node still catching up, a cut-off one whose
// fetches still arrive): thousands of refused AlterPartitions a second in
// the transaction fault test (docs/DURABILITY.md finding 13). With no
// image yet the controller decides.
func (m *Manager) isrEligible(id int32) bool {
	img := m.Image()
	if img == nil {
		return true
	}
	b, ok := img.Brokers[id]
	return ok && !b.Fenced
}

// Image returns the newest image applied.
func (m *Manager) Image() *controller.Image {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.mu.image
}

// partitionByID finds a hosted partition by topic id.
func (m *Manager) partitionByID(id controller.Uuid, partition int32) (*Partition, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	tp, ok := m.mu.byID[id]
	if !ok {
		return nil, false
	}
	p, ok := m.mu.partitions[storage.TopicPartition{Topic: tp.Topic, Partition: partition}]
	return p, ok
}

func (m *Manager) snapshot() []*Partition {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]*Partition, 0, len(m.mu.partitions))
	for _, p := range m.mu.partitions {
		out = append(out, p)
	}
	return out
}

// runISRChecks is Kafka's isr-expiration task: every
// replica.lag.time.max.ms/2 each led partition drops the followers that
// fell behind.
func (m *Manager) runISRChecks() {
	tick := time.NewTicker(m.opts.ReplicaLagTimeMax / 2)
	defer tick.Stop()
	for {
		select {
		case <-m.stopping:
			return
		case <-tick.C:
			for _, p := range m.snapshot() {
				p.maybeShrinkISR()
			}
		}
	}
}

// runReconcile moves every follower partition to the fetcher of its
// leader, starting and stopping fetchers as needed.
func (m *Manager) runReconcile() {
	defer func() {
		for id, f := range m.fetchers {
			f.stop()
			delete(m.fetchers, id) // a restart after a panic starts afresh
		}
	}()
	for {
		select {
		case <-m.stopping:
			return
		case <-m.reconcile:
		}
		want := map[int32]map[storage.TopicPartition]*fetchPartition{}
		for _, p := range m.snapshot() {
			st := p.State()
			if st.Role != RoleFollower || st.Leader < 0 || st.Leader == m.opts.NodeID {
				continue
			}
			if want[st.Leader] == nil {
				want[st.Leader] = map[storage.TopicPartition]*fetchPartition{}
			}
			want[st.Leader][p.tp] = &fetchPartition{p: p, leaderEpoch: st.LeaderEpoch}
		}
		for id, parts := range want {
			f, ok := m.fetchers[id]
			if !ok {
				f = newFetcher(m, id)
				m.fetchers[id] = f
			}
			f.assign(parts)
		}
		// A fetcher no longer wanted is cancelled, not waited for: its
		// fetch in flight may be to a node that answers nothing (cut off
		// by the network: the request fails only at its timeout), and
		// waiting here held up every later image's moves, so followers of
		// the partitions that node had led did not fetch from their new
		// leaders and fell out of the ISR (docs/DURABILITY.md finding 13).
		// It ends when that fetch returns, without handling the answer;
		// m.wg waits for it on Close.
		for id, f := range m.fetchers {
			if want[id] == nil {
				f.cancel()
				delete(m.fetchers, id)
			}
		}
	}
}
