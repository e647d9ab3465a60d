package wire

import (
	"encoding/binary"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// produceFrame encodes req (its version set) with a request header, as a
// client sends it after the size prefix.
func produceFrame(req *kmsg.ProduceRequest, clientID string) []byte {
	b := binary.BigEndian.AppendUint16(nil, 0)
	b = binary.BigEndian.AppendUint16(b, uint16(req.Version))
	b = binary.BigEndian.AppendUint32(b, 7)
	b = binary.BigEndian.AppendUint16(b, uint16(len(clientID)))
	b = append(b, clientID...)
	if req.IsFlexible() {
		b = append(b, 1, 9, 2, 'x', 'y') // one header tag: 9, "xy"
	}
	return req.AppendTo(b)
}

// scanTestRequest builds a Produce request of version v whose partitions
// carry: a large uncompressed batch, a small one, a large batch with a bad
// CRC, a large lz4 one, null records, two batches in one field and a
// large batch whose records do not match its count.
func scanTestRequest(t *testing.T, v int16) (*kmsg.ProduceRequest, []string) {
	big := testSpec(CompressionNone, 60) // about 18 KiB of values
	good := mustBatch(t, big)
	small := mustBatch(t, testSpec(CompressionNone, 3))
	badCRC := edit(good, false, func(b []byte) []byte { b[len(b)-1] ^= 1; return b })
	lz := big
	lz.Compression = CompressionLZ4
	lz4b := mustBatch(t, lz)
	badCount := edit(good, true, func(b []byte) []byte {
		binary.BigEndian.PutUint32(b[57:], 59) // NumRecords
		binary.BigEndian.PutUint32(b[23:], 58) // LastOffsetDelta
		return b
	})
	fields := [][]byte{good, small, badCRC, lz4b, nil, append(append([]byte(nil), good...), good...), badCount}
	names := []string{"good", "small", "bad crc", "lz4", "null", "two batches", "bad count"}
	req := kmsg.NewPtrProduceRequest()
	req.Version = v
	txn := "txn"
	req.TransactionID = &txn
	req.Acks = -1
	req.TimeoutMillis = 30000
	for ti := range 2 {
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = "topic-" + string(rune('a'+ti))
		rt.TopicID = [16]byte{byte(ti + 1)}
		for pi, f := range fields {
			rp := kmsg.NewProduceRequestTopicPartition()
			rp.Partition = int32(pi)
			rp.Records = f
			if v >= 9 && pi%2 == 0 {
				rp.UnknownTags.Set(3, []byte("tag"))
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		if v >= 9 && ti == 1 {
			rt.UnknownTags.Set(5, []byte("topic tag"))
		}
		req.Topics = append(req.Topics, rt)
	}
	// A topic without partitions between them.
	empty := kmsg.NewProduceRequestTopic()
	empty.Topic = "empty"
	req.Topics = append(req.Topics[:1], append([]kmsg.ProduceRequestTopic{empty}, req.Topics[1:]...)...)
	return req, names
}

// TestProduceScanFindsEveryBatch feeds Produce requests of every version
// to a ProduceScan in pieces of random sizes and checks that it reports
// exactly the large records fields whose batch passes PrecheckBatch, at
// the place the request decoder finds them, and that ValidateProduce
// answers the same with and without the checks it reports.
func TestProduceScanFindsEveryBatch(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for v := int16(3); v <= 13; v++ {
		req, names := scanTestRequest(t, v)
		frame := produceFrame(req, "client-1")
		for round := range 20 {
			var s ProduceScan
			switch round {
			case 0:
				s.Advance(frame) // all at once
			case 1:
				for n := 1; n <= len(frame); n++ { // a byte at a time
					s.Advance(frame[:n])
				}
			default:
				for n := 0; n < len(frame); {
					n = min(len(frame), n+1+rng.IntN(4096))
					s.Advance(frame[:n])
				}
			}
			_, parsed, err := ParseRequest(frame)
			if err != nil {
				t.Fatalf("v%d: %v", v, err)
			}
			want := 0
			for _, rt := range parsed.(*kmsg.ProduceRequest).Topics {
				for i, rp := range rt.Partitions {
					wantCRC, wantWalked := false, false
					if len(rp.Records) >= minChecked {
						wantCRC, wantWalked = PrecheckBatch(rp.Records)
					}
					if wantCRC {
						want++
					}
					if exp := map[string][2]bool{"good": {true, true}, "lz4": {true, false}, "bad count": {true, false}, "bad crc": {false, false}}[names[i]]; names[i] != "small" && names[i] != "null" && names[i] != "two batches" && exp != [2]bool{wantCRC, wantWalked} {
						t.Fatalf("%s: PrecheckBatch says %v %v, want %v", names[i], wantCRC, wantWalked, exp)
					}
					crcOK, walked := Prechecked(frame, s.Checked, rp.Records)
					if crcOK != wantCRC || walked != wantWalked {
						t.Fatalf("v%d round %d, %s: prechecked %v %v, want %v %v", v, round, names[i], crcOK, walked, wantCRC, wantWalked)
					}
					opts := ValidateOptions{ProduceVersion: v, DeepValidate: true}
					h1, err1 := ValidateProduce(rp.Records, opts)
					opts.CRCChecked, opts.RecordsChecked = crcOK, walked
					h2, err2 := ValidateProduce(rp.Records, opts)
					if !reflect.DeepEqual(h1, h2) || !reflect.DeepEqual(err1, err2) {
						t.Fatalf("v%d, %s: ValidateProduce %v %v without the precheck, %v %v with it", v, names[i], h1, err1, h2, err2)
					}
				}
			}
			// good, lz4 and bad count in each of the two topics.
			if len(s.Checked) != want || want != 6 {
				t.Fatalf("v%d round %d: %d checked, want %d (6)", v, round, len(s.Checked), want)
			}
		}
	}
}

// TestProduceScanOtherRequests: a request other than Produce v3-13, or a
// SASL token, yields nothing.
func TestProduceScanOtherRequests(t *testing.T) {
	req, _ := scanTestRequest(t, 9)
	frame := produceFrame(req, "c")
	for _, b := range [][]byte{
		append([]byte{0, 1}, frame[2:]...),       // Fetch's key
		append([]byte{0, 0, 0, 2}, frame[4:]...), // Produce v2
		append([]byte{0, 0, 0, 14}, frame[4:]...),
		frame[:7],
	} {
		var s ProduceScan
		s.Advance(b)
		if len(s.Checked) != 0 {
			t.Fatalf("%x...: %d checked", b[:8], len(s.Checked))
		}
	}
}

// TestValidateProducePrecheckFirstBatchOnly: the precheck flags cover the
// first batch only when it is the whole field; a second batch (Produce
// v0-2 layouts, refused for v3+) is always checked.
func TestValidateProducePrecheckFirstBatchOnly(t *testing.T) {
	good := mustBatch(t, testSpec(CompressionNone, 10))
	bad := edit(good, false, func(b []byte) []byte { b[len(b)-1] ^= 1; return b })
	opts := ValidateOptions{ProduceVersion: 2, CRCChecked: true, RecordsChecked: true}
	if _, err := ValidateProduce(append(append([]byte(nil), good...), bad...), opts); err == nil {
		t.Fatal("the second batch's bad CRC passed")
	}
	// The whole field is not the first batch: its CRC is computed.
	if _, err := ValidateProduce(append(append([]byte(nil), bad...), good...), opts); err == nil {
		t.Fatal("the first batch's bad CRC passed")
	}
}

// FuzzProduceScan: on any bytes, fed in any pieces, a ProduceScan does
// not panic and reports only fields that are one batch passing
// PrecheckBatch, inside the body.
func FuzzProduceScan(f *testing.F) {
	for _, v := range []int16{3, 8, 9, 13} {
		req, _ := scanTestRequest(&testing.T{}, v)
		f.Add(produceFrame(req, "c"), uint16(977))
	}
	f.Add([]byte{0, 0, 0, 9, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0}, uint16(1))
	f.Fuzz(func(t *testing.T, body []byte, step uint16) {
		var s ProduceScan
		for n := 0; n < len(body); {
			n = min(len(body), n+1+int(step))
			s.Advance(body[:n])
		}
		for _, c := range s.Checked {
			if c.Off < 0 || c.Len < minChecked || c.Off+c.Len > len(body) {
				t.Fatalf("checked %+v outside a body of %d bytes", c, len(body))
			}
			crcOK, walked := PrecheckBatch(body[c.Off : c.Off+c.Len])
			if !crcOK || walked != c.Walked {
				t.Fatalf("checked %+v, PrecheckBatch says %v %v", c, crcOK, walked)
			}
		}
	})
}
