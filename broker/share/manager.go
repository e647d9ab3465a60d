package share

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	sharestate "github.com/samsa-broker/samsa/coordinator/share"
	"github.com/samsa-broker/samsa/storage"
	"github.com/samsa-broker/samsa/wire"
)

// ErrClosed is returned for work asked of a closed Manager.
var ErrClosed = errors.New("share: manager closed")

// Log is what a share-partition reads of its partition's log on the
// leader (*storage.Log has it).
type Log interface {
	Read(offset int64, maxBytes int, maxOffset int64, minOneBatch bool) ([]byte, error)
	LogStartOffset() int64
	HighWatermark() int64
	LastStableOffset() int64
	AbortedTransactions(from, upTo int64) []storage.AbortedTxn
	OffsetForTimestamp(ts int64) (offset int64, timestamp int64, found bool)
}

// Options configures a Manager. Zero fields take Kafka's defaults.
type Options struct {
	// Persister keeps the share-partitions' state (required).
	Persister sharestate.Persister
	// GroupConfig returns a share group's dynamic config overrides
	// (share.record.lock.duration.ms, share.delivery.count.limit,
	// share.partition.max.record.locks, share.auto.offset.reset,
	// share.isolation.level, share.renew.acknowledge.enable); nil: none.
	GroupConfig func(group string) map[string]string
	// RecordLockDuration is group.share.record.lock.duration.ms (30 s).
	RecordLockDuration time.Duration
	// DeliveryCountLimit is group.share.delivery.count.limit (5).
	DeliveryCountLimit int
	// PartitionMaxRecordLocks is group.share.partition.max.record.locks
	// (2000).
	PartitionMaxRecordLocks int
	// MaxShareSessions is group.share.max.share.sessions (2000).
	MaxShareSessions int
	// IdleReload is how long a share-partition with no acquired records
	// may go unused before its state is read again when next served (the
	// group coordinator may have altered or deleted it meanwhile, which
	// needs the group empty: no member for a session timeout);
	// group.share.min.session.timeout.ms (45 s).
	IdleReload time.Duration
	// PersisterTimeout bounds the persister calls made outside a request
	// (lock expiry); 30 s.
	PersisterTimeout time.Duration
	// Now is the clock (time.Now).
	Now    func() time.Time
	Logger *slog.Logger
}

// Manager serves the share-partitions this node leads (Kafka's
// SharePartitionManager): share sessions, acquisition of records for
// ShareFetch, acknowledgements, acquisition lock expiry, and their state
// in the Persister. Safe for concurrent use.
//
// Locks: Manager.mu, then sharePartition.mu; sharePartition.writeMu is
// taken before either and is held across the persister's Write (and a
// fetch's log read), so that one share-partition's writes go out in the
// order of its changes, and one fetch at a time acquires from it, as
// Kafka's SharePartition fetch lock.
type Manager struct {
	opts     Options
	logger   *slog.Logger
	sessions *sessionCache
	wg       sync.WaitGroup
	// ctx bounds the background work (lock expiry writes, releases
	// after a connection closed); Close cancels it.
	ctx    context.Context
	cancel context.CancelFunc

	mu struct {
		sync.Mutex
		parts    map[sharestate.Key]*sharePartition
		watchers map[sharestate.Key]map[chan struct{}]struct{}
		closed   bool
	}
}

// NewManager returns a Manager serving nothing yet.
func NewManager(o Options) *Manager {
	if o.RecordLockDuration <= 0 {
		o.RecordLockDuration = 30 * time.Second
	}
	if o.DeliveryCountLimit <= 0 {
		o.DeliveryCountLimit = 5
	}
	if o.PartitionMaxRecordLocks <= 0 {
		o.PartitionMaxRecordLocks = 2000
	}
	if o.MaxShareSessions <= 0 {
		o.MaxShareSessions = 2000
	}
	if o.PersisterTimeout <= 0 {
		o.PersisterTimeout = 30 * time.Second
	}
	if o.IdleReload <= 0 {
		o.IdleReload = 45 * time.Second
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	m := &Manager{opts: o, logger: o.Logger, sessions: newSessionCache(o.MaxShareSessions)}
	m.ctx, m.cancel = context.WithCancel(context.Background())
	m.mu.parts = make(map[sharestate.Key]*sharePartition)
	m.mu.watchers = make(map[sharestate.Key]map[chan struct{}]struct{})
	return m
}

// Close stops the lock timers, cancels the background persister calls
// and waits for the expiries and releases under way.
func (m *Manager) Close() {
	m.mu.Lock()
	m.mu.closed = true
	for _, sp := range m.mu.parts {
		sp.stop()
	}
	m.mu.Unlock()
	m.cancel()
	m.wg.Wait()
}

// Target is a share-partition as a request reaches it on the leader: its
// key, the partition's log and this node's leader epoch of it.
type Target struct {
	Key         sharestate.Key
	Log         Log
	LeaderEpoch int32
}

// groupSettings is a share group's settings for its share-partitions.
type groupSettings struct {
	limits
	reset         string // share.auto.offset.reset
	readCommitted bool   // share.isolation.level
}

// settings resolves a group's settings from its overrides and the
// broker's defaults.
func (m *Manager) settings(group string) groupSettings {
	g := groupSettings{limits: limits{lockDuration: m.opts.RecordLockDuration, deliveryLimit: int16(m.opts.DeliveryCountLimit), maxInFlight: m.opts.PartitionMaxRecordLocks}, reset: "latest"}
	if m.opts.GroupConfig == nil {
		return g
	}
	o := m.opts.GroupConfig(group)
	if v, err := strconv.Atoi(o["share.record.lock.duration.ms"]); err == nil && v > 0 {
		g.lockDuration = time.Duration(v) * time.Millisecond
	}
	if v, err := strconv.Atoi(o["share.delivery.count.limit"]); err == nil && v > 0 && v < 1<<15 {
		g.deliveryLimit = int16(v)
	}
	if v, err := strconv.Atoi(o["share.partition.max.record.locks"]); err == nil && v > 0 {
		g.maxInFlight = v
	}
	if v := o["share.auto.offset.reset"]; v != "" {
		g.reset = v
	}
	g.readCommitted = o["share.isolation.level"] == "read_committed"
	g.noRenew = strings.EqualFold(o["share.renew.acknowledge.enable"], "false")
	return g
}

// LockDuration is the group's acquisition lock duration
// (AcquisitionLockTimeoutMillis of the responses).
func (m *Manager) LockDuration(group string) time.Duration { return m.settings(group).lockDuration }

// sharePartition is one share-partition served here.
type sharePartition struct {
	key         sharestate.Key
	leaderEpoch int32
	// loaded is closed when the state was read (or failed to be:
	// loadCode).
	loaded   chan struct{}
	loadCode int16

	writeMu sync.Mutex
	mu      struct {
		sync.Mutex
		st         partitionState
		stateEpoch int32
		set        groupSettings
		timer      *time.Timer
		dropped    bool
		// lastUsed is when a fetch or acknowledgement last used it.
		lastUsed time.Time
	}
}

// stale reports whether sp should be read again before it is served: it
// went unused for idle with no record acquired.
func (sp *sharePartition) stale(now time.Time, idle time.Duration) bool {
	select {
	case <-sp.loaded:
	default:
		return false // loading
	}
	sp.mu.Lock()
	defer sp.mu.Unlock()
	return sp.loadCode == 0 && now.Sub(sp.mu.lastUsed) > idle && sp.mu.st.nextDeadline().IsZero()
}

// stop stops the lock timer and marks the share-partition dropped.
func (sp *sharePartition) stop() {
	sp.mu.Lock()
	sp.mu.dropped = true
	if sp.mu.timer != nil {
		sp.mu.timer.Stop()
	}
	sp.mu.Unlock()
}

// get returns the loaded share-partition of t, loading it (reading its
// state) when this is its first request at t's leader epoch. A request at
// an older epoch than the one served is NOT_LEADER_OR_FOLLOWER.
func (m *Manager) get(ctx context.Context, t Target) (*sharePartition, int16) {
	m.mu.Lock()
	if m.mu.closed {
		m.mu.Unlock()
		return nil, kerr.NotLeaderForPartition.Code
	}
	sp := m.mu.parts[t.Key]
	switch {
	case sp != nil && sp.leaderEpoch > t.LeaderEpoch:
		m.mu.Unlock()
		return nil, kerr.NotLeaderForPartition.Code
	case sp != nil && sp.leaderEpoch < t.LeaderEpoch, sp != nil && sp.stale(m.opts.Now(), m.opts.IdleReload):
		// A new leader epoch: the state may have moved on under
		// another leader; or unused for long: the group coordinator
		// may have reset it. Read it again.
		sp.stop()
		sp = nil
	}
	if sp == nil {
		sp = &sharePartition{key: t.Key, leaderEpoch: t.LeaderEpoch, loaded: make(chan struct{})}
		m.mu.parts[t.Key] = sp
		m.mu.Unlock()
		sp.loadCode = m.load(ctx, sp, t)
		close(sp.loaded)
		if sp.loadCode != 0 {
			m.drop(sp)
		} else {
			m.notify(t.Key)
		}
	} else {
		m.mu.Unlock()
		select {
		case <-sp.loaded:
		case <-ctx.Done():
			return nil, kerr.RequestTimedOut.Code
		}
	}
	if sp.loadCode != 0 {
		return nil, sp.loadCode
	}
	return sp, 0
}

// drop forgets sp (a failed load or write, a change of leader); the next
// request reads the state again.
func (m *Manager) drop(sp *sharePartition) {
	sp.stop()
	m.mu.Lock()
	if m.mu.parts[sp.key] == sp {
		delete(m.mu.parts, sp.key)
	}
	m.mu.Unlock()
}

// Reconcile drops the share-partitions this node no longer leads at the
// epoch it loaded them with (leading reports the partition's current
// leader epoch here, ok false when this node does not lead it): their
// in-memory acquisitions end, and a later leader reads the durable state.
func (m *Manager) Reconcile(leading func(topicID [16]byte, partition int32) (leaderEpoch int32, ok bool)) {
	m.mu.Lock()
	var stale []*sharePartition
	for _, sp := range m.mu.parts {
		if e, ok := leading(sp.key.TopicID, sp.key.Partition); !ok || e != sp.leaderEpoch {
			stale = append(stale, sp)
		}
	}
	m.mu.Unlock()
	for _, sp := range stale {
		m.drop(sp)
	}
}

// load reads sp's state and picks its start offset when it has none yet.
func (m *Manager) load(ctx context.Context, sp *sharePartition, t Target) int16 {
	st, ok, err := m.opts.Persister.Read(ctx, t.Key, t.LeaderEpoch)
	if err != nil {
		return m.persisterCode("read", t.Key, err)
	}
	if !ok {
		// The group coordinator initializes a share-partition's state
		// before it assigns it; a fetch of one never initialized (a
		// group that is not a share group, or not assigned the
		// partition) is UNKNOWN_SERVER_ERROR, as Kafka 4.4 answers it.
		return kerr.UnknownServerError.Code
	}
	set := m.settings(t.Key.Group)
	start := st.StartOffset
	write := false
	if start < 0 {
		start = m.initialOffset(t.Log, set.reset)
		write = true
	}
	ps := restore(start, st.Batches)
	if ps.advanceLogStart(t.Log.LogStartOffset()) {
		write = true
	}
	sp.mu.Lock()
	sp.mu.st, sp.mu.stateEpoch, sp.mu.set = ps, st.StateEpoch, set
	sp.mu.lastUsed = m.opts.Now()
	sp.mu.Unlock()
	if write {
		if err := m.persist(ctx, sp); err != nil {
			return m.persisterCode("write", t.Key, err)
		}
	}
	return 0
}

// initialOffset is the start offset share.auto.offset.reset gives a
// share-partition that has none: the log start (earliest), the high
// watermark (latest), or the first offset with a timestamp at most the
// duration old (by_duration:<ISO-8601 duration>; the high watermark when
// there is none).
func (m *Manager) initialOffset(l Log, reset string) int64 {
	switch {
	case reset == "earliest":
		return l.LogStartOffset()
	case strings.HasPrefix(reset, "by_duration:"):
		d, ok := parseISODuration(strings.TrimPrefix(reset, "by_duration:"))
		if !ok {
			break
		}
		ts := m.opts.Now().Add(-d).UnixMilli()
		if off, _, found := l.OffsetForTimestamp(ts); found && off < l.HighWatermark() {
			return max(off, l.LogStartOffset())
		}
	}
	return l.HighWatermark()
}

// parseISODuration parses the durations share.auto.offset.reset takes
// (Java's Duration.parse: PnDTnHnMn.nS, days at most).
func parseISODuration(s string) (time.Duration, bool) {
	s = strings.ToUpper(s)
	if !strings.HasPrefix(s, "P") || len(s) < 3 {
		return 0, false
	}
	s = s[1:]
	var d time.Duration
	inTime := false
	for s != "" {
		if s[0] == 'T' {
			inTime, s = true, s[1:]
			continue
		}
		i := strings.IndexAny(s, "DHMS")
		if i <= 0 {
			return 0, false
		}
		v, err := strconv.ParseFloat(s[:i], 64)
		if err != nil || v < 0 {
			return 0, false
		}
		unit := map[byte]time.Duration{'D': 24 * time.Hour, 'H': time.Hour, 'M': time.Minute, 'S': time.Second}[s[i]]
		if (s[i] == 'D') == inTime {
			return 0, false
		}
		d += time.Duration(v * float64(unit))
		s = s[i+1:]
	}
	return d, true
}

// persist writes sp's durable state. REQUIRES: sp.writeMu held.
func (m *Manager) persist(ctx context.Context, sp *sharePartition) error {
	sp.mu.Lock()
	start, batches := sp.mu.st.durable()
	st := sharestate.State{StateEpoch: sp.mu.stateEpoch, LeaderEpoch: sp.leaderEpoch, StartOffset: start, Batches: batches}
	sp.mu.Unlock()
	return m.opts.Persister.Write(ctx, sp.key, st)
}

// persisterCode is the Kafka error a request gets for a failed persister
// call: a fenced leader is NOT_LEADER_OR_FOLLOWER (another leader serves
// the share-partition now), the coordinator errors stay as they are
// (clients retry them), anything else is UNKNOWN_SERVER_ERROR.
func (m *Manager) persisterCode(op string, k sharestate.Key, err error) int16 {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		switch ke {
		case kerr.FencedLeaderEpoch, kerr.NotLeaderForPartition:
			return kerr.NotLeaderForPartition.Code
		case kerr.FencedStateEpoch, kerr.CoordinatorNotAvailable, kerr.CoordinatorLoadInProgress, kerr.NotCoordinator, kerr.UnknownTopicOrPartition:
			return ke.Code
		}
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return kerr.RequestTimedOut.Code
	}
	m.logger.Warn("share state "+op+" failed", "group", k.Group, "partition", k.Partition, "err", err)
	return kerr.UnknownServerError.Code
}

// FetchRequest is what a member fetches from one share-partition.
type FetchRequest struct {
	Member string
	// MaxBytes limits the bytes read (the first batch comes whole).
	MaxBytes int
	// MaxRecords limits the records acquired (<= 0: no limit); Mode
	// says whether it may be passed to end on a batch boundary.
	MaxRecords int
	Mode       int8
	// BatchSize is the request's BatchSize: in batch-optimized mode
	// the acquired ranges are split at log batch boundaries into
	// pieces of at least this many offsets (<= 0: not split).
	BatchSize int
}

// FetchResult is a share-partition's answer to a fetch.
type FetchResult struct {
	// Code is the partition's error code.
	Code int16
	// Records are the whole batches holding the acquired records.
	Records []byte
	// Acquired are the offsets the member acquired, with their delivery
	// counts.
	Acquired []AcquiredRange
}

// Count is the number of records acquired.
func (r FetchResult) Count() int {
	n := 0
	for _, a := range r.Acquired {
		n += int(a.LastOffset - a.FirstOffset + 1)
	}
	return n
}

// Fetch acquires records of t for a member: the available records from
// the share-partition's next fetch offset, read from the log up to the
// high watermark (the last stable offset under read_committed).
func (m *Manager) Fetch(ctx context.Context, t Target, f FetchRequest) FetchResult {
	res, dropped := m.fetch(ctx, t, f)
	if dropped {
		// Dropped between get and the fetch (its group emptied, a
		// write failed): read it again, once.
		res, _ = m.fetch(ctx, t, f)
	}
	return res
}

// fetch is one attempt of Fetch; dropped reports that the share-partition
// was dropped before it could be served.
func (m *Manager) fetch(ctx context.Context, t Target, f FetchRequest) (_ FetchResult, dropped bool) {
	sp, code := m.get(ctx, t)
	if code != 0 {
		return FetchResult{Code: code}, false
	}
	sp.writeMu.Lock()
	defer sp.writeMu.Unlock()

	sp.mu.Lock()
	if sp.mu.dropped {
		sp.mu.Unlock()
		return FetchResult{Code: kerr.NotLeaderForPartition.Code}, true
	}
	// The group's settings apply as they are now (a dynamic change of
	// share.record.lock.duration.ms, share.delivery.count.limit,
	// share.partition.max.record.locks or share.isolation.level takes
	// effect at the next fetch).
	sp.mu.set = m.settings(t.Key.Group)
	set := sp.mu.set
	sp.mu.lastUsed = m.opts.Now()
	dirty := sp.mu.st.advanceLogStart(t.Log.LogStartOffset())
	from := sp.mu.st.nextFetchOffset()
	full := from >= sp.mu.st.end() && len(sp.mu.st.recs) >= set.maxInFlight
	sp.mu.Unlock()

	upTo := t.Log.HighWatermark()
	if set.readCommitted {
		upTo = min(upTo, t.Log.LastStableOffset())
	}
	var res FetchResult
	var data []byte
	if !full && from < upTo {
		var err error
		data, err = t.Log.Read(from, max(f.MaxBytes, 0), upTo, true)
		if err != nil {
			if !errors.Is(err, storage.ErrOffsetOutOfRange) {
				m.logger.Warn("share fetch read failed", "group", t.Key.Group, "partition", t.Key.Partition, "err", err)
				return FetchResult{Code: kerr.KafkaStorageError.Code}, false
			}
			data = nil // retention moved the log start: next fetch
		}
	}
	if len(data) > 0 {
		batches, spans := m.batchRanges(t.Log, data, set.readCommitted)
		now := m.opts.Now()
		sp.mu.Lock()
		got, d := sp.mu.st.acquire(batches, acquireRequest{member: f.Member, maxRecords: f.MaxRecords, mode: f.Mode, batchSize: f.BatchSize, now: now}, set.limits)
		dirty = dirty || d
		if len(got) > 0 {
			m.scheduleLocked(sp, now)
		}
		sp.mu.Unlock()
		res.Acquired = got
		res.Records = recordsFor(data, spans, got)
	}
	if dirty {
		if err := m.persist(ctx, sp); err != nil {
			m.drop(sp)
			return FetchResult{Code: m.persisterCode("write", t.Key, err)}, false
		}
	}
	return res, false
}

// batchSpan is where one batch of a read lies.
type batchSpan struct {
	first, last int64
	pos, end    int
	producerID  int64
}

// batchRanges lists the batches of data for acquisition: control batches,
// and under read_committed the batches of aborted transactions, are
// skipped (archived, never delivered).
func (m *Manager) batchRanges(l Log, data []byte, readCommitted bool) ([]batchRange, []batchSpan) {
	var out []batchRange
	var spans []batchSpan
	var txnl []bool
	pos := 0
	_, _ = wire.SplitBatches(data, func(batch []byte, h wire.BatchHeader) error {
		last := h.BaseOffset + int64(h.LastOffsetDelta)
		out = append(out, batchRange{first: h.BaseOffset, last: last, skip: h.Attributes&0x20 != 0}) // control
		txnl = append(txnl, h.Attributes&0x10 != 0)
		spans = append(spans, batchSpan{first: h.BaseOffset, last: last, pos: pos, end: pos + len(batch), producerID: h.ProducerID})
		pos += len(batch)
		return nil
	})
	if !readCommitted || len(out) == 0 {
		return out, spans
	}
	aborted := l.AbortedTransactions(out[0].first, out[len(out)-1].last+1)
	for i := range out {
		if !txnl[i] || out[i].skip {
			continue
		}
		for _, a := range aborted {
			if a.ProducerID == spans[i].producerID && a.FirstOffset <= out[i].first && out[i].first <= a.LastOffset {
				out[i].skip = true
				break
			}
		}
	}
	return out, spans
}

// recordsFor returns the batches of data that hold an acquired offset.
func recordsFor(data []byte, spans []batchSpan, got []AcquiredRange) []byte {
	if len(got) == 0 {
		return nil
	}
	var out []byte
	j := 0
	for _, s := range spans {
		for j < len(got) && got[j].LastOffset < s.first {
			j++
		}
		if j < len(got) && got[j].FirstOffset <= s.last {
			if out == nil && s.pos == 0 {
				out = data[:0]
			}
			out = append(out, data[s.pos:s.end]...)
		}
	}
	return out
}

// Acknowledgement is a member's acknowledgements of one share-partition.
type Acknowledgement struct {
	Member string
	// Renew: the request's IsRenewAck (renew types allowed).
	Renew   bool
	Batches []AckBatch
}

// AckResult is a share-partition's answer to acknowledgements: a Kafka
// error code (INVALID_RECORD_STATE, INVALID_REQUEST, a persister
// failure's) and, for some, Kafka's message.
type AckResult struct {
	Code    int16
	Message string
}

// Acknowledge applies acknowledgements and returns once their state is
// written.
func (m *Manager) Acknowledge(ctx context.Context, t Target, a Acknowledgement) AckResult {
	sp, code := m.get(ctx, t)
	if code != 0 {
		return AckResult{Code: code}
	}
	set := m.settings(t.Key.Group)
	sp.writeMu.Lock()
	defer sp.writeMu.Unlock()
	now := m.opts.Now()
	sp.mu.Lock()
	if sp.mu.dropped {
		sp.mu.Unlock()
		return AckResult{Code: kerr.NotLeaderForPartition.Code}
	}
	// The group's settings as they are now: share.renew.acknowledge.enable
	// is read at each acknowledgement, as Kafka 4.4.
	sp.mu.set = set
	sp.mu.lastUsed = now
	code, msg, dirty := sp.mu.st.acknowledge(ackRequest{member: a.Member, renew: a.Renew, batches: a.Batches, now: now}, sp.mu.set.limits)
	m.scheduleLocked(sp, now)
	sp.mu.Unlock()
	if code != 0 || !dirty {
		return AckResult{Code: code, Message: msg}
	}
	if err := m.persist(ctx, sp); err != nil {
		m.drop(sp)
		return AckResult{Code: m.persisterCode("write", t.Key, err)}
	}
	m.notify(t.Key)
	return AckResult{}
}

// Release releases the records a member holds in the share-partitions
// keys (its session closed), writing each changed state. Share-partitions
// not served here are skipped.
func (m *Manager) Release(ctx context.Context, member string, keys []sharestate.Key) {
	for _, k := range keys {
		m.mu.Lock()
		sp := m.mu.parts[k]
		m.mu.Unlock()
		if sp == nil {
			continue
		}
		select {
		case <-sp.loaded:
		case <-ctx.Done():
			return
		}
		if sp.loadCode != 0 {
			continue
		}
		sp.writeMu.Lock()
		sp.mu.Lock()
		changed := !sp.mu.dropped && sp.mu.st.releaseMember(member, sp.mu.set.limits)
		m.scheduleLocked(sp, m.opts.Now())
		sp.mu.Unlock()
		if changed {
			if err := m.persist(ctx, sp); err != nil {
				m.persisterCode("write", k, err)
				m.drop(sp)
			}
			m.notify(k)
		}
		sp.writeMu.Unlock()
	}
}

// scheduleLocked sets sp's lock timer to its earliest lock deadline.
// REQUIRES: sp.mu held.
func (m *Manager) scheduleLocked(sp *sharePartition, now time.Time) {
	next := sp.mu.st.nextDeadline()
	if next.IsZero() || sp.mu.dropped {
		if sp.mu.timer != nil {
			sp.mu.timer.Stop()
		}
		return
	}
	d := max(next.Sub(now), 0)
	if sp.mu.timer == nil {
		sp.mu.timer = time.AfterFunc(d, func() { m.expire(sp) })
		return
	}
	sp.mu.timer.Reset(d)
}

// expire releases sp's records whose acquisition lock expired, writes the
// state, and wakes the fetches waiting for records.
func (m *Manager) expire(sp *sharePartition) {
	m.mu.Lock()
	if m.mu.closed {
		m.mu.Unlock()
		return
	}
	m.wg.Add(1)
	m.mu.Unlock()
	defer m.wg.Done()

	sp.writeMu.Lock()
	defer sp.writeMu.Unlock()
	now := m.opts.Now()
	sp.mu.Lock()
	if sp.mu.dropped {
		sp.mu.Unlock()
		return
	}
	changed, _ := sp.mu.st.expireLocks(now, sp.mu.set.limits)
	m.scheduleLocked(sp, now)
	sp.mu.Unlock()
	if !changed {
		return
	}
	ctx, cancel := context.WithTimeout(m.ctx, m.opts.PersisterTimeout)
	defer cancel()
	if err := m.persist(ctx, sp); err != nil {
		m.persisterCode("write", sp.key, err)
		m.drop(sp)
	}
	m.notify(sp.key)
}

// Watch makes ch receive (without blocking) whenever records of the
// share-partition k may have become available (released, expired, its
// state loaded) until the returned function is called.
func (m *Manager) Watch(k sharestate.Key, ch chan struct{}) (unwatch func()) {
	m.mu.Lock()
	w := m.mu.watchers[k]
	if w == nil {
		w = make(map[chan struct{}]struct{})
		m.mu.watchers[k] = w
	}
	w[ch] = struct{}{}
	m.mu.Unlock()
	return func() {
		m.mu.Lock()
		delete(m.mu.watchers[k], ch)
		if len(m.mu.watchers[k]) == 0 {
			delete(m.mu.watchers, k)
		}
		m.mu.Unlock()
	}
}

// notify signals the watchers of k.
func (m *Manager) notify(k sharestate.Key) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for ch := range m.mu.watchers[k] {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// FetchSession resolves a ShareFetch's share session (see SessionFetch)
// for a request that came on no connection the Manager is told about: a
// session it opens goes only when closed or replaced (FetchSessionOn).
func (m *Manager) FetchSession(key SessionKey, epoch int32, parts []FetchPartition, forgotten []TopicPartition, hasAcks bool) SessionFetch {
	return m.FetchSessionOn(0, key, epoch, parts, forgotten, hasAcks)
}

// FetchSessionOn resolves a ShareFetch's share session (see SessionFetch)
// for a request that came on connection conn: a session it opens (epoch
// 0) is closed, and its member's records released, when conn closes
// (ConnectionClosed).
func (m *Manager) FetchSessionOn(conn ConnID, key SessionKey, epoch int32, parts []FetchPartition, forgotten []TopicPartition, hasAcks bool) SessionFetch {
	return m.sessions.fetchContext(conn, key, epoch, parts, forgotten, hasAcks)
}

// ConnectionClosed closes the share sessions opened on conn and releases
// the records their members hold in the sessions' share-partitions, so
// that other members get them at once rather than when their acquisition
// locks expire (Kafka 4.4's ShareSessionCache does so on a connection's
// disconnect). The release runs in the background (the Manager's Close
// waits for it); ConnectionClosed returns at once.
func (m *Manager) ConnectionClosed(conn ConnID) {
	gone := m.sessions.removeConn(conn)
	if len(gone) == 0 {
		return
	}
	m.mu.Lock()
	if m.mu.closed {
		m.mu.Unlock()
		return
	}
	m.wg.Add(1)
	m.mu.Unlock()
	go func() {
		defer m.wg.Done()
		ctx, cancel := context.WithTimeout(m.ctx, m.opts.PersisterTimeout)
		defer cancel()
		for key, parts := range gone {
			m.sessionClosed(ctx, key, parts)
		}
	}()
}

// AcknowledgeSession checks a ShareAcknowledge's share session and moves
// its epoch; it returns a Kafka error code.
func (m *Manager) AcknowledgeSession(key SessionKey, epoch int32) int16 {
	return m.sessions.acknowledgeContext(key, epoch)
}

// CloseSession closes a member's share session and releases the records
// it holds in the session's share-partitions (the member's final request,
// or it left its group). It returns the session's partitions.
func (m *Manager) CloseSession(ctx context.Context, key SessionKey) []TopicPartition {
	parts := m.sessions.remove(key)
	m.sessionClosed(ctx, key, parts)
	return parts
}

// sessionClosed releases the records of a closed session's member in the
// session's share-partitions parts, and forgets the group's
// share-partitions when it was the group's last session here.
func (m *Manager) sessionClosed(ctx context.Context, key SessionKey, parts []TopicPartition) {
	keys := make([]sharestate.Key, len(parts))
	for i, p := range parts {
		keys[i] = sharestate.Key{Group: key.Group, TopicID: p.TopicID, Partition: p.Partition}
	}
	m.Release(ctx, key.Member, keys)
	if !m.sessions.hasGroup(key.Group) {
		// The group's last member here left: forget its
		// share-partitions, as Kafka does when a share group
		// empties; they are read again when next served (after an
		// AlterShareGroupOffsets, say).
		m.mu.Lock()
		var gone []*sharePartition
		for k, sp := range m.mu.parts {
			if k.Group == key.Group {
				gone = append(gone, sp)
			}
		}
		m.mu.Unlock()
		for _, sp := range gone {
			sp.writeMu.Lock() // after any write under way
			m.drop(sp)
			sp.writeMu.Unlock()
		}
	}
}

// Sessions returns the number of open share sessions.
func (m *Manager) Sessions() int { return m.sessions.len() }
