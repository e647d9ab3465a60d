package txn

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/wire"
)

// memLog is an in-memory Log. failAppends > 0 fails that many appends;
// readGate, if set, blocks Read until closed.
type memLog struct {
	mu          sync.Mutex
	batches     [][]byte
	next        int64
	failAppends int
	failAt      int // if > 0, the failAt-th append from now fails
	readGate    chan struct{}
}

var errInjected = errors.New("injected failure")

func (l *memLog) Append(batch []byte) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.failAppends > 0 {
		l.failAppends--
		return errInjected
	}
	if l.failAt > 0 {
		l.failAt--
		if l.failAt == 0 {
			return errInjected
		}
	}
	h, err := wire.ParseBatchHeader(batch)
	if err != nil {
		return err
	}
	b := append([]byte(nil), batch...)
	wire.SetBaseOffset(b, l.next)
	l.next += int64(h.LastOffsetDelta) + 1
	l.batches = append(l.batches, b)
	return nil
}

func (l *memLog) Read(offset int64, maxBytes int, maxOffset int64, minOneBatch bool) ([]byte, error) {
	l.mu.Lock()
	gate := l.readGate
	l.mu.Unlock()
	if gate != nil {
		<-gate
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []byte
	for _, b := range l.batches {
		h, _ := wire.ParseBatchHeader(b)
		if h.LastOffset() < offset || h.BaseOffset >= maxOffset {
			continue
		}
		if len(out)+len(b) > maxBytes && (len(out) > 0 || !minOneBatch) {
			break
		}
		out = append(out, b...)
	}
	return out, nil
}

func (l *memLog) LogStartOffset() int64 { return 0 }
func (l *memLog) LogEndOffset() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.next
}

func (l *memLog) setFailAppends(n int) {
	l.mu.Lock()
	l.failAppends = n
	l.mu.Unlock()
}

// records decodes every record of the log, in order.
func (l *memLog) records(t *testing.T) []wire.Record {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []wire.Record
	for _, b := range l.batches {
		_, recs, err := wire.DecodeRecords(b)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, recs...)
	}
	return out
}

type fakePIDs struct {
	mu   sync.Mutex
	next int64
	fail bool
}

func (p *fakePIDs) Next() (int64, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.fail {
		return 0, errInjected
	}
	id := p.next
	p.next++
	return id, nil
}

// markerCall is one WriteMarkers call.
type markerCall struct {
	producerID int64
	epoch      int16
	commit     bool
	partitions []TopicPartition
}

// fakeMarkers records calls. fail, if set, decides per partition (a
// non-zero code fails it); gate, if set, is received from before answering.
type fakeMarkers struct {
	mu     sync.Mutex
	calls  []markerCall
	fail   func(call int, tp TopicPartition) int16
	gate   chan struct{}
	called chan struct{} // if set, signalled (without blocking) on each call
}

func (f *fakeMarkers) WriteMarkers(ctx context.Context, pid int64, epoch int16, commit bool, _ int32, tps []TopicPartition) map[TopicPartition]int16 {
	f.mu.Lock()
	n := len(f.calls)
	f.calls = append(f.calls, markerCall{pid, epoch, commit, append([]TopicPartition(nil), tps...)})
	gate, fail := f.gate, f.fail
	if f.called != nil {
		select {
		case f.called <- struct{}{}:
		default:
		}
	}
	f.mu.Unlock()
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return nil
		}
	}
	out := map[TopicPartition]int16{}
	for _, tp := range tps {
		if fail != nil {
			out[tp] = fail(n, tp)
		} else {
			out[tp] = 0
		}
	}
	return out
}

func (f *fakeMarkers) callList() []markerCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]markerCall(nil), f.calls...)
}

type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// testClockStart is where fake clocks start.
var testClockStart = time.Unix(1_700_000_000, 0)

// env is a coordinator over memory logs with fakes. Each partition's Log
// is its memLog as a replicated leader's log (repl), so the shard's writes
// are pipelined as on a broker, whose transaction logs are all
// replica.CoordinatorLog; TestWriteFaults and the StorageLog tests cover
// a Log that commits each Append.
type env struct {
	t       *testing.T
	c       *Coordinator
	logs    map[int32]*memLog
	repl    map[int32]*replLog
	pids    *fakePIDs
	markers *fakeMarkers
	clock   *fakeClock
	opts    Options
}

func newEnv(t *testing.T, edit ...func(*Options)) *env {
	t.Helper()
	e := &env{
		t:       t,
		logs:    map[int32]*memLog{},
		repl:    map[int32]*replLog{},
		pids:    &fakePIDs{next: 1000},
		markers: &fakeMarkers{},
		clock:   &fakeClock{now: testClockStart},
	}
	e.opts = Options{
		NumPartitions: 3,
		ProducerIDs:   e.pids,
		Markers:       e.markers,
		Now:           e.clock.Now,
		PartitionExists: func(topic string, p int32) bool {
			return topic != "missing" && p < 10
		},
		MaxTimeout: time.Hour,
	}
	for p := range int32(3) {
		e.logs[p] = &memLog{}
		e.repl[p] = newReplLog(e.logs[p])
	}
	for _, fn := range edit {
		fn(&e.opts)
	}
	e.start()
	return e
}

// start (re)starts a coordinator over the env's logs.
func (e *env) start() {
	e.t.Helper()
	o := e.opts
	if o.Log == nil {
		o.Log = func(p int32) (Log, bool) {
			l, ok := e.logs[p]
			if !ok {
				return nil, false
			}
			if r := e.repl[p]; r == nil || r.memLog != l { // the test replaced the memLog
				e.repl[p] = newReplLog(l)
			}
			return e.repl[p], true
		}
	}
	c, err := New(o)
	if err != nil {
		e.t.Fatal(err)
	}
	if err := c.LoadAll(); err != nil {
		e.t.Fatal(err)
	}
	if err := c.WaitLoaded(e.t.Context()); err != nil {
		e.t.Fatal(err)
	}
	e.c = c
	e.t.Cleanup(c.Close)
}

// tick runs every shard's deadline handling at the fake clock's now.
func (e *env) tick() {
	e.t.Helper()
	for _, s := range e.c.shardList() {
		if code := s.call(e.t.Context(), s.tick); code != 0 {
			e.t.Fatalf("tick: %v", kerr.ErrorForCode(code))
		}
		e.whenSettled(s, func() {}) // the writes of the tick are installed
	}
}

// whenSettled runs fn on s's goroutine at a moment no write is in flight
// (a pipelined write is in the log before it is installed), polling with
// a deadline.
func (e *env) whenSettled(s *shard, fn func()) {
	e.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ran := false
		if code := s.call(e.t.Context(), func() {
			if len(s.inFlight) == 0 {
				fn()
				ran = true
			}
		}); code != 0 {
			e.t.Fatalf("whenSettled: %v", kerr.ErrorForCode(code))
		}
		if ran {
			return
		}
		if time.Now().After(deadline) {
			e.t.Fatal("whenSettled: writes still in flight after 10 s")
		}
		runtime.Gosched()
	}
}

// meta returns a copy of id's state, nil if unknown, and whether markers
// are pending.
func (e *env) meta(id string) (*txnMeta, bool) {
	e.t.Helper()
	s, code := e.c.shardFor(id)
	if code != 0 {
		e.t.Fatalf("shardFor: %v", kerr.ErrorForCode(code))
	}
	var m *txnMeta
	var pending bool
	if code := s.call(e.t.Context(), func() {
		if cur := s.txns[id]; cur != nil {
			m = cur.clone()
		}
		_, pending = s.pending[id]
	}); code != 0 {
		e.t.Fatalf("meta: %v", kerr.ErrorForCode(code))
	}
	return m, pending
}

// waitState polls until id reaches st with no markers pending, with a
// deadline. Only when a marker retry is due does it move the fake clock
// (past the backoff) and tick, so that the clock stays where the test put
// it otherwise.
func (e *env) waitState(id string, st State) *txnMeta {
	e.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	s, _ := e.c.shardFor(id)
	for {
		var m *txnMeta
		var pending, inFlight bool
		s.call(e.t.Context(), func() {
			if cur := s.txns[id]; cur != nil {
				m = cur.clone()
			}
			p := s.pending[id]
			pending, inFlight = p != nil, p != nil && p.inFlight
		})
		if m != nil && m.state == st && !pending {
			return m
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("%s: state %+v (pending %v), want %v", id, m, pending, st)
		}
		if pending && !inFlight {
			e.clock.Advance(200 * time.Millisecond)
			e.tick()
		} else {
			runtime.Gosched()
		}
	}
}

func (e *env) init(id string, timeoutMs int32) (int64, int16) {
	e.t.Helper()
	resp := e.initReq(5, id, timeoutMs, -1, -1)
	if resp.ErrorCode != 0 {
		e.t.Fatalf("InitProducerID %s: %v", id, kerr.ErrorForCode(resp.ErrorCode))
	}
	return resp.ProducerID, resp.ProducerEpoch
}

func (e *env) initReq(version int16, id string, timeoutMs int32, pid int64, epoch int16) *kmsg.InitProducerIDResponse {
	req := kmsg.NewPtrInitProducerIDRequest()
	req.Version = version
	req.TransactionalID = &id
	req.TransactionTimeoutMillis = timeoutMs
	req.ProducerID, req.ProducerEpoch = pid, epoch
	return e.c.InitProducerID(e.t.Context(), req)
}

// add sends AddPartitionsToTxn v3 and returns the codes by "topic/p".
func (e *env) add(version int16, id string, pid int64, epoch int16, tps ...TopicPartition) map[TopicPartition]int16 {
	e.t.Helper()
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	req.Version = version
	req.TransactionalID, req.ProducerID, req.ProducerEpoch = id, pid, epoch
	for _, tp := range tps {
		if n := len(req.Topics); n > 0 && req.Topics[n-1].Topic == tp.Topic {
			req.Topics[n-1].Partitions = append(req.Topics[n-1].Partitions, tp.Partition)
			continue
		}
		rt := kmsg.NewAddPartitionsToTxnRequestTopic()
		rt.Topic, rt.Partitions = tp.Topic, []int32{tp.Partition}
		req.Topics = append(req.Topics, rt)
	}
	resp := e.c.AddPartitionsToTxn(e.t.Context(), req)
	out := map[TopicPartition]int16{}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			out[TopicPartition{Topic: t.Topic, Partition: p.Partition}] = p.ErrorCode
		}
	}
	if len(out) != len(tps) {
		e.t.Fatalf("AddPartitionsToTxn answered %d partitions, want %d", len(out), len(tps))
	}
	return out
}

// addOK adds partitions and fails the test unless all succeed.
func (e *env) addOK(id string, pid int64, epoch int16, tps ...TopicPartition) {
	e.t.Helper()
	for tp, code := range e.add(3, id, pid, epoch, tps...) {
		if code != 0 {
			e.t.Fatalf("AddPartitionsToTxn %s %v: %v", id, tp, kerr.ErrorForCode(code))
		}
	}
}

func (e *env) end(version int16, id string, pid int64, epoch int16, commit bool) *kmsg.EndTxnResponse {
	req := kmsg.NewPtrEndTxnRequest()
	req.Version = version
	req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = id, pid, epoch, commit
	return e.c.EndTxn(e.t.Context(), req)
}

func (e *env) addOffsets(version int16, id string, pid int64, epoch int16, gp TopicPartition) int16 {
	req := kmsg.NewPtrAddOffsetsToTxnRequest()
	req.Version = version
	req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Group = id, pid, epoch, "g"
	return e.c.AddOffsetsToTxn(e.t.Context(), req, gp).ErrorCode
}

func wantCode(t *testing.T, what string, got int16, want *kerr.Error) {
	t.Helper()
	wantCode := int16(0)
	if want != nil {
		wantCode = want.Code
	}
	if got != wantCode {
		t.Fatalf("%s: got %v, want %v", what, kerr.ErrorForCode(got), kerr.ErrorForCode(wantCode))
	}
}

func tp(topic string, p int32) TopicPartition { return TopicPartition{Topic: topic, Partition: p} }
