package sharecoord

import (
	"cmp"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/samsa-broker/samsa/coordinator"
	"github.com/samsa-broker/samsa/coordinator/share"
	"github.com/samsa-broker/samsa/wire"
)

// Record types of __share_group_state, the int16 that opens every key (the
// "apiKey" of Kafka's ShareSnapshotKey and ShareUpdateKey): compaction
// keeps the last record of each (type, share-partition).
const (
	recordSnapshot int16 = 0
	recordUpdate   int16 = 1
)

// CoordinatorKey is the FindCoordinator key (key type 2, SHARE) and the
// hashed name of a share-partition: "group:topicId:partition", the topic id
// in Kafka's base64 form (SharePartitionKey.asCoordinatorKey).
func CoordinatorKey(k share.Key) string {
	return k.Group + ":" + base64.RawURLEncoding.EncodeToString(k.TopicID[:]) + ":" + strconv.Itoa(int(k.Partition))
}

// ParseCoordinatorKey reads a FindCoordinator SHARE key as Kafka 4.4 does
// (SharePartitionKey.getInstance): the last two ':'-separated parts are the
// topic id and partition, everything before them the group, which must not
// be blank. A malformed key wraps ErrKey (INVALID_REQUEST).
func ParseCoordinatorKey(s string) (share.Key, error) {
	parts := strings.Split(s, ":")
	for len(parts) > 0 && parts[len(parts)-1] == "" {
		parts = parts[:len(parts)-1] // Java's split drops trailing empties
	}
	if len(parts) < 3 {
		return share.Key{}, fmt.Errorf("%w: %q is not group:topicId:partition", ErrKey, s)
	}
	group := strings.Join(parts[:len(parts)-2], ":")
	if strings.TrimSpace(group) == "" {
		return share.Key{}, fmt.Errorf("%w: empty group in %q", ErrKey, s)
	}
	raw, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(parts[len(parts)-2], "="))
	if err != nil || len(raw) != 16 {
		return share.Key{}, fmt.Errorf("%w: topic id %q", ErrKey, parts[len(parts)-2])
	}
	p, err := strconv.ParseInt(parts[len(parts)-1], 10, 32)
	if err != nil {
		return share.Key{}, fmt.Errorf("%w: partition %q", ErrKey, parts[len(parts)-1])
	}
	k := share.Key{Group: group, Partition: int32(p)}
	copy(k.TopicID[:], raw)
	return k, nil
}

// PartitionFor is the __share_group_state partition of a share-partition,
// as Kafka 4.4 computes it (Utils.abs(asCoordinatorKey().hashCode()) %
// partitions), so that samsa and Kafka agree on where a key lives.
func PartitionFor(k share.Key, partitions int32) int32 {
	return coordinator.PartitionFor(CoordinatorKey(k), partitions)
}

// entry is a share-partition's state as the shard keeps it: State plus the
// fields of Kafka's ShareSnapshotValue that State does not carry.
type entry struct {
	st share.State
	// deliveryComplete is DeliveryCompleteCount (KIP-1226, tag 0), -1
	// when unknown.
	deliveryComplete int32
	snapshotEpoch    int32
	createMs         int64
	writeMs          int64
}

// recordKey encodes ShareSnapshotKey (typ 0) or ShareUpdateKey (typ 1)
// v0: int16 type, group STRING, topic_id UUID, partition int32.
func recordKey(typ int16, k share.Key) []byte {
	b := make([]byte, 0, 2+2+len(k.Group)+16+4)
	b = binary.BigEndian.AppendUint16(b, uint16(typ))
	b = binary.BigEndian.AppendUint16(b, uint16(len(k.Group)))
	b = append(b, k.Group...)
	b = append(b, k.TopicID[:]...)
	return binary.BigEndian.AppendUint32(b, uint32(k.Partition))
}

// snapshotValue encodes ShareSnapshotValue v0 (flexible): int16 0,
// snapshot_epoch, state_epoch, leader_epoch int32, start_offset,
// create_timestamp, write_timestamp int64, state_batches compact array of
// (first_offset, last_offset int64, delivery_state int8, delivery_count
// int16, tags), tags (0: delivery_complete_count int32, written when not -1).
func snapshotValue(e *entry) []byte {
	b := make([]byte, 0, 48+len(e.st.Batches)*20)
	b = binary.BigEndian.AppendUint16(b, 0)
	b = binary.BigEndian.AppendUint32(b, uint32(e.snapshotEpoch))
	b = binary.BigEndian.AppendUint32(b, uint32(e.st.StateEpoch))
	b = binary.BigEndian.AppendUint32(b, uint32(e.st.LeaderEpoch))
	b = binary.BigEndian.AppendUint64(b, uint64(e.st.StartOffset))
	b = binary.BigEndian.AppendUint64(b, uint64(e.createMs))
	b = binary.BigEndian.AppendUint64(b, uint64(e.writeMs))
	b = binary.AppendUvarint(b, uint64(len(e.st.Batches))+1)
	for _, sb := range e.st.Batches {
		b = binary.BigEndian.AppendUint64(b, uint64(sb.FirstOffset))
		b = binary.BigEndian.AppendUint64(b, uint64(sb.LastOffset))
		b = append(b, byte(sb.DeliveryState))
		b = binary.BigEndian.AppendUint16(b, uint16(sb.DeliveryCount))
		b = append(b, 0) // no tagged fields
	}
	if e.deliveryComplete == -1 {
		return append(b, 0)
	}
	b = append(b, 1, 0, 4) // one tag: 0, 4 bytes
	return binary.BigEndian.AppendUint32(b, uint32(e.deliveryComplete))
}

// reader decodes the big-endian fields of a record; the first failure
// sticks.
type reader struct {
	b   []byte
	err error
}

func (r *reader) take(n int) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || len(r.b) < n {
		r.err = fmt.Errorf("%w: %d bytes short", ErrCorrupt, n-len(r.b))
		return nil
	}
	out := r.b[:n]
	r.b = r.b[n:]
	return out
}

func (r *reader) i8() int8 {
	if b := r.take(1); b != nil {
		return int8(b[0])
	}
	return 0
}

func (r *reader) i16() int16 {
	if b := r.take(2); b != nil {
		return int16(binary.BigEndian.Uint16(b))
	}
	return 0
}

func (r *reader) i32() int32 {
	if b := r.take(4); b != nil {
		return int32(binary.BigEndian.Uint32(b))
	}
	return 0
}

func (r *reader) i64() int64 {
	if b := r.take(8); b != nil {
		return int64(binary.BigEndian.Uint64(b))
	}
	return 0
}

func (r *reader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.err = fmt.Errorf("%w: bad varint", ErrCorrupt)
		return 0
	}
	r.b = r.b[n:]
	return v
}

// tags reads a tagged-field section and returns tag 0 as an int32 (def
// when absent); other tags are skipped.
func (r *reader) tags(def int32) int32 {
	n := r.uvarint()
	for i := uint64(0); i < n && r.err == nil; i++ {
		tag, size := r.uvarint(), r.uvarint()
		if size > math.MaxInt32 {
			r.err = fmt.Errorf("%w: tag of %d bytes", ErrCorrupt, size)
			return def
		}
		b := r.take(int(size))
		if tag == 0 && len(b) == 4 {
			def = int32(binary.BigEndian.Uint32(b))
		}
	}
	return def
}

// batches reads a compact array of state batches.
func (r *reader) batches() []share.Batch {
	n := r.uvarint()
	if n == 0 || r.err != nil {
		return nil
	}
	n--
	if n == 0 {
		return nil
	}
	if n > uint64(len(r.b))/20 {
		r.err = fmt.Errorf("%w: %d state batches in %d bytes", ErrCorrupt, n, len(r.b))
		return nil
	}
	out := make([]share.Batch, 0, n)
	for range n {
		b := share.Batch{FirstOffset: r.i64(), LastOffset: r.i64(), DeliveryState: r.i8(), DeliveryCount: r.i16()}
		r.tags(-1)
		out = append(out, b)
	}
	return out
}

// decodeKey reads a record key: its type and share-partition.
func decodeKey(b []byte) (int16, share.Key, error) {
	r := &reader{b: b}
	typ := r.i16()
	n := r.i16()
	group := r.take(int(n))
	id := r.take(16)
	k := share.Key{Group: string(group), Partition: r.i32()}
	copy(k.TopicID[:], id)
	if r.err == nil && len(r.b) != 0 {
		r.err = fmt.Errorf("%w: %d bytes after the key", ErrCorrupt, len(r.b))
	}
	return typ, k, r.err
}

// decodeSnapshot reads a ShareSnapshotValue.
func decodeSnapshot(b []byte) (*entry, error) {
	r := &reader{b: b}
	if v := r.i16(); r.err == nil && v != 0 {
		return nil, fmt.Errorf("%w: snapshot value version %d", ErrCorrupt, v)
	}
	e := &entry{snapshotEpoch: r.i32()}
	e.st.StateEpoch = r.i32()
	e.st.LeaderEpoch = r.i32()
	e.st.StartOffset = r.i64()
	e.createMs = r.i64()
	e.writeMs = r.i64()
	e.st.Batches = r.batches()
	e.deliveryComplete = r.tags(-1)
	return e, r.err
}

// checkLoaded refuses the state of a record that decodes but that no
// writer makes: a start offset below -1, batches that are not ranges of
// offsets (inverted, negative), unknown delivery states or negative
// delivery counts. Such a record is skipped on load, as one that does not
// decode, rather than handed to a partition leader (Kafka 4.4's leader
// fails to initialize the share-partition on inverted batches).
func checkLoaded(start int64, batches []share.Batch) error {
	if start < -1 || validBatches(batches) != nil {
		return fmt.Errorf("%w: start offset %d, batches %v", ErrCorrupt, start, batches)
	}
	for _, b := range batches {
		if b.DeliveryCount < 0 {
			return fmt.Errorf("%w: delivery count %d", ErrCorrupt, b.DeliveryCount)
		}
	}
	return nil
}

// update is a ShareUpdateValue: a delta on the last snapshot.
type update struct {
	snapshotEpoch    int32
	leaderEpoch      int32
	startOffset      int64
	deliveryComplete int32
	batches          []share.Batch
}

// decodeUpdate reads a ShareUpdateValue.
func decodeUpdate(b []byte) (update, error) {
	r := &reader{b: b}
	if v := r.i16(); r.err == nil && v != 0 {
		return update{}, fmt.Errorf("%w: update value version %d", ErrCorrupt, v)
	}
	u := update{snapshotEpoch: r.i32(), leaderEpoch: r.i32(), startOffset: r.i64()}
	u.batches = r.batches()
	u.deliveryComplete = r.tags(-1)
	return u, r.err
}

// apply folds a ShareUpdate into e as Kafka's replay does: a start offset
// or leader epoch of -1 leaves the field as it was; the update's batches
// replace the offsets they cover; batches below the start offset go.
func (e *entry) apply(u update) {
	if u.startOffset != -1 {
		e.st.StartOffset = u.startOffset
	}
	if u.leaderEpoch != -1 {
		e.st.LeaderEpoch = u.leaderEpoch
	}
	if u.deliveryComplete != -1 {
		e.deliveryComplete = u.deliveryComplete
	}
	e.st.Batches = overlay(e.st.Batches, u.batches, e.st.StartOffset)
}

// overlay returns base with the ranges of top written over it, in offset
// order and trimmed below start: each base batch keeps the runs of its
// offsets no top batch covers, and the top batches are added as they
// are. O((n+m) log(n+m)) plus the pieces made (it cut every base batch by
// every top batch before: a load folding Kafka-written ShareUpdate
// records of many batches was quadratic).
func overlay(base, top []share.Batch, start int64) []share.Batch {
	covered := coveredRuns(top)
	var out []share.Batch
	for _, b := range base {
		out = appendUncovered(out, b, covered)
	}
	out = append(out, top...)
	kept := out[:0]
	for _, b := range out {
		if b.LastOffset < start {
			continue
		}
		b.FirstOffset = max(b.FirstOffset, start)
		kept = append(kept, b)
	}
	slices.SortFunc(kept, func(a, b share.Batch) int { return cmp.Compare(a.FirstOffset, b.FirstOffset) })
	return kept
}

// offsetRun is the offsets first to last.
type offsetRun struct{ first, last int64 }

// coveredRuns returns the offsets the batches cover as disjoint runs in
// offset order (so ordered by last offset too).
func coveredRuns(bs []share.Batch) []offsetRun {
	runs := make([]offsetRun, 0, len(bs))
	for _, b := range bs {
		runs = append(runs, offsetRun{b.FirstOffset, b.LastOffset})
	}
	slices.SortFunc(runs, func(a, b offsetRun) int { return cmp.Compare(a.first, b.first) })
	merged := runs[:0]
	for _, r := range runs {
		if k := len(merged) - 1; k >= 0 && r.first <= merged[k].last {
			merged[k].last = max(merged[k].last, r.last)
			continue
		}
		merged = append(merged, r)
	}
	return merged
}

// appendUncovered appends to out the runs of b's offsets that no run of
// covered holds, in offset order, each a copy of b over its run.
func appendUncovered(out []share.Batch, b share.Batch, covered []offsetRun) []share.Batch {
	from := b.FirstOffset // b's offsets below from are decided
	i, _ := slices.BinarySearchFunc(covered, b.FirstOffset, func(r offsetRun, o int64) int { return cmp.Compare(r.last, o) })
	for ; i < len(covered) && covered[i].first <= b.LastOffset; i++ {
		if covered[i].first > from {
			piece := b
			piece.FirstOffset, piece.LastOffset = from, covered[i].first-1
			out = append(out, piece)
		}
		if covered[i].last >= b.LastOffset {
			return out
		}
		from = max(from, covered[i].last+1)
	}
	piece := b
	piece.FirstOffset = from
	return append(out, piece)
}

// encodeBatch builds one uncompressed batch of records stamped now; the log
// assigns the offsets.
func encodeBatch(now time.Time, records []wire.Record) ([]byte, error) {
	return wire.EncodeBatch(wire.BatchSpec{
		BaseTimestamp: now.UnixMilli(),
		ProducerID:    -1,
		ProducerEpoch: -1,
		BaseSequence:  -1,
		Records:       records,
	})
}

// Internal errors of the share coordinator.
var (
	// ErrOptions is returned by New for incomplete Options.
	ErrOptions = errors.New("share: invalid options")
	// ErrKey is wrapped when a FindCoordinator SHARE key does not parse.
	ErrKey = errors.New("share: malformed share-partition key")
	// ErrCorrupt is wrapped when a __share_group_state record does not
	// decode.
	ErrCorrupt = errors.New("share: corrupt record")
	// ErrLoad is wrapped when a partition cannot be loaded.
	ErrLoad = errors.New("share: load failed")
	// ErrNoPartition is returned by LoadPartition for a partition this
	// node does not hold.
	ErrNoPartition = errors.New("share: no such __share_group_state partition")
	// ErrClosed is returned after Close.
	ErrClosed = errors.New("share: closed")
)
