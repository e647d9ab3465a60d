package handlers

import (
	"bytes"
	"encoding/binary"
	"runtime"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/storage"
	"github.com/samsa-broker/samsa/wire"
)

// zstdBomb returns a zstd batch of one record (keyed or not) whose value
// is size zero bytes, compressed as it is written (never held whole), with
// base timestamp ts.
func zstdBomb(t *testing.T, size int, keyed bool, ts int64) []byte {
	t.Helper()
	var body bytes.Buffer
	w, err := zstd.NewWriter(&body, zstd.WithEncoderConcurrency(1))
	if err != nil {
		t.Fatal(err)
	}
	var fields []byte
	fields = append(fields, 0)              // attributes
	fields = binary.AppendVarint(fields, 0) // timestamp delta
	fields = binary.AppendVarint(fields, 0) // offset delta
	if keyed {
		fields = binary.AppendVarint(fields, 1) // key length
		fields = append(fields, 'k')            // key
	} else {
		fields = binary.AppendVarint(fields, -1) // null key
	}
	fields = binary.AppendVarint(fields, int64(size))
	rec := binary.AppendVarint(nil, int64(len(fields)+size+1))
	rec = append(rec, fields...)
	if _, err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	zeros := make([]byte, 64<<10)
	for left := size; left > 0; left -= len(zeros) {
		if _, err := w.Write(zeros[:min(left, len(zeros))]); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := w.Write([]byte{0}); err != nil { // no headers
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	// A batch of one (any) record for the header, its body replaced.
	b, err := wire.EncodeBatch(wire.BatchSpec{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1, PartitionLeaderEpoch: -1,
		BaseTimestamp: ts, Compression: wire.CompressionZstd, Records: []wire.Record{{Key: []byte("k")}}})
	if err != nil {
		t.Fatal(err)
	}
	b = append(b[:wire.BatchHeaderSize], body.Bytes()...)
	binary.BigEndian.PutUint32(b[8:], uint32(len(b)-12)) // batch length
	wire.RecomputeCRC(b)
	return b
}

// TestProduceZipBomb produces a 60 KB zstd batch whose one record holds a
// 512 MiB value: Kafka 4.4 takes it (it streams the records through a
// block buffer when it validates them); samsa must take it too, with a
// produce that allocates a bounded amount, not the decompressed size, on a
// topic that keeps the producer's codec, with CreateTime or LogAppendTime,
// and on a compacted one (whose keys are checked); and refuse it, as
// cheaply, without a key on the compacted topic (INVALID_RECORD) and with
// a timestamp a day ahead (INVALID_TIMESTAMP), each checked on the records.
func TestProduceZipBomb(t *testing.T) {
	size := 512 << 20
	if raceEnabled || testing.Short() {
		size = 48 << 20
	}
	e := newAdminEnv(t)
	for _, topic := range []struct{ name, key, value string }{
		{"bomb", "message.timestamp.type", "CreateTime"},
		{"bomb-lat", "message.timestamp.type", "LogAppendTime"},
		{"bomb-compact", "cleanup.policy", "compact"},
	} {
		id := e.createTopic(t, topic.name, 1, map[string]string{topic.key: topic.value})
		if _, err := e.d.Logs.CreateLog(storage.TopicPartition{Topic: topic.name}, id, storage.DefaultLogConfig()); err != nil {
			t.Fatal(err)
		}
	}
	now := time.Now().UnixMilli()
	keyed := zstdBomb(t, size, true, now)
	for _, tc := range []struct {
		topic string
		batch []byte
		want  int16
	}{
		{"bomb", keyed, 0},
		{"bomb-lat", keyed, 0},
		{"bomb-compact", keyed, 0},
		{"bomb-compact", zstdBomb(t, size, false, now), kerr.InvalidRecord.Code},
		{"bomb", zstdBomb(t, size, true, now+24*3600*1000), kerr.InvalidTimestamp.Code},
	} {
		p, alloc := produceAllocs(t, e, tc.topic, tc.batch)
		t.Logf("%s: %d-byte batch of %d MiB decompressed: error %d, %d KiB allocated by the produce", tc.topic, len(tc.batch), size>>20, p.ErrorCode, alloc>>10)
		if p.ErrorCode != tc.want {
			t.Fatalf("%s: error %d, want %d", tc.topic, p.ErrorCode, tc.want)
		}
		// The request's copies, the walk's window, a zstd window (8
		// MiB as klauspost's encoder writes it), the append.
		if bound := uint64(32 << 20); !raceEnabled && alloc > bound {
			t.Fatalf("%s: the produce allocated %d bytes for a batch of %d decompressed, want <= %d", tc.topic, alloc, size, bound)
		}
	}
}

// produceAllocs produces records to partition 0 of topic (Produce v9,
// acks=all) and returns the partition's answer with the bytes the call
// allocated.
func produceAllocs(t *testing.T, e *adminEnv, topic string, records []byte) (kmsg.ProduceResponseTopicPartition, uint64) {
	t.Helper()
	req := kmsg.NewPtrProduceRequest()
	req.Acks = -1
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = records
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	resp := e.call(t, req, 9).(*kmsg.ProduceResponse)
	runtime.ReadMemStats(&after)
	return resp.Topics[0].Partitions[0], after.TotalAlloc - before.TotalAlloc
}
