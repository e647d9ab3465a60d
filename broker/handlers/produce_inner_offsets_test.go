package handlers

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/storage"
	"github.com/samsa-broker/samsa/wire"
	"github.com/samsa-broker/samsa/wire/wiretest"
)

// innerBatch is three records with codec c and the given offset deltas,
// timestamps base+2, +5, -20 under a header whose base timestamp is base
// and whose max timestamp (base+100) is not the records'.
func innerBatch(t *testing.T, c wire.Compression, baseOffset, base int64, deltas [3]int32) []byte {
	t.Helper()
	var body []byte
	for i, tsd := range []int64{2, 5, -20} {
		one, err := wire.EncodeBatch(wire.BatchSpec{Records: []wire.Record{{Attributes: int8(i), TimestampDelta: tsd, OffsetDelta: deltas[i],
			Key: []byte{'k', byte('0' + i)}, Value: []byte("inner offsets")}}})
		if err != nil {
			t.Fatal(err)
		}
		body = append(body, one[wire.BatchHeaderSize:]...)
	}
	payload, err := wire.Compress(c, body)
	if err != nil {
		t.Fatal(err)
	}
	b, err := wire.EncodeBatch(wire.BatchSpec{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1, PartitionLeaderEpoch: -1,
		BaseTimestamp: base, Records: make([]wire.Record, 3)})
	if err != nil {
		t.Fatal(err)
	}
	b = append(b[:wire.BatchHeaderSize], payload...)
	binary.BigEndian.PutUint64(b[0:], uint64(baseOffset))
	binary.BigEndian.PutUint32(b[8:], uint32(len(b)-12))
	binary.BigEndian.PutUint16(b[21:], uint16(c))
	binary.BigEndian.PutUint64(b[35:], uint64(base+100))
	wire.RecomputeCRC(b)
	return b
}

// TestProduceInnerOffsetsAsKafka produces the batches Kafka 4.4 was probed
// with (compat-tests/FINDINGS.md "inner offsets") and checks samsa's answers
// and what it stores: a compressed batch kept in its codec whose offset
// deltas are not 0..n-1 is UNKNOWN_SERVER_ERROR (with the log start
// offset); an uncompressed one is stored with its deltas as sent; a base
// offset other than 0 is INVALID_RECORD; the max timestamp stored is the
// largest record timestamp; a batch rebuilt in the topic's codec has its
// records renumbered, attributes 0 and its base timestamp the first
// record's; one rebuilt over max.message.bytes is MESSAGE_TOO_LARGE.
func TestProduceInnerOffsetsAsKafka(t *testing.T) {
	e := newAdminEnv(t)
	logs := map[string]*storage.Log{}
	for _, topic := range []struct{ name, key, value string }{
		{"io-prod", "compression.type", "producer"},
		{"io-zstd", "compression.type", "zstd"},
		{"io-none", "compression.type", "uncompressed"},
		{"io-lat", "message.timestamp.type", "LogAppendTime"},
	} {
		id := e.createTopic(t, topic.name, 1, map[string]string{topic.key: topic.value})
		l, err := e.d.Logs.CreateLog(storage.TopicPartition{Topic: topic.name}, id, storage.DefaultLogConfig())
		if err != nil {
			t.Fatal(err)
		}
		logs[topic.name] = l
	}
	base := time.Now().UnixMilli()
	gz, none := wire.CompressionGzip, wire.CompressionNone
	odd, good, zero := [3]int32{0, 2, 4}, [3]int32{0, 1, 2}, [3]int32{0, 0, 0}
	big, err := wire.EncodeBatch(wire.BatchSpec{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1, PartitionLeaderEpoch: -1,
		BaseTimestamp: base, Compression: wire.CompressionZstd, Records: []wire.Record{{Key: []byte("k"), Value: make([]byte, 2<<20)}}})
	if err != nil {
		t.Fatal(err)
	}
	type stored struct {
		codec       wire.Compression
		baseTS      int64 // from base
		maxTS       int64 // from base; 1000 for log append time
		deltas      [3]int32
		firstAttrs  int8
		timestampDs [3]int64
	}
	for _, tc := range []struct {
		name, topic string
		batch       []byte
		code        int16
		lso         int64
		want        *stored
	}{
		{"gzip-odd", "io-prod", innerBatch(t, gz, 0, base, odd), kerr.UnknownServerError.Code, 0, nil},
		{"gzip-zero", "io-prod", innerBatch(t, gz, 0, base, zero), kerr.UnknownServerError.Code, 0, nil},
		{"lat-gzip-odd", "io-lat", innerBatch(t, gz, 0, base, odd), kerr.UnknownServerError.Code, 0, nil},
		{"gzip-base7", "io-prod", innerBatch(t, gz, 7, base, good), kerr.InvalidRecord.Code, 0, nil},
		{"none-base7", "io-prod", innerBatch(t, none, 7, base, good), kerr.InvalidRecord.Code, 0, nil},
		{"gzip-good", "io-prod", innerBatch(t, gz, 0, base, good), 0, 0, &stored{gz, 0, 5, good, 0, [3]int64{2, 5, -20}}},
		{"none-odd", "io-prod", innerBatch(t, none, 0, base, odd), 0, 0, &stored{none, 0, 5, odd, 0, [3]int64{2, 5, -20}}},
		{"zstd-from-gzip-odd", "io-zstd", innerBatch(t, gz, 0, base, odd), 0, 0, &stored{wire.CompressionZstd, 2, 5, good, 0, [3]int64{0, 3, -22}}},
		{"none-from-gzip-odd", "io-none", innerBatch(t, gz, 0, base, odd), 0, 0, &stored{none, 2, 5, good, 0, [3]int64{0, 3, -22}}},
		{"lat-none-odd", "io-lat", innerBatch(t, none, 0, base, odd), 0, 0, &stored{none, 0, 1000, odd, 0, [3]int64{2, 5, -20}}},
		{"none-from-zstd-2mib", "io-none", big, kerr.MessageTooLarge.Code, -1, nil},
	} {
		req := kmsg.NewPtrProduceRequest()
		req.Acks = -1
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = tc.topic
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Records = tc.batch
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		l := logs[tc.topic]
		end := l.LogEndOffset()
		p := e.call(t, req, 9).(*kmsg.ProduceResponse).Topics[0].Partitions[0]
		if p.ErrorCode != tc.code || (tc.code != 0 && p.LogStartOffset != tc.lso) {
			t.Fatalf("%s: error %d log start offset %d, want %d %d", tc.name, p.ErrorCode, p.LogStartOffset, tc.code, tc.lso)
		}
		if tc.want == nil {
			if l.LogEndOffset() != end {
				t.Fatalf("%s: refused batch appended", tc.name)
			}
			continue
		}
		b, err := l.Read(p.BaseOffset, 1<<20, l.LogEndOffset(), true)
		if err != nil {
			t.Fatal(err)
		}
		h, recs, err := wire.DecodeRecords(b)
		if err != nil {
			t.Fatalf("%s: stored batch: %v", tc.name, err)
		}
		w := tc.want
		maxTS := base + w.maxTS
		if w.maxTS == 1000 {
			maxTS = p.LogAppendTime
		}
		if h.Compression() != w.codec || h.BaseTimestamp != base+w.baseTS || h.MaxTimestamp != maxTS || h.LastOffsetDelta != 2 || len(recs) != 3 {
			t.Fatalf("%s: stored header %+v (base %d)", tc.name, h, base)
		}
		for i, r := range recs {
			if r.OffsetDelta != w.deltas[i] || r.TimestampDelta != w.timestampDs[i] || string(r.Key) != string([]byte{'k', byte('0' + i)}) ||
				(i == 1 && r.Attributes != map[bool]int8{true: 1, false: 0}[w.baseTS == 0]) {
				t.Fatalf("%s: stored record %d: %+v", tc.name, i, r)
			}
		}
	}
}

// TestProduceZipBombRecompressed produces the 512 MiB zstd bomb of
// TestProduceZipBomb to topics whose compression.type is gzip and lz4:
// Kafka 4.4 rebuilds it in the topic's codec; samsa streams the records
// from the zstd decoder into the compressor, so the produce allocates the
// window, the codecs' state and the (small) output, not the value.
func TestProduceZipBombRecompressed(t *testing.T) {
	size := wiretest.BombSize()
	e := newAdminEnv(t)
	for _, c := range []string{"gzip", "lz4", "snappy"} {
		id := e.createTopic(t, "bomb-"+c, 1, map[string]string{"compression.type": c, "max.message.bytes": "67108864"})
		if _, err := e.d.Logs.CreateLog(storage.TopicPartition{Topic: "bomb-" + c}, id, storage.DefaultLogConfig()); err != nil {
			t.Fatal(err)
		}
	}
	batch := zstdBomb(t, size, true, time.Now().UnixMilli())
	for _, c := range []string{"gzip", "lz4", "snappy"} {
		p, alloc := produceAllocs(t, e, "bomb-"+c, append([]byte(nil), batch...))
		t.Logf("%s: %d-byte zstd batch of %d MiB decompressed, rebuilt in %s: error %d, %d KiB allocated by the produce", "bomb-"+c, len(batch), size>>20, c, p.ErrorCode, alloc>>10)
		if p.ErrorCode != 0 {
			t.Fatalf("%s: error %d", c, p.ErrorCode)
		}
		// The request's copies, the windows, the codecs' state (a zstd
		// window of 8 MiB), the output: gathered in chunks, then
		// copied into the batch stored (snappy's is about 1/21 of
		// the value, 24 MiB at 512 MiB; the others' under 2 MiB).
		bound := uint64(32 << 20)
		if c == "snappy" {
			bound += 2 * uint64(size) / 20
		}
		if !raceEnabled && alloc > bound {
			t.Fatalf("%s: the produce allocated %d bytes for a batch of %d decompressed, want <= %d", c, alloc, size, bound)
		}
	}
}
