package sharecoord

import (
	"encoding/binary"
	"log/slog"
	"testing"
	"time"

	"github.com/samsa-broker/samsa/coordinator/share"
	"github.com/samsa-broker/samsa/wire"
)

// memLog is a __share_group_state partition in memory for load tests:
// batches stamped with consecutive offsets.
type memLog struct {
	data []byte
	end  int64
}

func (l *memLog) Append(batch []byte) error {
	b := append([]byte(nil), batch...)
	binary.BigEndian.PutUint64(b, uint64(l.end)) // the base offset is outside the CRC
	h, err := wire.ParseBatchHeader(b)
	if err != nil {
		return err
	}
	l.data = append(l.data, b...)
	l.end += int64(h.LastOffsetDelta) + 1
	return nil
}

func (l *memLog) Read(offset int64, _ int, _ int64, _ bool) ([]byte, error) {
	data := l.data
	for len(data) >= wire.BatchHeaderSize {
		h, err := wire.ParseBatchHeader(data)
		if err != nil || h.TotalSize() > len(data) || h.LastOffset() >= offset {
			break
		}
		data = data[h.TotalSize():]
	}
	return data, nil
}

func (l *memLog) LogStartOffset() int64 { return 0 }
func (l *memLog) LogEndOffset() int64   { return l.end }

// loadInput hands out the fuzzer's bytes; past the end every byte is 0.
type loadInput struct{ b []byte }

func (in *loadInput) byte() byte {
	if len(in.b) == 0 {
		return 0
	}
	v := in.b[0]
	in.b = in.b[1:]
	return v
}

func (in *loadInput) n(k int) int { return int(in.byte()) % k }

func (in *loadInput) bytes(n int) []byte {
	n = min(n, len(in.b))
	out := in.b[:n]
	in.b = in.b[n:]
	return out
}

// offset is a small offset mostly, a huge or negative one now and then.
func (in *loadInput) offset() int64 {
	switch in.n(16) {
	case 0:
		return -1 - int64(in.n(3))
	case 1:
		return 1<<62 + int64(in.n(8))
	default:
		return int64(in.n(64))
	}
}

func (in *loadInput) stateBatches() []share.Batch {
	var out []share.Batch
	for range in.n(5) {
		first := in.offset()
		last := first + int64(in.n(20)) - 3 // inverted now and then
		if in.n(12) == 0 {
			last = 1<<63 - 1
		}
		st := []int8{share.StateAvailable, share.StateAcquired, share.StateAcknowledged, share.StateArchived}[in.n(4)]
		if in.n(10) == 0 {
			st = int8(in.byte()) // unknown states too
		}
		out = append(out, share.Batch{FirstOffset: first, LastOffset: last, DeliveryState: st, DeliveryCount: int16(in.n(8)) - 1})
	}
	return out
}

// updateValue encodes a ShareUpdateValue v0 as Kafka writes it.
func updateValue(u update) []byte {
	b := binary.BigEndian.AppendUint16(nil, 0)
	b = binary.BigEndian.AppendUint32(b, uint32(u.snapshotEpoch))
	b = binary.BigEndian.AppendUint32(b, uint32(u.leaderEpoch))
	b = binary.BigEndian.AppendUint64(b, uint64(u.startOffset))
	b = binary.AppendUvarint(b, uint64(len(u.batches))+1)
	for _, sb := range u.batches {
		b = binary.BigEndian.AppendUint64(b, uint64(sb.FirstOffset))
		b = binary.BigEndian.AppendUint64(b, uint64(sb.LastOffset))
		b = append(b, byte(sb.DeliveryState))
		b = binary.BigEndian.AppendUint16(b, uint16(sb.DeliveryCount))
		b = append(b, 0)
	}
	return append(b, 0)
}

// FuzzLoadPartition writes records to a __share_group_state partition,
// well-formed and damaged (snapshots and updates with inverted, negative,
// huge or overlapping batches, unknown delivery states, flipped bytes,
// torn batches, unknown record types), then loads it: the load never
// panics, and every share-partition it serves has state a partition
// leader can use (batches that are ranges of known states).
//
//	go test -run '^$' -fuzz FuzzLoadPartition -parallel 1 ./coordinator/sharecoord/
func FuzzLoadPartition(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 1, 0, 1, 2, 3, 4, 5, 6, 7, 8})
	f.Add([]byte{0, 0, 0, 3, 0, 1, 0, 2, 1, 0, 0, 2, 4, 0, 9, 5, 1, 1})
	f.Add([]byte{4, 1, 1, 2, 3, 3, 1, 200, 7, 5, 2, 3, 17, 6, 1, 0, 3})
	f.Fuzz(func(t *testing.T, data []byte) {
		in := &loadInput{b: data}
		l := &memLog{}
		now := time.Unix(1_700_000_000, 0)
		epochs := map[share.Key]int32{}
		for i := 0; len(in.b) > 0 && i < 64; i++ {
			k := testKey([]string{"g", "h"}[in.n(2)], int32(in.n(3)))
			var key, value []byte
			switch kind := in.n(7); kind {
			case 0, 1: // a snapshot
				e := &entry{st: share.State{StateEpoch: int32(in.n(4)), LeaderEpoch: int32(in.n(4)), StartOffset: in.offset(), Batches: in.stateBatches()}, deliveryComplete: int32(in.n(5)) - 1}
				epochs[k]++
				e.snapshotEpoch = epochs[k]
				key, value = recordKey(recordSnapshot, k), snapshotValue(e)
			case 2: // an update on the last snapshot (or on another epoch)
				u := update{snapshotEpoch: epochs[k] - int32(in.n(2)), leaderEpoch: int32(in.n(5)) - 1, startOffset: in.offset(), deliveryComplete: -1, batches: in.stateBatches()}
				key, value = recordKey(recordUpdate, k), updateValue(u)
			case 3: // a tombstone
				key = recordKey(recordSnapshot, k)
			case 4: // a damaged value
				e := &entry{st: share.State{StartOffset: in.offset(), Batches: in.stateBatches()}}
				key, value = recordKey([]int16{recordSnapshot, recordUpdate}[in.n(2)], k), snapshotValue(e)
				for range 1 + in.n(3) {
					value[in.n(len(value))] ^= 1 + in.byte()
				}
			case 5: // raw bytes
				key, value = in.bytes(in.n(48)), in.bytes(in.n(64))
			case 6: // a torn or damaged batch
				b, err := encodeBatch(now, []wire.Record{{Key: recordKey(recordSnapshot, k), Value: snapshotValue(&entry{st: share.State{StartOffset: in.offset()}})}})
				if err != nil {
					t.Fatal(err)
				}
				b[wire.BatchHeaderSize+in.n(len(b)-wire.BatchHeaderSize)] ^= 1 + in.byte()
				if err := l.Append(b); err != nil {
					t.Fatal(err)
				}
				continue
			}
			b, err := encodeBatch(now, []wire.Record{{Key: key, Value: value}})
			if err != nil {
				t.Fatal(err)
			}
			if err := l.Append(b); err != nil {
				t.Fatal(err)
			}
		}
		c := &Coordinator{logger: slog.New(slog.DiscardHandler)}
		s := newShard(c, 0, l)
		if err := s.load(); err != nil {
			return // a log that does not load fails the partition's load, logged
		}
		for k, e := range s.states {
			if err := validBatches(e.st.Batches); err != nil {
				t.Fatalf("%v loaded with batches a leader cannot use: %+v", k, e.st.Batches)
			}
			if err := checkLoaded(e.st.StartOffset, e.st.Batches); err != nil {
				t.Fatalf("%v loaded with state no writer makes: %v", k, err)
			}
		}
	})
}
