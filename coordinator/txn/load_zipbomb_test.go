package txn

import (
	"fmt"
	"testing"

	"github.com/samsa-broker/samsa/wire/wiretest"
)

// TestLoadZipBomb loads a __transaction_state partition holding a zstd
// batch of a few KB (Kafka lets a client whose id is __admin_client
// produce one there) whose first record's value, a transaction in state
// Empty, is followed by 512 MiB of zeros, and a second record a small
// transaction. The load decompressed the batch whole (over 1 GB
// allocated); it now streams the records, each value cut at
// shards.LoadFieldMax: a bounded allocation. The big record decodes from
// its first bytes as Kafka 4.4 decodes it (its serde reads the fields and
// ignores the bytes after them); the transaction written before the batch
// and both in it load.
func TestLoadZipBomb(t *testing.T) {
	size := wiretest.BombSize()
	e := newEnv(t)
	p := e.c.PartitionFor("before")
	pid, epoch := e.init("before", 60_000)
	e.c.Close()
	var ids []string
	for i := 0; len(ids) < 2; i++ {
		if id := fmt.Sprintf("bomb-%d", i); e.c.PartitionFor(id) == p {
			ids = append(ids, id)
		}
	}
	meta := func(id string, producerID int64) *txnMeta {
		return &txnMeta{id: id, producerID: producerID, prevProducerID: -1, nextProducerID: -1, epoch: 3, lastEpoch: -1,
			timeoutMs: 60_000, state: Empty, startMs: -1, updateMs: testClockStart.UnixMilli()}
	}
	batch := wiretest.ZstdBomb(t, testClockStart.UnixMilli(),
		wiretest.BombRecord{Key: txnKey(ids[0]), Value: logValue(meta(ids[0], 5000)), Zeros: size},
		wiretest.BombRecord{Key: txnKey(ids[1]), Value: logValue(meta(ids[1], 5001))},
	)
	if err := e.logs[p].Append(batch); err != nil {
		t.Fatal(err)
	}
	alloc := wiretest.Allocated(e.start)
	t.Logf("load of a %d-byte batch of %d MiB decompressed: %d KiB allocated", len(batch), size>>20, alloc>>10)
	// The cut value twice (the walk's buffer and the record's copy), a
	// zstd window of 8 MiB, the stream's window.
	if bound := uint64(48 << 20); !wiretest.RaceEnabled && alloc > bound {
		t.Fatalf("the load allocated %d bytes for a record of %d bytes, want <= %d", alloc, size, bound)
	}
	if m, _ := e.meta("before"); m == nil || m.producerID != pid || m.epoch != epoch {
		t.Fatalf("before: %+v, want producer %d epoch %d", m, pid, epoch)
	}
	for i, id := range ids {
		if m, _ := e.meta(id); m == nil || m.producerID != 5000+int64(i) || m.epoch != 3 || m.state != Empty {
			t.Fatalf("%s: %+v, want producer %d epoch 3, Empty", id, m, 5000+i)
		}
	}
}
