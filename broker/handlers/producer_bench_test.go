package handlers

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/samsa-broker/samsa/storage"
	"github.com/samsa-broker/samsa/storage/vfs"
	"github.com/samsa-broker/samsa/wire"
)

// BenchmarkAppendIdempotent measures the produce path of an idempotent
// producer: the sequence check and the append of a 5-record batch (no
// fsync, in-memory files).
func BenchmarkAppendIdempotent(b *testing.B) {
	l, err := storage.OpenLog(storage.LogOptions{FS: vfs.NewMem(), Dir: "/p-0", Config: storage.DefaultLogConfig(), RecoveryPoint: -1, LogStartOffset: -1})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	idem := NewIdempotence(nil)
	tp := storage.TopicPartition{Topic: "p", Partition: 0}
	recs := make([]wire.Record, 5)
	for i := range recs {
		recs[i] = wire.Record{Value: make([]byte, 100)}
	}
	batch, err := wire.EncodeBatch(wire.BatchSpec{BaseTimestamp: 1_700_000_000_000, ProducerID: 11, ProducerEpoch: 0, Records: recs})
	if err != nil {
		b.Fatal(err)
	}
	now := time.UnixMilli(1_700_000_000_000)
	doAppend := func() (storage.AppendInfo, error) { return l.Append(batch) }
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		binary.BigEndian.PutUint32(batch[53:], uint32(i*5)) // base sequence
		wire.RecomputeCRC(batch)
		h, _ := wire.ParseBatchHeader(batch)
		if r := idem.appendIdempotent(tp, l, h, now, nil, doAppend); r.code != 0 || r.err != nil || r.duplicate != nil {
			b.Fatalf("append %d: %+v", i, r)
		}
	}
}

// BenchmarkFirstIdempotentProduceAfterRestart measures reopening a
// partition log of about 30 MB (1 MB segments, recovery point at the log
// end as the checkpoint gives it) after a clean close, and the first
// idempotent produce to it: the latency a restart adds to that produce.
func BenchmarkFirstIdempotentProduceAfterRestart(b *testing.B) {
	fsys := vfs.NewMem()
	cfg := storage.DefaultLogConfig()
	cfg.SegmentBytes = 1 << 20
	open := func(rp int64) *storage.Log {
		l, err := storage.OpenLog(storage.LogOptions{FS: fsys, Dir: "/p-0", Config: cfg, RecoveryPoint: rp, LogStartOffset: -1})
		if err != nil {
			b.Fatal(err)
		}
		return l
	}
	recs := make([]wire.Record, 5)
	for i := range recs {
		recs[i] = wire.Record{Value: make([]byte, 100)}
	}
	batch, err := wire.EncodeBatch(wire.BatchSpec{BaseTimestamp: 1_700_000_000_000, ProducerID: 11, Records: recs})
	if err != nil {
		b.Fatal(err)
	}
	l := open(-1)
	seq := int32(0)
	for l.Size() < 30<<20 {
		binary.BigEndian.PutUint32(batch[53:], uint32(seq))
		wire.RecomputeCRC(batch)
		if _, err := l.Append(batch); err != nil {
			b.Fatal(err)
		}
		seq += 5
	}
	leo := l.LogEndOffset()
	if err := l.Close(); err != nil {
		b.Fatal(err)
	}
	tp := storage.TopicPartition{Topic: "p", Partition: 0}
	now := time.UnixMilli(1_700_000_000_000)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		l := open(leo)
		idem := NewIdempotence(nil)
		binary.BigEndian.PutUint32(batch[53:], uint32(seq-5)) // a retry of the last batch
		wire.RecomputeCRC(batch)
		h, _ := wire.ParseBatchHeader(batch)
		if r := idem.appendIdempotent(tp, l, h, now, nil, func() (storage.AppendInfo, error) { return l.Append(batch) }); r.duplicate == nil {
			b.Fatalf("retry not a duplicate: %+v", r)
		}
		if err := l.Close(); err != nil {
			b.Fatal(err)
		}
	}
}
