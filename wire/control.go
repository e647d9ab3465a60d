package wire

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// ControlType is the type of a control record: 0 abort, 1 commit (Kafka's
// ControlRecordType). Other values exist (KRaft's leader change and
// snapshot records, later KIPs); they are not transaction markers.
type ControlType int16

// The control record types that end a transaction.
const (
	ControlAbort  ControlType = 0
	ControlCommit ControlType = 1
)

// controlKeyVersion and endTxnMarkerVersion are the versions samsa writes
// for the control record key (version int16, type int16) and the
// EndTxnMarker value (version int16, coordinator epoch int32).
const (
	controlKeyVersion   = 0
	endTxnMarkerVersion = 0
	controlKeySize      = 4
	endTxnMarkerSize    = 6
)

// ErrNotControl is returned by ParseControlBatch for a batch whose control
// attribute is not set.
var ErrNotControl = errors.New("wire: not a control batch")

// EncodeControlBatch builds a transaction marker batch: attributes
// transactional|control, base sequence -1, one record at offset delta 0
// with timestamp ts whose key is the control key (version 0, type abort or
// commit) and whose value is the EndTxnMarker (version 0, coordinator
// epoch). The base offset is 0 (assigned on append).
func EncodeControlBatch(producerID int64, producerEpoch int16, commit bool, coordinatorEpoch int32, leaderEpoch int32, ts int64) ([]byte, error) {
	typ := ControlAbort
	if commit {
		typ = ControlCommit
	}
	k := kmsg.ControlRecordKey{Version: controlKeyVersion, Type: kmsg.ControlRecordKeyType(typ)}
	key := k.AppendTo(make([]byte, 0, controlKeySize))
	v := kmsg.EndTxnMarker{Version: endTxnMarkerVersion, CoordinatorEpoch: coordinatorEpoch}
	value := v.AppendTo(make([]byte, 0, endTxnMarkerSize))
	return EncodeBatch(BatchSpec{
		BaseTimestamp:        ts,
		MaxTimestamp:         ts,
		ProducerID:           producerID,
		ProducerEpoch:        producerEpoch,
		BaseSequence:         -1,
		Transactional:        true,
		Control:              true,
		PartitionLeaderEpoch: leaderEpoch,
		Records:              []Record{{Key: key, Value: value}},
	})
}

// controlFieldMax is the most bytes of a control record's key and value
// ParseControlBatch reads: far more than the fields of any version it
// knows (4 and 6 bytes).
const controlFieldMax = 64

// ParseControlBatch reads the transaction marker of a control batch (the
// whole batch's bytes; the CRC is not checked). ok is false, without error,
// for a control batch that is not a transaction marker: an unknown control
// type, or no records (the log cleaner of Kafka leaves empty batches). A
// marker whose key or value is too short or has a negative version is an
// error wrapping ErrMalformed, as Kafka rejects it; a newer version is read
// as version 0, whose fields it extends.
func ParseControlBatch(batch []byte) (commit bool, coordinatorEpoch int32, ok bool, err error) {
	h, b, err := batchBounds(batch)
	if err != nil {
		return false, 0, false, err
	}
	if !h.IsControl() {
		return false, 0, false, ErrNotControl
	}
	if h.NumRecords == 0 {
		return false, 0, false, nil
	}
	// The first record's key and value, read up to controlFieldMax
	// bytes each: kmsg reads the fields of version 0 and ignores trailing
	// bytes, which is how Kafka reads newer versions.
	var key, value []byte
	n := 0
	if err := StreamRecords(b, controlFieldMax, func(r *StreamedRecord) {
		if n++; n == 1 {
			key, value = bytes.Clone(r.Key), bytes.Clone(r.Value)
		}
	}); err != nil {
		return false, 0, false, err
	}
	if n == 0 {
		return false, 0, false, nil
	}
	var k kmsg.ControlRecordKey
	if err := k.ReadFrom(key); err != nil || k.Version < 0 {
		return false, 0, false, fmt.Errorf("%w: control record key %x", ErrMalformed, key)
	}
	typ := ControlType(k.Type)
	if typ != ControlAbort && typ != ControlCommit {
		return false, 0, false, nil
	}
	var v kmsg.EndTxnMarker
	if err := v.ReadFrom(value); err != nil || v.Version < 0 {
		return false, 0, false, fmt.Errorf("%w: end transaction marker value %x", ErrMalformed, value)
	}
	return typ == ControlCommit, v.CoordinatorEpoch, true, nil
}
