package handlers

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/samsa-broker/samsa/storage"
	"github.com/samsa-broker/samsa/storage/vfs"
	"github.com/samsa-broker/samsa/wire"
)

// TestIdempotentDedupAcrossLogReopen: after the partition's log is closed
// (or crashes) and is opened again from the same files, with a fresh
// Idempotence as after a broker restart, a retry of a batch written before
// the restart is still a duplicate answered with its original offset, an
// older retry within the window too, and a gap is
// OUT_OF_ORDER_SEQUENCE_NUMBER. The state comes from the log's snapshots;
// small segments make it span several.
func TestIdempotentDedupAcrossLogReopen(t *testing.T) {
	for _, crash := range []bool{false, true} {
		t.Run(fmt.Sprintf("crash=%v", crash), func(t *testing.T) {
			fsys := vfs.NewMem()
			cfg := storage.DefaultLogConfig()
			cfg.SegmentBytes = 1024
			cfg.FlushIntervalMessages = 1
			open := func(fs vfs.FS) *storage.Log {
				l, err := storage.OpenLog(storage.LogOptions{FS: fs, Dir: "/t-0", Config: cfg, RecoveryPoint: -1, LogStartOffset: -1})
				if err != nil {
					t.Fatal(err)
				}
				return l
			}
			tp := storage.TopicPartition{Topic: "t", Partition: 0}
			now := time.UnixMilli(1_700_000_000_000)
			batch := func(pid int64, seq int32) []byte {
				recs := []wire.Record{{Value: make([]byte, 60)}, {Value: make([]byte, 60)}}
				b, err := wire.EncodeBatch(wire.BatchSpec{ProducerID: pid, ProducerEpoch: 2, BaseSequence: seq, BaseTimestamp: now.UnixMilli(), Records: recs})
				if err != nil {
					t.Fatal(err)
				}
				return b
			}
			send := func(idem *Idempotence, l *storage.Log, pid int64, seq int32) idempotentAppend {
				b := batch(pid, seq)
				h, _ := wire.ParseBatchHeader(b)
				return idem.appendIdempotent(tp, l, h, now, nil, func() (storage.AppendInfo, error) { return l.Append(b) })
			}

			l := open(fsys)
			idem := NewIdempotence(nil)
			offsets := map[int32]int64{}
			for i := int32(0); i < 40; i++ {
				r := send(idem, l, 5, 2*i)
				if r.code != 0 || r.err != nil || r.duplicate != nil {
					t.Fatalf("append seq %d: %+v", 2*i, r)
				}
				offsets[2*i] = r.info.FirstOffset
				if r := send(idem, l, 6, 2*i); r.code != 0 || r.err != nil { // a second producer in between
					t.Fatalf("producer 6 seq %d: %+v", 2*i, r)
				}
			}
			if segs := l.Size() / cfg.SegmentBytes; segs < 3 {
				t.Fatalf("log of %d bytes spans fewer than 3 segments", l.Size())
			}
			fs := vfs.FS(fsys)
			if crash {
				fs = fsys.CrashClone() // kill -9: no snapshot at close
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			l = open(fs)
			defer l.Close()
			idem = NewIdempotence(nil)

			if r := send(idem, l, 5, 78); r.duplicate == nil || r.duplicate.FirstOffset != offsets[78] {
				t.Fatalf("retry of the last batch after restart: %+v, want duplicate at %d", r, offsets[78])
			}
			if r := send(idem, l, 5, 72); r.duplicate == nil || r.duplicate.FirstOffset != offsets[72] {
				t.Fatalf("retry of an older batch in the window: %+v, want duplicate at %d", r, offsets[72])
			}
			if r := send(idem, l, 5, 83); r.code != kerr.OutOfOrderSequenceNumber.Code {
				t.Fatalf("gap after restart: %+v, want OUT_OF_ORDER_SEQUENCE_NUMBER", r)
			}
			if r := send(idem, l, 5, 80); r.code != 0 || r.duplicate != nil || r.err != nil {
				t.Fatalf("next batch after restart: %+v", r)
			}
			leo := l.LogEndOffset()
			if r := send(idem, l, 5, 80); r.duplicate == nil || l.LogEndOffset() != leo {
				t.Fatalf("retry of the batch after restart: %+v (log end %d, was %d)", r, l.LogEndOffset(), leo)
			}
		})
	}
}
