package broker

import (
	"context"
	"encoding/binary"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/wire"
)

// TestProduceCheckedAsReadAnswersAsBefore: a Produce request large enough
// for the connection's reader to check its batches as they arrive
// (wire.ProduceScan, over scanMinBody) gets the answers of the handler's
// own checks, for every version family: a good batch is appended, a batch
// with a bad CRC is CORRUPT_MESSAGE, one whose records do not match its
// count (CRC right) is INVALID_RECORD, whatever the piece sizes the bytes
// arrive in.
func TestProduceCheckedAsReadAnswersAsBefore(t *testing.T) {
	n := startTestNode(t, t.TempDir())
	t.Cleanup(func() { closeTestNode(t, n) })
	addr := n.Addrs()[0].String()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	created, err := adm.CreateTopic(ctx, 4, 1, nil, "scan")
	if err != nil || created.Err != nil {
		t.Fatal(err, created.Err)
	}
	batch := func(records int) []byte {
		recs := make([]wire.Record, records)
		for i := range recs {
			recs[i] = wire.Record{Key: []byte{byte(i)}, Value: make([]byte, 1000+i%7)}
		}
		b, err := wire.EncodeBatch(wire.BatchSpec{ProducerID: -1, BaseSequence: -1, BaseTimestamp: time.Now().UnixMilli(), Records: recs})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	good := batch(300) // about 300 KiB: the request is over scanMinBody
	badCRC := append([]byte(nil), good...)
	badCRC[len(badCRC)-1] ^= 1
	badCount := append([]byte(nil), good...)
	binary.BigEndian.PutUint32(badCount[23:], 298) // LastOffsetDelta
	binary.BigEndian.PutUint32(badCount[57:], 299) // NumRecords
	wire.RecomputeCRC(badCount)
	small := batch(3)
	fields := [][]byte{good, badCRC, badCount, small}
	wantCodes := []int16{0, kerr.CorruptMessage.Code, kerr.InvalidRecord.Code, 0}

	var wantEnd [4]int64
	for _, v := range []int16{3, 8, 9, 12, 13} {
		req := kmsg.NewPtrProduceRequest()
		req.Acks, req.TimeoutMillis = -1, 30000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic, rt.TopicID = "scan", created.ID
		for p, f := range fields {
			rp := kmsg.NewProduceRequestTopicPartition()
			rp.Partition, rp.Records = int32(p), f
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
		c := dialRaw(t, addr)
		req.SetVersion(v)
		c.corr++
		frame := c.fmtr.AppendRequest(nil, req, c.corr)
		if len(frame) < scanMinBody {
			t.Fatalf("request of %d bytes, under scanMinBody", len(frame))
		}
		// In pieces, so that the reader scans partial bodies.
		for off, step := 0, 1+int(v)*4099; off < len(frame); off += step {
			if _, err := c.nc.Write(frame[off:min(len(frame), off+step)]); err != nil {
				t.Fatal(err)
			}
		}
		resp, err := c.readResponse(req, c.corr)
		if err != nil {
			t.Fatalf("v%d: %v", v, err)
		}
		parts := resp.(*kmsg.ProduceResponse).Topics[0].Partitions
		for i, p := range parts {
			if p.ErrorCode != wantCodes[i] {
				t.Errorf("v%d partition %d: error %d, want %d", v, p.Partition, p.ErrorCode, wantCodes[i])
			}
			if p.ErrorCode == 0 && p.BaseOffset != wantEnd[i] {
				t.Errorf("v%d partition %d: base offset %d, want %d", v, p.Partition, p.BaseOffset, wantEnd[i])
			}
		}
		wantEnd[0] += 300
		wantEnd[3] += 3
	}
	ends, err := adm.ListEndOffsets(ctx, "scan")
	if err != nil {
		t.Fatal(err)
	}
	for p, want := range wantEnd {
		if o, _ := ends.Lookup("scan", int32(p)); o.Offset != want {
			t.Errorf("partition %d ends at %d, want %d", p, o.Offset, want)
		}
	}
}
