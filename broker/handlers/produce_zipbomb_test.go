package handlers

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/storage"
	"github.com/samsa-broker/samsa/wire/wiretest"
)

// zstdBomb returns a zstd batch of one record (keyed or not) whose value
// is size zero bytes, compressed as it is written (never held whole), with
// base timestamp ts.
func zstdBomb(t *testing.T, size int, keyed bool, ts int64) []byte {
	t.Helper()
	r := wiretest.BombRecord{Zeros: size}
	if keyed {
		r.Key = []byte("k")
	}
	return wiretest.ZstdBomb(t, ts, r)
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
	size := wiretest.BombSize()
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
	var resp *kmsg.ProduceResponse
	alloc := wiretest.Allocated(func() { resp = e.call(t, req, 9).(*kmsg.ProduceResponse) })
	return resp.Topics[0].Partitions[0], alloc
}
