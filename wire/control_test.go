package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"
)

func TestControlBatchRoundTrip(t *testing.T) {
	for _, commit := range []bool{false, true} {
		b, err := EncodeControlBatch(42, 7, commit, 9, 3, 1_700_000_000_123)
		if err != nil {
			t.Fatal(err)
		}
		h, err := ParseBatchHeader(b)
		if err != nil {
			t.Fatal(err)
		}
		if h.Attributes != attrTransactional|attrControl || h.ProducerID != 42 || h.ProducerEpoch != 7 ||
			h.BaseSequence != -1 || h.PartitionLeaderEpoch != 3 || h.NumRecords != 1 || h.LastOffsetDelta != 0 ||
			h.BaseTimestamp != 1_700_000_000_123 || h.MaxTimestamp != 1_700_000_000_123 {
			t.Fatalf("header %+v", h)
		}
		if _, err := SplitBatches(b, func([]byte, BatchHeader) error { return nil }); err != nil {
			t.Fatalf("CRC: %v", err)
		}
		_, recs, err := DecodeRecords(b)
		if err != nil {
			t.Fatal(err)
		}
		typ := uint16(ControlAbort)
		if commit {
			typ = uint16(ControlCommit)
		}
		// Kafka's layout: key = version int16 0, type int16; value =
		// version int16 0, coordinator epoch int32.
		wantKey := binary.BigEndian.AppendUint16(binary.BigEndian.AppendUint16(nil, 0), typ)
		wantValue := binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint16(nil, 0), 9)
		if len(recs) != 1 || !bytes.Equal(recs[0].Key, wantKey) || !bytes.Equal(recs[0].Value, wantValue) || len(recs[0].Headers) != 0 {
			t.Fatalf("record %+v", recs)
		}
		gotCommit, epoch, ok, err := ParseControlBatch(b)
		if err != nil || !ok || gotCommit != commit || epoch != 9 {
			t.Fatalf("ParseControlBatch = %v %d %v %v", gotCommit, epoch, ok, err)
		}
	}
}

func controlBatchWith(t *testing.T, key, value []byte, n int) []byte {
	t.Helper()
	recs := make([]Record, n)
	for i := range recs {
		recs[i] = Record{Key: key, Value: value}
	}
	b, err := EncodeBatch(BatchSpec{ProducerID: 1, BaseSequence: -1, Transactional: true, Control: true, Records: recs})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestParseControlBatchCases(t *testing.T) {
	marker := []byte{0, 0, 0, 0, 0, 5}
	for _, tc := range []struct {
		name    string
		batch   []byte
		ok      bool
		commit  bool
		epoch   int32
		wantErr bool
	}{
		{name: "commit", batch: controlBatchWith(t, []byte{0, 0, 0, 1}, marker, 1), ok: true, commit: true, epoch: 5},
		{name: "newer versions read as v0", batch: controlBatchWith(t, []byte{0, 3, 0, 0, 9}, []byte{0, 1, 0, 0, 0, 6, 1, 2}, 1), ok: true, epoch: 6},
		{name: "leader change type", batch: controlBatchWith(t, []byte{0, 0, 0, 2}, []byte{1, 2, 3}, 1)},
		{name: "unknown type", batch: controlBatchWith(t, []byte{0, 0, 0x7f, 0}, nil, 1)},
		{name: "no records", batch: controlBatchWith(t, nil, nil, 0)},
		{name: "short key", batch: controlBatchWith(t, []byte{0, 0, 1}, marker, 1), wantErr: true},
		{name: "negative key version", batch: controlBatchWith(t, []byte{0xff, 0xff, 0, 1}, marker, 1), wantErr: true},
		{name: "short value", batch: controlBatchWith(t, []byte{0, 0, 0, 0}, []byte{0, 0, 0}, 1), wantErr: true},
		{name: "null value", batch: controlBatchWith(t, []byte{0, 0, 0, 0}, nil, 1), wantErr: true},
		{name: "negative value version", batch: controlBatchWith(t, []byte{0, 0, 0, 0}, []byte{0x80, 0, 0, 0, 0, 1}, 1), wantErr: true},
		{name: "truncated", batch: controlBatchWith(t, []byte{0, 0, 0, 1}, marker, 1)[:BatchHeaderSize+2], wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			commit, epoch, ok, err := ParseControlBatch(tc.batch)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v", err)
			}
			if err != nil && !errors.Is(err, ErrMalformed) {
				t.Fatalf("err %v does not wrap ErrMalformed", err)
			}
			if ok != tc.ok || commit != tc.commit || epoch != tc.epoch {
				t.Fatalf("got %v %v %d", ok, commit, epoch)
			}
		})
	}
	plain := mustBatch(t, testSpec(CompressionNone, 1))
	if _, _, _, err := ParseControlBatch(plain); !errors.Is(err, ErrNotControl) {
		t.Fatalf("data batch: %v", err)
	}
}

func FuzzParseControlBatch(f *testing.F) {
	for _, commit := range []bool{false, true} {
		b, err := EncodeControlBatch(1, 2, commit, 3, 4, 5)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add(mustBatch(f, testSpec(CompressionGzip, 2)))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		commit, epoch, ok, err := ParseControlBatch(b)
		if err != nil || !ok {
			return
		}
		h, _ := ParseBatchHeader(b)
		again, err := EncodeControlBatch(h.ProducerID, h.ProducerEpoch, commit, epoch, h.PartitionLeaderEpoch, h.BaseTimestamp)
		if err != nil {
			t.Fatal(err)
		}
		c2, e2, ok2, err := ParseControlBatch(again)
		if err != nil || !ok2 || c2 != commit || e2 != epoch {
			t.Fatalf("re-encoded marker parses as %v %d %v %v", c2, e2, ok2, err)
		}
	})
}
