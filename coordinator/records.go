package coordinator

import (
	"encoding/binary"
	"fmt"
	"time"
	"unicode/utf16"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/coordinator/internal/shards"
	"github.com/samsa-broker/samsa/wire"
)

// OffsetsTopic is the internal topic holding committed offsets and group
// metadata.
const OffsetsTopic = "__consumer_offsets"

// javaStringHash is Java's String.hashCode: s[0]*31^(n-1) + ... over UTF-16
// code units, in wrapping int32 arithmetic.
func javaStringHash(s string) int32 {
	var h int32
	for _, u := range utf16.Encode([]rune(s)) {
		h = 31*h + int32(u)
	}
	return h
}

// PartitionFor returns the __consumer_offsets partition of a group, as
// Kafka computes it (Utils.abs(groupId.hashCode) % partitions), so that
// samsa and Kafka tools agree on where a group lives.
func PartitionFor(group string, partitions int32) int32 {
	h := javaStringHash(group)
	if h == -1<<31 {
		h = 0 // Kafka's Utils.abs maps MinValue to 0
	} else if h < 0 {
		h = -h
	}
	return h % partitions
}

// Key versions of __consumer_offsets records: 0 and 1 are offset commits,
// 2 is group metadata (3+ are KIP-848 consumer group records, skipped on
// load for now).
const (
	keyOffsetCommitV0  = 0
	keyOffsetCommitV1  = 1
	keyGroupMetadataV2 = 2
)

func offsetCommitKey(group string, tp topicPartition) []byte {
	k := kmsg.NewOffsetCommitKey()
	k.Version = keyOffsetCommitV1
	k.Group = group
	k.Topic = tp.topic
	k.Partition = tp.partition
	return k.AppendTo(nil)
}

func offsetCommitValue(e offsetEntry) []byte {
	v := kmsg.NewOffsetCommitValue()
	v.Version = 3
	v.Offset = e.offset
	v.LeaderEpoch = e.leaderEpoch
	v.Metadata = e.metadata
	v.CommitTimestamp = e.commitTime.UnixMilli()
	return v.AppendTo(nil)
}

func groupMetadataKey(group string) []byte {
	k := kmsg.NewGroupMetadataKey()
	k.Version = keyGroupMetadataV2
	k.Group = group
	return k.AppendTo(nil)
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

// decodeOffsetEntry decodes an OffsetCommitValue (any version).
func decodeOffsetEntry(value []byte) (offsetEntry, error) {
	var v kmsg.OffsetCommitValue
	if err := v.ReadFrom(value); err != nil {
		return offsetEntry{}, fmt.Errorf("%w: offset commit value: %v", ErrCorrupt, err)
	}
	e := offsetEntry{
		offset:      v.Offset,
		leaderEpoch: -1,
		metadata:    v.Metadata,
		commitTime:  time.UnixMilli(v.CommitTimestamp),
	}
	if v.Version >= 3 {
		e.leaderEpoch = v.LeaderEpoch
	}
	if v.Version == 1 && v.ExpireTimestamp > 0 {
		e.expireTime = time.UnixMilli(v.ExpireTimestamp)
	}
	return e, nil
}

// loadState is what reading a __consumer_offsets partition yields: the last
// value of every key, tombstones applied.
type loadState struct {
	groups  map[string]*kmsg.GroupMetadataValue
	offsets map[string]map[topicPartition]offsetEntry
	// consumerGroups are KIP-848 groups (key versions 3-8).
	consumerGroups map[string]*cgLoad
	// shareGroups are KIP-932 share groups (key versions 10-15).
	shareGroups map[string]*sgLoad
	// streamsGroups are KIP-1071 streams groups (key versions 17, 19-23).
	streamsGroups map[string]*stLoad
	// txn holds pending transactional offsets (nil until the first
	// transactional or control batch); see txn_offsets.go.
	txn *txnOffsets
	// recordOffset is the log offset of the record being applied.
	recordOffset int64
	// Skips are the records and batches that did not decode, left out.
	shards.Skips
	// maxField is the most bytes of a key or value read (0:
	// shards.LoadFieldMax).
	maxField int
	// unknownTypes counts records of key versions samsa does not know
	// (share or streams groups, newer Kafkas), ignored as Kafka ignores
	// them; firstUnknown is the offset and version of the first.
	unknownTypes        int
	firstUnknownOffset  int64
	firstUnknownVersion int16
}

// unknownType notes a record of an unknown key version at ls.recordOffset.
func (ls *loadState) unknownType(version int16) {
	if ls.unknownTypes == 0 {
		ls.firstUnknownOffset, ls.firstUnknownVersion = ls.recordOffset, version
	}
	ls.unknownTypes++
}

// fieldMax is the most bytes of a record's key or value the load reads.
func (ls *loadState) fieldMax() int {
	return max(ls.maxField, shards.LoadFieldMax)
}

func newLoadState() *loadState {
	return &loadState{
		groups:  map[string]*kmsg.GroupMetadataValue{},
		offsets: map[string]map[topicPartition]offsetEntry{},
	}
}

// apply folds one record into the state. Unknown key versions are skipped
// (newer record types); malformed keys or values are errors.
func (ls *loadState) apply(key, value []byte) error {
	if len(key) < 2 {
		return fmt.Errorf("%w: key of %d bytes", ErrCorrupt, len(key))
	}
	switch binary.BigEndian.Uint16(key) {
	case keyOffsetCommitV0, keyOffsetCommitV1:
		var k kmsg.OffsetCommitKey
		if err := k.ReadFrom(key); err != nil {
			return fmt.Errorf("%w: offset commit key: %v", ErrCorrupt, err)
		}
		tp := topicPartition{k.Topic, k.Partition}
		if value == nil {
			if m := ls.offsets[k.Group]; m != nil {
				delete(m, tp)
			}
			if ls.txn != nil {
				ls.txn.tombstone(k.Group, tp)
			}
			return nil
		}
		e, err := decodeOffsetEntry(value)
		if err != nil {
			return err
		}
		e.recordOffset = ls.recordOffset
		m := ls.offsets[k.Group]
		if m == nil {
			m = map[topicPartition]offsetEntry{}
			ls.offsets[k.Group] = m
		}
		m[tp] = e
	case keyGroupMetadataV2:
		var k kmsg.GroupMetadataKey
		if err := k.ReadFrom(key); err != nil {
			return fmt.Errorf("%w: group metadata key: %v", ErrCorrupt, err)
		}
		if value == nil {
			delete(ls.groups, k.Group)
			return nil
		}
		vv := kmsg.NewGroupMetadataValue()
		v := &vv
		if err := v.ReadFrom(value); err != nil {
			return fmt.Errorf("%w: group metadata value: %v", ErrCorrupt, err)
		}
		ls.groups[k.Group] = v
	default:
		if isShareGroupKey(int16(binary.BigEndian.Uint16(key))) {
			return ls.applyShareGroup(key, value)
		}
		if isStreamsGroupKey(int16(binary.BigEndian.Uint16(key))) {
			return ls.applyStreamsGroup(key, value)
		}
		return ls.applyConsumerGroup(key, value)
	}
	return nil
}

// applyBatches folds every complete batch at the start of data into the
// state and returns the offset after the last one read (or from, when data
// holds no complete batch). Records of transactional batches become
// pending offsets of their producer, and control batches (transaction
// markers) complete them. Records are streamed (wire.StreamRecords), their
// keys and values cut at fieldMax bytes; a batch whose records do not all
// read is skipped whole.
func (ls *loadState) applyBatches(data []byte, from int64) (int64, error) {
	next, err := shards.WalkBatches(data, from, func(h wire.BatchHeader, batch []byte) {
		if h.IsControl() {
			if err := ls.applyControlBatch(batch, h); err != nil {
				ls.Skip(h.BaseOffset, err)
			}
		} else {
			if h.IsTransactional() {
				ls.txnState().sawEpoch(h.ProducerID, h.ProducerEpoch)
			}
			limit := ls.fieldMax()
			if err := wire.StreamRecords(batch, limit, func(r *wire.StreamedRecord) {
				ls.recordOffset = h.BaseOffset + int64(r.OffsetDelta)
				key, value := shards.Owned(h, r)
				var err error
				if h.IsTransactional() {
					err = ls.applyTxnRecord(h.ProducerID, key, value)
				} else {
					err = ls.apply(key, value)
				}
				if err != nil {
					ls.Skip(ls.recordOffset, shards.CutErr(r, limit, err))
				}
			}); err != nil {
				ls.Skip(h.BaseOffset, fmt.Errorf("%w: batch of %d bytes: %v", ErrCorrupt, len(batch), err))
			}
		}
	})
	if err != nil {
		return next, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	return next, nil
}
