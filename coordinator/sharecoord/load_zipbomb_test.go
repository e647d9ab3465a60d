package sharecoord

import (
	"testing"
	"time"

	"github.com/samsa-broker/samsa/coordinator/share"
	"github.com/samsa-broker/samsa/storage/vfs"
	"github.com/samsa-broker/samsa/wire/wiretest"
)

// TestLoadZipBomb loads a __share_group_state partition holding a zstd
// batch of a few KB (Kafka lets a client whose id is __admin_client
// produce one there) whose first record, a share-partition's snapshot, is
// followed by 512 MiB of zeros, and a second record a small snapshot. The
// load decompressed the batch whole (over 1 GB allocated); it now streams
// the records, each value cut at shards.LoadFieldMax: a bounded
// allocation. The big snapshot decodes from its first bytes as Kafka 4.4
// decodes it (its serde reads the fields and ignores the bytes after
// them); the state written before the batch and both snapshots load.
func TestLoadZipBomb(t *testing.T) {
	size := wiretest.BombSize()
	fs := vfs.NewMem()
	ls := testLogs(t, fs, 1, false)
	c := startCoordinator(t, ls)
	before, big, small := testKey("before", 0), testKey("big", 1), testKey("small", 2)
	wantErr(t, "Initialize", c.Initialize(t.Context(), before, 0, 3), nil)
	c.Close()

	snapshot := func(start int64) []byte {
		return snapshotValue(&entry{st: share.State{StateEpoch: 1, StartOffset: start, Batches: []share.Batch{
			{FirstOffset: start, LastOffset: start + 4, DeliveryState: share.StateAcknowledged, DeliveryCount: 1}}}, deliveryComplete: -1})
	}
	now := time.Now().UnixMilli()
	batch := wiretest.ZstdBomb(t, now,
		wiretest.BombRecord{Key: recordKey(recordSnapshot, big), Value: snapshot(50), Zeros: size},
		wiretest.BombRecord{Key: recordKey(recordSnapshot, small), Value: snapshot(70)},
	)
	if _, err := ls[0].Append(batch); err != nil {
		t.Fatal(err)
	}
	ls[0].SetHighWatermark(ls[0].LogEndOffset())

	var c2 *Coordinator
	alloc := wiretest.Allocated(func() { c2 = startCoordinator(t, ls) })
	defer c2.Close()
	t.Logf("load of a %d-byte batch of %d MiB decompressed: %d KiB allocated", len(batch), size>>20, alloc>>10)
	// The cut value twice (the walk's buffer and the record's copy), a
	// zstd window of 8 MiB, the stream's window, the read.
	if bound := uint64(48 << 20); !wiretest.RaceEnabled && alloc > bound {
		t.Fatalf("the load allocated %d bytes for a record of %d bytes, want <= %d", alloc, size, bound)
	}
	for _, want := range []struct {
		k     share.Key
		start int64
	}{{before, 3}, {big, 50}, {small, 70}} {
		st, ok, err := c2.ReadSummary(t.Context(), want.k)
		if err != nil || !ok || st.StartOffset != want.start {
			t.Fatalf("%s: %+v %v %v, want start offset %d", CoordinatorKey(want.k), st, ok, err, want.start)
		}
	}
}
