package broker

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestLargeAndSmallResponsesInOrder: requests pipelined on one connection
// alternate between fetches answered with about 300 KiB (sent with
// sendfile) and with a few KiB (copied into the response), with Metadata
// and ApiVersions between: every response must come back whole, with its
// own correlation id, in request order. (It was written for a pipeline
// that wrote small responses on the goroutine completing them and large
// ones on the writer goroutine; with two writers it failed by a hang.)
func TestLargeAndSmallResponsesInOrder(t *testing.T) {
	const small = 64 << 10
	n := startTestNode(t, t.TempDir())
	defer closeTestNode(t, n)
	addr := n.Addrs()[0].String()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic("mixed"),
		kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, nil, "mixed"); err != nil {
		t.Fatal(err)
	}
	// One record per batch, so that a small fetch gets a few of them.
	for range 300 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: make([]byte, 1000)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}

	fetch := func(maxBytes int32) *kmsg.FetchRequest {
		req := kmsg.NewPtrFetchRequest()
		req.ReplicaID, req.MaxBytes = -1, maxBytes
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = "mixed"
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.PartitionMaxBytes = maxBytes
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		return req
	}
	c := dialRaw(t, addr)
	const rounds = 3 // in flight at once: rounds*4 requests
	for round := range 5 {
		var reqs []kmsg.Request
		var corrs []int32
		for range rounds {
			for _, r := range []struct {
				req kmsg.Request
				v   int16
			}{{fetch(1 << 20), 12}, {kmsg.NewPtrMetadataRequest(), 12}, {fetch(4 << 10), 12}, {kmsg.NewPtrApiVersionsRequest(), 3}} {
				reqs = append(reqs, r.req)
				corrs = append(corrs, c.send(r.req, r.v))
			}
		}
		for i, req := range reqs {
			resp, err := c.readResponse(req, corrs[i])
			if err != nil {
				t.Fatalf("round %d, response %d (%s): %v", round, i, kmsg.NameForKey(req.Key()), err)
			}
			f, ok := resp.(*kmsg.FetchResponse)
			if !ok {
				continue
			}
			got := len(f.Topics[0].Partitions[0].RecordBatches)
			limit := int(req.(*kmsg.FetchRequest).MaxBytes)
			if limit > small && got <= small || limit < small && (got == 0 || got > limit) {
				t.Fatalf("round %d, fetch %d with max_bytes %d answered %d record bytes", round, i, limit, got)
			}
		}
	}
}
