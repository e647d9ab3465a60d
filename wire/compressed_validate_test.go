package wire

import (
	"encoding/binary"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// withCompressedBody rebuilds batch b around body (its header kept), with
// count records declared, its length and CRC fixed.
func withCompressedBody(b, body []byte, count int32) []byte {
	out := append([]byte(nil), b[:BatchHeaderSize]...)
	out = append(out, body...)
	binary.BigEndian.PutUint32(out[offBatchLength:], uint32(len(out)-logOverhead))
	binary.BigEndian.PutUint32(out[23:], uint32(count-1)) // last offset delta
	binary.BigEndian.PutUint32(out[57:], uint32(count))
	RecomputeCRC(out)
	return out
}

// TestValidateCompressedAsKafka checks the codes of compressed batches whose
// CRC is right but whose payload is not: each row is what Apache Kafka 4.4
// answered to the same Produce (v9, acks=all) on 2026-12-07, for each of
// gzip, snappy, lz4 and zstd (a probe of raw kmsg Produce requests against
// kafka-ref.sh's single node; bench/README.md "Other workloads (stop 30)").
func TestValidateCompressedAsKafka(t *testing.T) {
	raw := func(n int) []byte { return mustBatch(t, testSpec(CompressionNone, n))[BatchHeaderSize:] }
	garbage := make([]byte, 40)
	for i := range garbage {
		garbage[i] = byte(i*37 + 11)
	}
	for _, c := range allCodecs[1:] {
		comp := func(b []byte) []byte {
			out, err := Compress(c, b)
			if err != nil {
				t.Fatal(err)
			}
			return out
		}
		good := mustBatch(t, testSpec(c, 3))
		longLen := raw(3)
		longLen[0] = 0x7e // the first record claims 63 bytes: Kafka does not hold fields to the length
		negLen := raw(3)
		negLen[0] = 0x01 // -1
		emptyCode := kerr.UnknownServerError.Code
		if c == CompressionZstd {
			emptyCode = kerr.InvalidRecord.Code // an empty zstd input decodes to nothing: premature EOF
		}
		cases := []struct {
			name string
			b    []byte
			code int16
		}{
			{"good", good, 0},
			{"garbage payload", withCompressedBody(good, garbage, 3), kerr.UnknownServerError.Code},
			{"count 3 holds 2", withCompressedBody(good, comp(raw(2)), 3), kerr.InvalidRecord.Code},
			{"count 2 holds 3", withCompressedBody(good, comp(raw(3)), 2), kerr.InvalidRecord.Code},
			{"trailing bytes", withCompressedBody(good, comp(append(raw(3), 1, 2, 3)), 3), kerr.InvalidRecord.Code},
			{"record longer than its fields", withCompressedBody(good, comp(longLen), 3), 0},
			{"negative record length", withCompressedBody(good, comp(negLen), 3), kerr.InvalidRecord.Code},
			{"truncated payload", withCompressedBody(good, good[BatchHeaderSize:len(good)-4], 3), kerr.UnknownServerError.Code},
			{"empty payload", withCompressedBody(good, nil, 3), emptyCode},
		}
		for _, tc := range cases {
			t.Run(c.String()+"/"+tc.name, func(t *testing.T) {
				_, err := ValidateProduce(tc.b, ValidateOptions{ProduceVersion: 9, DeepValidate: true})
				var code int16
				if err != nil {
					code = err.(*BatchError).Code
				}
				if code != tc.code {
					t.Fatalf("code %d (%v), want %d", code, err, tc.code)
				}
			})
		}
	}
}

// TestCheckCompressedRecordsBounded feeds checkCompressedRecords every
// prefix and a byte flip at every position of good records: it must never
// read past the body nor accept a prefix.
func TestCheckCompressedRecordsBounded(t *testing.T) {
	body := mustBatch(t, testSpec(CompressionNone, 5))[BatchHeaderSize:]
	if err := checkCompressedRecords(body, 5); err != nil {
		t.Fatal(err)
	}
	for i := range body {
		if err := checkCompressedRecords(body[:i], 5); err == nil || err.Code != kerr.InvalidRecord.Code {
			t.Fatalf("prefix of %d bytes: %v", i, err)
		}
		b := append([]byte(nil), body...)
		b[i] ^= 0xff
		if err := checkCompressedRecords(b, 5); err != nil && err.Code != kerr.InvalidRecord.Code {
			t.Fatalf("flip at %d: %v", i, err)
		}
	}
}
