package sharecoord

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/samsa-broker/samsa/coordinator"
	"github.com/samsa-broker/samsa/coordinator/share"
	"github.com/samsa-broker/samsa/storage"
	"github.com/samsa-broker/samsa/storage/vfs"
	"github.com/samsa-broker/samsa/wire"
)

// testLogs opens n __share_group_state partitions on fs.
func testLogs(t *testing.T, fs vfs.FS, n int32, compact bool) map[int32]*storage.Log {
	t.Helper()
	cfg := storage.DefaultLogConfig()
	if compact {
		cfg.SegmentBytes = 4096
		cfg.Compact, cfg.Delete = true, false
	}
	out := map[int32]*storage.Log{}
	for p := range n {
		l, err := storage.OpenLog(storage.LogOptions{FS: fs, Dir: fmt.Sprintf("/data/%s-%d", share.StateTopic, p), Config: cfg})
		if err != nil {
			t.Fatal(err)
		}
		l.SetHighWatermark(l.LogEndOffset())
		out[p] = l
	}
	return out
}

func closeLogs(t *testing.T, ls map[int32]*storage.Log) {
	t.Helper()
	for _, l := range ls {
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// startCoordinator loads every partition of ls and waits for the loads.
func startCoordinator(t *testing.T, ls map[int32]*storage.Log) *Coordinator {
	t.Helper()
	c, err := New(Options{
		NumPartitions: int32(len(ls)),
		Log: func(p int32) (coordinator.Log, bool) {
			l, ok := ls[p]
			if !ok {
				return nil, false
			}
			return coordinator.StorageLog(l), true
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.LoadAll(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if err := c.WaitLoaded(ctx); err != nil {
		t.Fatal(err)
	}
	return c
}

func testKey(g string, p int32) share.Key {
	k := share.Key{Group: g, Partition: p}
	copy(k.TopicID[:], "topic-id-0123456")
	return k
}

func wantErr(t *testing.T, what string, err, want error) {
	t.Helper()
	if want == nil && err != nil || want != nil && !errors.Is(err, want) {
		t.Fatalf("%s: got error %v, want %v", what, err, want)
	}
}

func TestCoordinatorKeyRoundTrip(t *testing.T) {
	k := testKey("my:group", 7)
	s := CoordinatorKey(k)
	got, err := ParseCoordinatorKey(s)
	if err != nil || got != k {
		t.Fatalf("ParseCoordinatorKey(%q) = %+v, %v; want %+v", s, got, err, k)
	}
	for _, bad := range []string{"", "a:b", " :AAAAAAAAAAAAAAAAAAAAAA:1", "g:notbase64!:1", "g:AAAAAAAAAAAAAAAAAAAAAA:x"} {
		if _, err := ParseCoordinatorKey(bad); !errors.Is(err, ErrKey) {
			t.Errorf("ParseCoordinatorKey(%q): %v, want ErrKey", bad, err)
		}
	}
}

// TestPartitionForMatchesKafka pins the hash against values computed with
// Kafka 4.4's SharePartitionKey.asCoordinatorKey().hashCode().
func TestPartitionForMatchesKafka(t *testing.T) {
	var k share.Key
	k.Group, k.Partition = "g1", 0
	// Uuid AAAAAAAAAAAAAAAAAAAAAQ (most 0, least 1).
	k.TopicID[15] = 1
	if got, want := CoordinatorKey(k), "g1:AAAAAAAAAAAAAAAAAAAAAQ:0"; got != want {
		t.Fatalf("CoordinatorKey = %q, want %q", got, want)
	}
	if got, want := PartitionFor(k, 50), coordinator.PartitionFor("g1:AAAAAAAAAAAAAAAAAAAAAQ:0", 50); got != want {
		t.Fatalf("PartitionFor = %d, want %d", got, want)
	}
}

func TestInitializeReadWriteDelete(t *testing.T) {
	ls := testLogs(t, vfs.NewMem(), 3, false)
	defer closeLogs(t, ls)
	c := startCoordinator(t, ls)
	defer c.Close()
	ctx := t.Context()
	k := testKey("g", 0)

	if _, ok, err := c.Read(ctx, k, 0); ok || err != nil {
		t.Fatalf("Read before Initialize: ok %v err %v", ok, err)
	}
	wantErr(t, "Write before Initialize", c.Write(ctx, k, share.State{StartOffset: 0}), kerr.InvalidRequest)
	wantErr(t, "Initialize", c.Initialize(ctx, k, 1, -1), nil)
	st, ok, err := c.Read(ctx, k, 3)
	if !ok || err != nil || st.StateEpoch != 1 || st.StartOffset != -1 || st.LeaderEpoch != 3 {
		t.Fatalf("Read after Initialize: %+v %v %v", st, ok, err)
	}
	want := share.State{StateEpoch: 1, LeaderEpoch: 3, StartOffset: 10, Batches: []share.Batch{
		{FirstOffset: 10, LastOffset: 12, DeliveryState: share.StateAcknowledged, DeliveryCount: 1},
		{FirstOffset: 13, LastOffset: 13, DeliveryState: share.StateAcquired, DeliveryCount: 2},
	}}
	wantErr(t, "Write", c.Write(ctx, k, want), nil)
	want.Batches[1].DeliveryState = share.StateAvailable // Acquired is durable as Available
	if st, ok, err := c.Read(ctx, k, 3); !ok || err != nil || !reflect.DeepEqual(st, want) {
		t.Fatalf("Read after Write = %+v %v %v, want %+v", st, ok, err, want)
	}

	// Fencing: an older leader epoch or state epoch is refused.
	old := want
	old.LeaderEpoch = 2
	wantErr(t, "Write from an older leader", c.Write(ctx, k, old), kerr.FencedLeaderEpoch)
	_, _, err = c.Read(ctx, k, 2)
	wantErr(t, "Read from an older leader", err, kerr.FencedLeaderEpoch)
	wantErr(t, "Initialize with an older state epoch", c.Initialize(ctx, k, 0, 5), kerr.FencedStateEpoch)
	wantErr(t, "re-Initialize", c.Initialize(ctx, k, 2, 20), nil)
	wantErr(t, "Write of the old state epoch", c.Write(ctx, k, want), kerr.FencedStateEpoch)

	sum, ok, err := c.Summary(ctx, k)
	if !ok || err != nil || sum.StateEpoch != 2 || sum.StartOffset != 20 || sum.LeaderEpoch != 0 || sum.DeliveryCompleteCount != 0 || len(sum.Batches) != 0 {
		t.Fatalf("Summary after re-Initialize: %+v %v %v", sum, ok, err)
	}
	wantErr(t, "Delete", c.Delete(ctx, k), nil)
	wantErr(t, "Delete again", c.Delete(ctx, k), nil)
	if _, ok, err := c.ReadSummary(ctx, k); ok || err != nil {
		t.Fatalf("ReadSummary after Delete: ok %v err %v", ok, err)
	}
	wantErr(t, "Read with a negative leader epoch", func() error { _, _, err := c.Read(ctx, k, -1); return err }(), kerr.InvalidRequest)
	wantErr(t, "negative partition", c.Initialize(ctx, testKey("g", -1), 0, 0), kerr.InvalidRequest)
}

// TestWriteMergesOverlappingBatches: a leader's overlapping batches are
// merged, the later one winning, and what lies below the start offset
// goes.
func TestWriteMergesOverlappingBatches(t *testing.T) {
	ls := testLogs(t, vfs.NewMem(), 1, false)
	defer closeLogs(t, ls)
	c := startCoordinator(t, ls)
	defer c.Close()
	ctx := t.Context()
	k := testKey("g", 1)
	wantErr(t, "Initialize", c.Initialize(ctx, k, 0, 0), nil)
	wantErr(t, "Write", c.Write(ctx, k, share.State{StartOffset: 5, Batches: []share.Batch{
		{FirstOffset: 0, LastOffset: 9, DeliveryState: share.StateAvailable, DeliveryCount: 1},
		{FirstOffset: 7, LastOffset: 8, DeliveryState: share.StateArchived, DeliveryCount: 5},
	}}), nil)
	st, _, err := c.Read(ctx, k, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := []share.Batch{
		{FirstOffset: 5, LastOffset: 6, DeliveryState: share.StateAvailable, DeliveryCount: 1},
		{FirstOffset: 7, LastOffset: 8, DeliveryState: share.StateArchived, DeliveryCount: 5},
		{FirstOffset: 9, LastOffset: 9, DeliveryState: share.StateAvailable, DeliveryCount: 1},
	}
	if !reflect.DeepEqual(st.Batches, want) {
		t.Fatalf("batches %+v, want %+v", st.Batches, want)
	}
	wantErr(t, "bad state", c.Write(ctx, k, share.State{StartOffset: 5, Batches: []share.Batch{{FirstOffset: 5, LastOffset: 5, DeliveryState: 3}}}), kerr.InvalidRequest)
}

// stateOf reads every key's summary and full state as a string.
func stateOf(t *testing.T, c *Coordinator, keys []share.Key) string {
	t.Helper()
	out := ""
	for _, k := range keys {
		sum, ok, err := c.Summary(t.Context(), k)
		if err != nil {
			t.Fatal(err)
		}
		out += fmt.Sprintf("%s ok=%v %+v\n", CoordinatorKey(k), ok, sum)
	}
	return out
}

// TestReloadAndCompaction: state written, the coordinator closed and
// loaded again from the log, from the log compacted too: each is the
// same, and compaction keeps one record per live share-partition.
func TestReloadAndCompaction(t *testing.T) {
	fs := vfs.NewMem()
	ls := testLogs(t, fs, 2, true)
	c := startCoordinator(t, ls)
	ctx := t.Context()
	var keys []share.Key
	for g := range 6 {
		keys = append(keys, testKey(fmt.Sprintf("g%d", g), int32(g%3)))
	}
	for _, k := range keys {
		wantErr(t, "Initialize", c.Initialize(ctx, k, 0, 0), nil)
	}
	for i := range 300 {
		k := keys[i%len(keys)]
		st := share.State{LeaderEpoch: int32(i / 50), StartOffset: int64(i), Batches: []share.Batch{
			{FirstOffset: int64(i), LastOffset: int64(i + 3), DeliveryState: share.StateAcknowledged, DeliveryCount: int16(i % 5)},
		}}
		wantErr(t, fmt.Sprint("Write ", i), c.WriteState(ctx, k, st, int32(i)), nil)
	}
	wantErr(t, "Delete", c.Delete(ctx, keys[5]), nil)
	want := stateOf(t, c, keys)
	c.Close()
	closeLogs(t, ls)

	ls = testLogs(t, fs, 2, true)
	c = startCoordinator(t, ls)
	if got := stateOf(t, c, keys); got != want {
		t.Fatalf("state after reload:\n%s\nwant:\n%s", got, want)
	}
	c.Close()
	closeLogs(t, ls)

	compacted := fs.Clone()
	cls := testLogs(t, compacted, 2, true)
	records := 0
	for p, l := range cls {
		if err := l.Roll(); err != nil {
			t.Fatal(err)
		}
		size := l.Size()
		if _, ok, err := l.Clean(context.Background(), time.Now(), storage.CleanOptions{Force: true}); err != nil || !ok {
			t.Fatalf("clean partition %d: %v %v", p, ok, err)
		}
		if l.Size() >= size {
			t.Fatalf("partition %d: clean did not shrink the log (%d -> %d)", p, size, l.Size())
		}
		records += countRecords(t, l)
	}
	c = startCoordinator(t, cls)
	if got := stateOf(t, c, keys); got != want {
		t.Fatalf("state loaded from the compacted log:\n%s\nwant:\n%s", got, want)
	}
	c.Close()
	closeLogs(t, cls)
	// Five live share-partitions keep their last snapshot; the deleted
	// one's tombstones may stay until delete.retention.ms.
	if records < 5 || records > 7 {
		t.Fatalf("compacted logs hold %d records, want 5 snapshots (+2 tombstones)", records)
	}
}

func countRecords(t *testing.T, l *storage.Log) int {
	t.Helper()
	n := 0
	for off := l.LogStartOffset(); off < l.LogEndOffset(); {
		data, err := l.Read(off, 1<<20, l.LogEndOffset(), true)
		if err != nil {
			t.Fatal(err)
		}
		if len(data) == 0 {
			break
		}
		for len(data) > 0 {
			h, recs, err := decodeFirst(data)
			if err != nil {
				t.Fatal(err)
			}
			n += recs
			off = h + 1
			data = data[batchSize(data):]
		}
	}
	return n
}

// decodeFirst returns the last offset and record count of data's first
// batch.
func decodeFirst(data []byte) (int64, int, error) {
	h, recs, err := wire.DecodeRecords(data[:batchSize(data)])
	if err != nil {
		return 0, 0, err
	}
	return h.LastOffset(), len(recs), nil
}

func batchSize(data []byte) int {
	h, err := wire.ParseBatchHeader(data)
	if err != nil {
		return len(data)
	}
	return h.TotalSize()
}
