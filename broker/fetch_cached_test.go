package broker

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/wire"
)

// TestSmallFetchFromCachedBytes: a fetch whose ranges storage returned
// with their bytes (a consumer near the log end) is encoded as a plain
// response with those bytes (encodeCachedFetch), larger ones with file
// ranges. For every Fetch version served, small fetches at several offsets
// of two partitions must carry exactly the bytes a large fetch carries at
// the same place, and every response must be what kmsg encodes for what it
// decodes to (no framing byte off).
func TestSmallFetchFromCachedBytes(t *testing.T) {
	n := startTestNode(t, t.TempDir())
	defer closeTestNode(t, n)
	addr := n.Addrs()[0].String()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic("cached"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 2, 1, nil, "cached"); err != nil {
		t.Fatal(err)
	}
	const records = 40
	for i := range records {
		for p := range int32(2) {
			v := []byte(fmt.Sprintf("record %d of partition %d %s", i, p, bytes.Repeat([]byte{'x'}, i*7)))
			if err := cl.ProduceSync(ctx, &kgo.Record{Partition: p, Value: v}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	fetch := func(v int16, offset int64, maxBytes int32) *kmsg.FetchRequest {
		req := kmsg.NewPtrFetchRequest()
		req.ReplicaID, req.MaxBytes = -1, 1<<20
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = "cached"
		for p := range int32(2) {
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = p, offset, maxBytes
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
		req.SetVersion(v)
		return req
	}
	c := dialRaw(t, addr)
	roundTrip := func(req *kmsg.FetchRequest) *kmsg.FetchResponse {
		t.Helper()
		corr := c.send(req, req.GetVersion())
		frame, err := c.readFrame()
		if err != nil {
			t.Fatal(err)
		}
		resp := req.ResponseKind().(*kmsg.FetchResponse)
		resp.SetVersion(req.GetVersion())
		body := frame[4:]
		if req.IsFlexible() {
			body = body[1:]
		}
		if err := resp.ReadFrom(body); err != nil {
			t.Fatalf("v%d: %v", req.GetVersion(), err)
		}
		again := resp.AppendTo(nil)
		if !bytes.Equal(again, body) {
			t.Fatalf("v%d offset %d: %d response bytes, kmsg encodes what they decode to in %d", req.GetVersion(), req.Topics[0].Partitions[0].FetchOffset, len(body), len(again))
		}
		if got := int32(frame[0])<<24 | int32(frame[1])<<16 | int32(frame[2])<<8 | int32(frame[3]); got != corr {
			t.Fatalf("correlation id %d, want %d", got, corr)
		}
		return resp
	}
	// One fetch of everything: the reference bytes of each partition.
	full := roundTrip(fetch(11, 0, 1<<20))
	var all [2][]byte
	for _, p := range full.Topics[0].Partitions {
		all[p.Partition] = p.RecordBatches
	}
	for v := int16(4); v <= 12; v++ { // topics by name (v13+ by id)
		for _, offset := range []int64{0, 5, records - 3, records - 1} {
			resp := roundTrip(fetch(v, offset, 600))
			for _, p := range resp.Topics[0].Partitions {
				// The batches from the one holding offset on, whole,
				// and, where the next one did not fit, its start up to
				// the partition limit (600), as Kafka fills a fetch.
				got, part := p.RecordBatches, all[p.Partition]
				at, ends := -1, map[int]bool{}
				for pos := 0; pos < len(part); {
					h, err := wire.ParseBatchHeader(part[pos:])
					if err != nil {
						t.Fatal(err)
					}
					if at < 0 && h.LastOffset() >= offset {
						at = pos
					}
					pos += h.TotalSize()
					ends[pos] = true
				}
				if len(got) == 0 || at < 0 || !bytes.HasPrefix(part[at:], got) || !ends[at+len(got)] && (len(got) != 600 || len(part)-at <= 600) {
					t.Fatalf("v%d offset %d partition %d: %d record bytes are not the whole batches from offset %d on, filled to the limit", v, offset, p.Partition, len(got), offset)
				}
				if len(part)-at > 600 && len(got) < 600 {
					t.Fatalf("v%d offset %d partition %d: %d record bytes, want the limit (600) filled", v, offset, p.Partition, len(got))
				}
			}
		}
	}
}
