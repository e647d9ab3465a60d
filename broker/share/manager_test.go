package share

import (
	"context"
	"fmt"
	"maps"
	"reflect"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	sharestate "github.com/samsa-broker/samsa/coordinator/share"
	"github.com/samsa-broker/samsa/storage"
	"github.com/samsa-broker/samsa/storage/vfs"
	"github.com/samsa-broker/samsa/wire"
)

// testLog is a partition log in memory with n batches of per records
// each, the high watermark at its end.
func testLog(t *testing.T, n, per int) *storage.Log {
	t.Helper()
	l, err := storage.OpenLog(storage.LogOptions{FS: vfs.NewMem(), Dir: "t-0", Config: storage.DefaultLogConfig(), RecoveryPoint: -1, LogStartOffset: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	appendBatches(t, l, n, per, false)
	return l
}

// appendBatches appends n batches of per records and moves the high
// watermark to the log end.
func appendBatches(t *testing.T, l *storage.Log, n, per int, control bool) {
	t.Helper()
	for range n {
		spec := wire.BatchSpec{BaseTimestamp: time.Now().UnixMilli(), ProducerID: -1, Control: control}
		for j := range per {
			spec.Records = append(spec.Records, wire.Record{Value: []byte(fmt.Sprintf("v%d", j))})
		}
		appendSpec(t, l, spec)
	}
	l.SetHighWatermark(l.LogEndOffset())
}

var testKey = sharestate.Key{Group: "g", TopicID: [16]byte{1}, Partition: 0}

func newTestManager(p sharestate.Persister, overrides map[string]string) *Manager {
	return NewManager(Options{Persister: p, GroupConfig: func(string) map[string]string { return overrides }})
}

func TestManagerFetchAckDurable(t *testing.T) {
	p := newFakePersister()
	p.Initialize(context.Background(), testKey, 0, -1)
	l := testLog(t, 4, 5) // offsets 0-19
	m := newTestManager(p, map[string]string{"share.auto.offset.reset": "earliest"})
	defer m.Close()
	ctx := context.Background()
	tg := Target{Key: testKey, Log: l, LeaderEpoch: 3}

	res := m.Fetch(ctx, tg, FetchRequest{Member: "a", MaxBytes: 1 << 20, MaxRecords: 7})
	if res.Code != 0 || !reflect.DeepEqual(res.Acquired, []AcquiredRange{{0, 9, 1}}) {
		t.Fatalf("fetch: code %d acquired %v, want 0-9 (two whole batches)", res.Code, res.Acquired)
	}
	var n int
	if _, err := wire.SplitBatches(res.Records, func([]byte, wire.BatchHeader) error { n++; return nil }); err != nil || n != 2 {
		t.Fatalf("records: %d batches, err %v; want 2", n, err)
	}
	// The initial start offset (earliest) was written with the leader epoch.
	if st := p.state(testKey); st.StartOffset != 0 || st.LeaderEpoch != 3 {
		t.Fatalf("state after load: %+v", st)
	}
	if code := m.Acknowledge(ctx, tg, Acknowledgement{Member: "a", Batches: []AckBatch{{0, 4, []int8{AckAccept}}, {5, 5, []int8{AckRelease}}}}).Code; code != 0 {
		t.Fatalf("ack: %d", code)
	}
	// Written before Acknowledge returned: 5 released (available, count
	// 1); 6-9, still acquired at their first delivery, are written as
	// available at count 0, that is not at all (as Kafka 4.4).
	st := p.state(testKey)
	if st.StartOffset != 5 || len(st.Batches) != 1 || st.Batches[0] != (sharestate.Batch{FirstOffset: 5, LastOffset: 5, DeliveryState: sharestate.StateAvailable, DeliveryCount: 1}) {
		t.Fatalf("written state: %+v", st)
	}

	// A new leader (a fresh manager, a higher epoch) reads it: 5 comes
	// again with delivery count 2, then 6-19 at their first delivery.
	m2 := newTestManager(p, nil)
	defer m2.Close()
	tg2 := Target{Key: testKey, Log: l, LeaderEpoch: 4}
	res = m2.Fetch(ctx, tg2, FetchRequest{Member: "b", MaxBytes: 1 << 20})
	if want := []AcquiredRange{{5, 5, 2}, {6, 19, 1}}; res.Code != 0 || !reflect.DeepEqual(res.Acquired, want) {
		t.Fatalf("new leader fetch: code %d acquired %v, want %v", res.Code, res.Acquired, want)
	}
	// The old leader is fenced: its write fails, and it drops the
	// share-partition.
	if code := m.Acknowledge(ctx, tg, Acknowledgement{Member: "a", Batches: []AckBatch{{6, 6, []int8{AckAccept}}}}).Code; code != kerr.NotLeaderForPartition.Code {
		t.Fatalf("fenced leader's ack: %d, want NOT_LEADER_OR_FOLLOWER", code)
	}
}

func TestManagerUninitializedAndErrors(t *testing.T) {
	p := newFakePersister()
	l := testLog(t, 1, 1)
	m := newTestManager(p, nil)
	defer m.Close()
	ctx := context.Background()
	tg := Target{Key: testKey, Log: l, LeaderEpoch: 0}
	if res := m.Fetch(ctx, tg, FetchRequest{Member: "a", MaxBytes: 1000}); res.Code != kerr.UnknownServerError.Code {
		t.Fatalf("uninitialized: %d, want UNKNOWN_SERVER_ERROR (Kafka 4.4)", res.Code)
	}
	p.Initialize(ctx, testKey, 0, -1)
	// latest (the default): nothing to fetch.
	if res := m.Fetch(ctx, tg, FetchRequest{Member: "a", MaxBytes: 1000}); res.Code != 0 || len(res.Acquired) != 0 {
		t.Fatalf("latest: %+v", res)
	}
	appendBatches(t, l, 1, 2, false) // offsets 1-2
	if res := m.Fetch(ctx, tg, FetchRequest{Member: "a", MaxBytes: 1000}); !reflect.DeepEqual(res.Acquired, []AcquiredRange{{1, 2, 1}}) {
		t.Fatalf("after append: %+v", res)
	}
	// A failed write answers the ack with an error and drops the
	// share-partition: the records come back from the durable state.
	p.failWrite(errFakeDown)
	if code := m.Acknowledge(ctx, tg, Acknowledgement{Member: "a", Batches: []AckBatch{{1, 2, []int8{AckAccept}}}}).Code; code != kerr.UnknownServerError.Code {
		t.Fatalf("ack with a failing persister: %d", code)
	}
	if res := m.Fetch(ctx, tg, FetchRequest{Member: "b", MaxBytes: 1000}); !reflect.DeepEqual(res.Acquired, []AcquiredRange{{1, 2, 1}}) {
		t.Fatalf("after the failed write: %+v", res)
	}
	// A request at an older leader epoch than the one served.
	if res := m.Fetch(ctx, Target{Key: testKey, Log: l, LeaderEpoch: -1}, FetchRequest{Member: "b", MaxBytes: 1000}); res.Code != kerr.NotLeaderForPartition.Code {
		t.Fatalf("older epoch: %d", res.Code)
	}
}

func TestManagerControlBatchesArchived(t *testing.T) {
	p := newFakePersister()
	p.Initialize(context.Background(), testKey, 0, 0)
	l := testLog(t, 1, 2)           // 0-1
	appendBatches(t, l, 1, 1, true) // 2: a control batch
	appendBatches(t, l, 1, 2, false)
	m := newTestManager(p, nil)
	defer m.Close()
	res := m.Fetch(context.Background(), Target{Key: testKey, Log: l}, FetchRequest{Member: "a", MaxBytes: 1 << 20})
	if want := []AcquiredRange{{0, 1, 1}, {3, 4, 1}}; !reflect.DeepEqual(res.Acquired, want) {
		t.Fatalf("acquired %v, want %v", res.Acquired, want)
	}
	var n int
	wire.SplitBatches(res.Records, func(_ []byte, h wire.BatchHeader) error {
		if h.Attributes&0x20 != 0 {
			t.Errorf("control batch at %d sent", h.BaseOffset)
		}
		n++
		return nil
	})
	if n != 2 {
		t.Fatalf("%d batches sent, want 2", n)
	}
}

// TestLockExpiryReleases: the acquisition lock of records nobody
// acknowledges expires after share.record.lock.duration.ms; they become
// available (a waiting watcher is woken), their delivery count is
// written, and another member gets them.
func TestLockExpiryReleases(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newFakePersister()
		p.Initialize(context.Background(), testKey, 0, 0)
		l := testLog(t, 1, 3)
		m := newTestManager(p, map[string]string{"share.record.lock.duration.ms": "2000"})
		defer m.Close()
		tg := Target{Key: testKey, Log: l}
		if res := m.Fetch(context.Background(), tg, FetchRequest{Member: "a", MaxBytes: 1000}); len(res.Acquired) != 1 {
			t.Fatalf("fetch: %+v", res)
		}
		ch := make(chan struct{}, 1)
		defer m.Watch(testKey, ch)()
		start := time.Now()
		<-ch
		if waited := time.Since(start); waited != 2*time.Second {
			t.Fatalf("released after %v, want 2s", waited)
		}
		synctest.Wait()
		if st := p.state(testKey); len(st.Batches) != 1 || st.Batches[0].DeliveryCount != 1 || st.Batches[0].DeliveryState != sharestate.StateAvailable {
			t.Fatalf("state after expiry: %+v", st)
		}
		res := m.Fetch(context.Background(), tg, FetchRequest{Member: "b", MaxBytes: 1000})
		if want := []AcquiredRange{{0, 2, 2}}; !reflect.DeepEqual(res.Acquired, want) {
			t.Fatalf("b acquired %v, want %v", res.Acquired, want)
		}
	})
}

func TestCloseSessionReleases(t *testing.T) {
	p := newFakePersister()
	p.Initialize(context.Background(), testKey, 0, 0)
	l := testLog(t, 1, 3)
	m := newTestManager(p, nil)
	defer m.Close()
	ctx := context.Background()
	skey := SessionKey{Group: "g", Member: "a"}
	tp := TopicPartition{TopicID: testKey.TopicID}
	if sf := m.FetchSession(skey, 0, []FetchPartition{{tp, 1000}}, nil, false); sf.Code != 0 || !sf.Full {
		t.Fatalf("open: %+v", sf)
	}
	tg := Target{Key: testKey, Log: l}
	m.Fetch(ctx, tg, FetchRequest{Member: "a", MaxBytes: 1000})
	if sf := m.FetchSession(skey, FinalEpoch, nil, nil, false); sf.Code != 0 || !sf.Final {
		t.Fatalf("final: %+v", sf)
	}
	m.CloseSession(ctx, skey)
	if m.Sessions() != 0 {
		t.Fatalf("%d sessions after close", m.Sessions())
	}
	if res := m.Fetch(ctx, tg, FetchRequest{Member: "b", MaxBytes: 1000}); !reflect.DeepEqual(res.Acquired, []AcquiredRange{{0, 2, 2}}) {
		t.Fatalf("after close: %+v", res.Acquired)
	}
}

func TestReconcileDropsOnLeaderChange(t *testing.T) {
	p := newFakePersister()
	p.Initialize(context.Background(), testKey, 0, 0)
	l := testLog(t, 1, 3)
	m := newTestManager(p, nil)
	defer m.Close()
	tg := Target{Key: testKey, Log: l, LeaderEpoch: 1}
	m.Fetch(context.Background(), tg, FetchRequest{Member: "a", MaxBytes: 1000})
	m.Reconcile(func([16]byte, int32) (int32, bool) { return 1, true })
	if res := m.Fetch(context.Background(), tg, FetchRequest{Member: "b", MaxBytes: 1000}); len(res.Acquired) != 0 {
		t.Fatalf("still leading at epoch 1: b got %v of a's records", res.Acquired)
	}
	m.Reconcile(func([16]byte, int32) (int32, bool) { return 2, true })
	// Dropped: a's acquisitions are gone, the state is read again.
	if res := m.Fetch(context.Background(), Target{Key: testKey, Log: l, LeaderEpoch: 2}, FetchRequest{Member: "b", MaxBytes: 1000}); !reflect.DeepEqual(res.Acquired, []AcquiredRange{{0, 2, 1}}) {
		t.Fatalf("after the leader change: %v", res.Acquired)
	}
}

func TestParseISODuration(t *testing.T) {
	for in, want := range map[string]time.Duration{"PT1H": time.Hour, "P1D": 24 * time.Hour, "P1DT2H30M": 26*time.Hour + 30*time.Minute, "PT0.5S": 500 * time.Millisecond} {
		if got, ok := parseISODuration(in); !ok || got != want {
			t.Errorf("%s: %v %v, want %v", in, got, ok, want)
		}
	}
	for _, bad := range []string{"", "P", "1H", "PT1D", "P1H", "PTxS"} {
		if _, ok := parseISODuration(bad); ok {
			t.Errorf("%q parsed", bad)
		}
	}
}

// appendTxn appends a transactional batch of n records of producer pid.
func appendTxn(t *testing.T, l *storage.Log, pid int64, n int) {
	t.Helper()
	spec := wire.BatchSpec{BaseTimestamp: time.Now().UnixMilli(), ProducerID: pid, Transactional: true}
	for range n {
		spec.Records = append(spec.Records, wire.Record{Value: []byte("t")})
	}
	appendSpec(t, l, spec)
	l.SetHighWatermark(l.LogEndOffset())
}

// appendSpec encodes spec and appends it to l.
func appendSpec(t *testing.T, l *storage.Log, spec wire.BatchSpec) {
	t.Helper()
	b, err := wire.EncodeBatch(spec)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(b); err != nil {
		t.Fatal(err)
	}
}

func endTxn(t *testing.T, l *storage.Log, pid int64, commit bool) {
	t.Helper()
	if _, err := l.AppendControl(storage.ControlMarker{ProducerID: pid, Commit: commit}); err != nil {
		t.Fatal(err)
	}
	l.SetHighWatermark(l.LogEndOffset())
}

// TestReadCommitted: with share.isolation.level=read_committed, records of
// an aborted transaction are never delivered (archived), an open
// transaction holds back what follows it (the last stable offset), and
// control records are never delivered; with read_uncommitted the aborted
// records are delivered.
func TestReadCommitted(t *testing.T) {
	build := func() *storage.Log {
		l := testLog(t, 0, 0)
		appendTxn(t, l, 7, 2)            // 0-1 aborted
		endTxn(t, l, 7, false)           // 2
		appendBatches(t, l, 1, 2, false) // 3-4
		appendTxn(t, l, 8, 2)            // 5-6 open
		appendBatches(t, l, 1, 1, false) // 7
		return l
	}
	for _, c := range []struct {
		level string
		want  []AcquiredRange
	}{
		{"read_committed", []AcquiredRange{{3, 4, 1}}},
		{"read_uncommitted", []AcquiredRange{{0, 1, 1}, {3, 7, 1}}},
	} {
		p := newFakePersister()
		p.Initialize(context.Background(), testKey, 0, 0)
		l := build()
		m := newTestManager(p, map[string]string{"share.isolation.level": c.level})
		tg := Target{Key: testKey, Log: l}
		res := m.Fetch(context.Background(), tg, FetchRequest{Member: "a", MaxBytes: 1 << 20})
		if !reflect.DeepEqual(res.Acquired, c.want) {
			t.Errorf("%s: acquired %v, want %v", c.level, res.Acquired, c.want)
		}
		if c.level == "read_committed" {
			// The aborted records and the marker were archived and
			// written: the start offset is past them once 3-4 are
			// accepted; committing 8's transaction releases 5-7.
			if code := m.Acknowledge(context.Background(), tg, Acknowledgement{Member: "a", Batches: []AckBatch{{3, 4, []int8{AckAccept}}}}).Code; code != 0 {
				t.Fatalf("ack: %d", code)
			}
			if st := p.state(testKey); st.StartOffset != 5 {
				t.Errorf("start offset %d, want 5", st.StartOffset)
			}
			endTxn(t, l, 8, true) // 8
			res = m.Fetch(context.Background(), tg, FetchRequest{Member: "a", MaxBytes: 1 << 20})
			if want := []AcquiredRange{{5, 7, 1}}; !reflect.DeepEqual(res.Acquired, want) {
				t.Errorf("after commit: acquired %v, want %v", res.Acquired, want)
			}
		}
		m.Close()
	}
}

// TestLogStartMovesStart: records removed from the log (DeleteRecords,
// retention) leave the share-partition, whatever their state, and the new
// start offset is written.
func TestLogStartMovesStart(t *testing.T) {
	p := newFakePersister()
	p.Initialize(context.Background(), testKey, 0, 0)
	l := testLog(t, 4, 5) // 0-19
	m := newTestManager(p, nil)
	defer m.Close()
	tg := Target{Key: testKey, Log: l}
	m.Fetch(context.Background(), tg, FetchRequest{Member: "a", MaxBytes: 1 << 20, MaxRecords: 5}) // 0-4
	if _, err := l.DeleteRecordsBefore(12); err != nil {
		t.Fatal(err)
	}
	res := m.Fetch(context.Background(), tg, FetchRequest{Member: "b", MaxBytes: 1 << 20})
	if want := []AcquiredRange{{12, 19, 1}}; !reflect.DeepEqual(res.Acquired, want) {
		t.Fatalf("after DeleteRecords: acquired %v, want %v", res.Acquired, want)
	}
	if st := p.state(testKey); st.StartOffset != 12 {
		t.Fatalf("written start offset %d, want 12", st.StartOffset)
	}
	// Acknowledging what the log no longer holds (below the start
	// offset) is ignored, as Kafka 4.4.
	if code := m.Acknowledge(context.Background(), tg, Acknowledgement{Member: "a", Batches: []AckBatch{{0, 4, []int8{AckAccept}}}}).Code; code != 0 {
		t.Fatalf("ack of deleted records: %d, want 0", code)
	}
}

// TestAutoOffsetReset: the start offset a share-partition without one gets
// from share.auto.offset.reset: latest (the high watermark), earliest (the
// log start), by_duration (the first record at most that old).
func TestAutoOffsetReset(t *testing.T) {
	l := testLog(t, 0, 0)
	for _, age := range []time.Duration{3 * time.Hour, 2 * time.Hour, 10 * time.Minute} {
		spec := wire.BatchSpec{BaseTimestamp: time.Now().Add(-age).UnixMilli(), ProducerID: -1, Records: []wire.Record{{Value: []byte("x")}, {Value: []byte("y")}}}
		appendSpec(t, l, spec)
	}
	l.SetHighWatermark(l.LogEndOffset()) // 0-1 3h old, 2-3 2h, 4-5 10min
	for reset, want := range map[string]int64{"latest": 6, "earliest": 0, "by_duration:PT1H": 4, "by_duration:PT150M": 2, "by_duration:P1D": 0, "by_duration:PT1M": 6} {
		p := newFakePersister()
		p.Initialize(context.Background(), testKey, 0, -1)
		m := newTestManager(p, map[string]string{"share.auto.offset.reset": reset})
		if res := m.Fetch(context.Background(), Target{Key: testKey, Log: l}, FetchRequest{Member: "a", MaxBytes: 1 << 20}); res.Code != 0 {
			t.Fatalf("%s: %d", reset, res.Code)
		}
		if got := p.state(testKey).StartOffset; got != want {
			t.Errorf("%s: start offset %d, want %d", reset, got, want)
		}
		m.Close()
	}
}

// TestStateReadAgainAfterReset: the group coordinator may reset a
// share-partition's state (AlterShareGroupOffsets, which needs the group
// empty). The leader reads it again once the group's last member here
// closed its session, or once the share-partition went unused for
// IdleReload with nothing acquired, and never serves the old state then.
func TestStateReadAgainAfterReset(t *testing.T) {
	ctx := context.Background()
	l := testLog(t, 4, 5) // 0-19
	now := t0
	var clock sync.Mutex
	p := newFakePersister()
	p.Initialize(ctx, testKey, 0, 0)
	m := NewManager(Options{Persister: p, Now: func() time.Time { clock.Lock(); defer clock.Unlock(); return now }})
	defer m.Close()
	tg := Target{Key: testKey, Log: l}
	skey := SessionKey{Group: testKey.Group, Member: "a"}
	tp := TopicPartition{TopicID: testKey.TopicID}

	// 1. The last member's session closes; the state is reset to 10.
	m.FetchSession(skey, 0, []FetchPartition{{tp, 1 << 20}}, nil, false)
	if res := m.Fetch(ctx, tg, FetchRequest{Member: "a", MaxBytes: 1 << 20, MaxRecords: 5}); !reflect.DeepEqual(res.Acquired, []AcquiredRange{{0, 4, 1}}) {
		t.Fatalf("first fetch: %v", res.Acquired)
	}
	m.CloseSession(ctx, skey)
	p.Initialize(ctx, testKey, 1, 10)
	if res := m.Fetch(ctx, tg, FetchRequest{Member: "b", MaxBytes: 1 << 20, MaxRecords: 5}); !reflect.DeepEqual(res.Acquired, []AcquiredRange{{10, 14, 1}}) {
		t.Fatalf("after the group emptied and the reset: %v, want 10-14", res.Acquired)
	}
	if code := m.Acknowledge(ctx, tg, Acknowledgement{Member: "b", Batches: []AckBatch{{10, 14, []int8{AckAccept}}}}).Code; code != 0 {
		t.Fatalf("ack: %d", code)
	}

	// 2. No session closes (members gone without a word), but nothing is
	// acquired and it goes unused past IdleReload: reset to 2.
	p.Initialize(ctx, testKey, 2, 2)
	clock.Lock()
	now = now.Add(30 * time.Second)
	clock.Unlock()
	if res := m.Fetch(ctx, tg, FetchRequest{Member: "c", MaxBytes: 1 << 20, MaxRecords: 5}); !reflect.DeepEqual(res.Acquired, []AcquiredRange{{15, 19, 1}}) {
		t.Fatalf("30s later (cached): %v, want 15-19", res.Acquired)
	}
	// c holds 15-19: however long, the share-partition is not read again
	// while records are acquired.
	clock.Lock()
	now = now.Add(time.Hour)
	clock.Unlock()
	if code := m.Acknowledge(ctx, tg, Acknowledgement{Member: "c", Batches: []AckBatch{{15, 19, []int8{AckAccept}}}}).Code; code != kerr.FencedStateEpoch.Code {
		t.Fatalf("ack against a reset state: %d, want FENCED_STATE_EPOCH (written with the old state epoch)", code)
	}
	clock.Lock()
	now = now.Add(time.Hour)
	clock.Unlock()
	if res := m.Fetch(ctx, tg, FetchRequest{Member: "d", MaxBytes: 1 << 20, MaxRecords: 5}); !reflect.DeepEqual(res.Acquired, []AcquiredRange{{2, 9, 1}}) {
		t.Fatalf("after the reset: %v, want 2-9 (2-4 short of MaxRecords, then the next batch whole)", res.Acquired)
	}
}

// TestGroupSettingsApplyLive: a change of the group's configs applies to
// the next fetch of a share-partition already served.
func TestGroupSettingsApplyLive(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newFakePersister()
		p.Initialize(context.Background(), testKey, 0, 0)
		l := testLog(t, 2, 1) // 0, 1
		var mu sync.Mutex
		conf := map[string]string{"share.record.lock.duration.ms": "60000"}
		m := NewManager(Options{Persister: p, GroupConfig: func(string) map[string]string {
			mu.Lock()
			defer mu.Unlock()
			return maps.Clone(conf)
		}})
		defer m.Close()
		tg := Target{Key: testKey, Log: l}
		m.Fetch(context.Background(), tg, FetchRequest{Member: "a", MaxBytes: 1 << 20, MaxRecords: 1}) // 0, locked 60s
		mu.Lock()
		conf["share.record.lock.duration.ms"] = "2000"
		mu.Unlock()
		if d := m.LockDuration("g"); d != 2*time.Second {
			t.Fatalf("lock duration %v", d)
		}
		m.Fetch(context.Background(), tg, FetchRequest{Member: "a", MaxBytes: 1 << 20, MaxRecords: 1}) // 1, locked 2s
		ch := make(chan struct{}, 1)
		defer m.Watch(testKey, ch)()
		start := time.Now()
		<-ch
		if waited := time.Since(start); waited != 2*time.Second {
			t.Fatalf("first release after %v, want 2s (the new lock duration)", waited)
		}
		synctest.Wait()
		res := m.Fetch(context.Background(), tg, FetchRequest{Member: "b", MaxBytes: 1 << 20})
		if want := []AcquiredRange{{1, 1, 2}}; !reflect.DeepEqual(res.Acquired, want) {
			t.Fatalf("b acquired %v, want %v (0 still locked for a)", res.Acquired, want)
		}
	})
}
