package txn

import (
	"encoding/binary"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/coordinator/internal/shards"
	"github.com/samsa-broker/samsa/wire"
)

// TransactionStateTopic is the internal topic holding transaction state.
const TransactionStateTopic = "__transaction_state"

// keyVersion is the only TransactionLogKey version Kafka defines; records
// with other key versions are skipped on load (written by a newer broker).
const keyVersion = 0

// txnKey encodes TransactionLogKey v0: int16 version, then the id as a
// STRING.
func txnKey(id string) []byte {
	k := kmsg.NewTxnMetadataKey()
	k.Version = keyVersion
	k.TransactionalID = id
	return k.AppendTo(nil)
}

// logValue is meta as a TransactionLogValue. Version 0 is written unless a
// field only version 1 carries (the KIP-890 tagged fields) is set, so that
// tools of Kafka before 3.5 still read what samsa writes. Empty writes a
// null partition array, as Kafka does; the other states an array, empty
// for Complete*.
func logValue(m *txnMeta) []byte {
	v := kmsg.NewTxnMetadataValue()
	v.ProducerID = m.producerID
	v.ProducerEpoch = m.epoch
	v.TimeoutMillis = m.timeoutMs
	v.State = kmsg.TransactionState(m.state)
	v.LastUpdateTimestamp = m.updateMs
	v.StartTimestamp = m.startMs
	v.PreviousProducerID = m.prevProducerID
	v.NextProducerID = m.nextProducerID
	v.ClientTransactionVersion = m.clientTV
	if m.prevProducerID != -1 || m.nextProducerID != -1 || m.clientTV != 0 {
		v.Version = 1
	}
	if m.state != Empty {
		v.Topics = []kmsg.TxnMetadataValueTopic{}
		for _, tp := range m.sortedPartitions() {
			if n := len(v.Topics); n > 0 && v.Topics[n-1].Topic == tp.Topic {
				v.Topics[n-1].Partitions = append(v.Topics[n-1].Partitions, tp.Partition)
				continue
			}
			v.Topics = append(v.Topics, kmsg.TxnMetadataValueTopic{Topic: tp.Topic, Partitions: []int32{tp.Partition}})
		}
	}
	return v.AppendTo(nil)
}

// decodeValue reads a TransactionLogValue (any version: 1+ are flexible
// with tagged fields) into a txnMeta for id.
func decodeValue(id string, b []byte) (*txnMeta, error) {
	if len(b) < 2 {
		return nil, fmt.Errorf("%w: value of %d bytes", ErrCorrupt, len(b))
	}
	v := kmsg.NewTxnMetadataValue()
	if err := v.ReadFrom(b); err != nil {
		return nil, fmt.Errorf("%w: transaction %q value: %v", ErrCorrupt, id, err)
	}
	if v.Version < 0 {
		return nil, fmt.Errorf("%w: transaction %q value version %d", ErrCorrupt, id, v.Version)
	}
	st := State(v.State)
	if st < Empty || st > PrepareEpochFence {
		return nil, fmt.Errorf("%w: transaction %q state %d", ErrCorrupt, id, v.State)
	}
	m := &txnMeta{
		id:             id,
		producerID:     v.ProducerID,
		prevProducerID: v.PreviousProducerID,
		epoch:          v.ProducerEpoch,
		lastEpoch:      -1,
		timeoutMs:      v.TimeoutMillis,
		state:          st,
		partitions:     map[TopicPartition]struct{}{},
		updateMs:       v.LastUpdateTimestamp,
		startMs:        v.StartTimestamp,
		clientTV:       v.ClientTransactionVersion,
		nextProducerID: v.NextProducerID,
	}
	for _, t := range v.Topics {
		for _, p := range t.Partitions {
			m.partitions[TopicPartition{Topic: t.Topic, Partition: p}] = struct{}{}
		}
	}
	return m, nil
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

// loadState is what reading a __transaction_state partition yields: the
// last value of every transactional id, tombstones applied.
type loadState struct {
	txns map[string]*txnMeta
	// Skips are the records and batches that did not decode, left out.
	shards.Skips
	// unknownTypes counts records of key versions other than 0, ignored.
	unknownTypes int
}

// apply folds one record into the state. Unknown key versions are skipped;
// malformed keys or values are errors. A Dead value deletes, like a
// tombstone: Kafka never writes one, it is the in-memory state before the
// tombstone.
func (ls *loadState) apply(key, value []byte) error {
	if len(key) < 2 {
		return fmt.Errorf("%w: key of %d bytes", ErrCorrupt, len(key))
	}
	if binary.BigEndian.Uint16(key) != keyVersion {
		ls.unknownTypes++
		return nil
	}
	var k kmsg.TxnMetadataKey
	if err := k.ReadFrom(key); err != nil {
		return fmt.Errorf("%w: key: %v", ErrCorrupt, err)
	}
	if value == nil {
		delete(ls.txns, k.TransactionalID)
		return nil
	}
	m, err := decodeValue(k.TransactionalID, value)
	if err != nil {
		return err
	}
	switch m.state {
	case Dead:
		delete(ls.txns, k.TransactionalID)
		return nil
	case PrepareEpochFence:
		// Never written by Kafka (an in-memory step before PrepareAbort);
		// if found, the abort it announces is what to finish.
		m.state = PrepareAbort
	}
	ls.txns[k.TransactionalID] = m
	return nil
}

// applyBatches folds every complete batch at the start of data into the
// state and returns the offset after the last one read (or from, when data
// holds no complete batch). Control and transactional batches are skipped:
// the coordinator never writes any. Records are streamed
// (wire.StreamRecords), their keys and values cut at shards.LoadFieldMax
// bytes; a batch whose records do not all read is skipped whole.
func (ls *loadState) applyBatches(data []byte, from int64) (int64, error) {
	next, err := shards.WalkBatches(data, from, func(h wire.BatchHeader, batch []byte) {
		if h.IsControl() || h.IsTransactional() {
			return
		}
		if err := wire.StreamRecords(batch, shards.LoadFieldMax, func(r *wire.StreamedRecord) {
			if err := ls.apply(shards.Owned(h, r)); err != nil {
				ls.Skip(h.BaseOffset+int64(r.OffsetDelta), shards.CutErr(r, shards.LoadFieldMax, err))
			}
		}); err != nil {
			ls.Skip(h.BaseOffset, fmt.Errorf("%w: batch of %d bytes: %v", ErrCorrupt, len(batch), err))
		}
	})
	if err != nil {
		return next, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	return next, nil
}

// sortTPs orders partitions by topic, then partition.
func sortTPs(tps []TopicPartition) {
	slices.SortFunc(tps, func(a, b TopicPartition) int {
		if a.Topic != b.Topic {
			if a.Topic < b.Topic {
				return -1
			}
			return 1
		}
		return int(a.Partition) - int(b.Partition)
	})
}
