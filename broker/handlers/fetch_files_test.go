package handlers

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/wire"
)

// fetchBoth runs the same Fetch with and without Request.SendFiles and
// returns both answers, the file ranges read back into RecordBatches.
func (e *sessionEnv) fetchBoth(t *testing.T, v int16, maxBytes, partMax int32, parts []fetchPos) (copied, files *kmsg.FetchResponse, ranges int) {
	t.Helper()
	run := func(sendFiles bool) kmsg.Response {
		req := kmsg.NewPtrFetchRequest()
		req.Version = v
		req.ReplicaID, req.MaxBytes, req.SessionEpoch = -1, maxBytes, -1 // sessionless
		for _, p := range parts {
			rt := kmsg.NewFetchRequestTopic()
			rt.Topic, rt.TopicID = p.topic, e.ids[p.topic]
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = p.partition, p.offset, partMax, -1
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
		}
		resp, err := handleFetch(e.d, &Request{Header: wire.RequestHeader{APIKey: req.Key(), APIVersion: v}, Body: req, SendFiles: sendFiles})
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	copied = run(false).(*kmsg.FetchResponse)
	switch r := run(true).(type) {
	case *kmsg.FetchResponse:
		files = r
	case *FileFetch:
		defer r.Release()
		ranges = len(r.Files)
		for _, pf := range r.Files {
			p := &r.Topics[pf.Topic].Partitions[pf.Partition]
			if len(p.RecordBatches) != 0 {
				t.Fatalf("partition %d has records both in memory and in a file", p.Partition)
			}
			p.RecordBatches = make([]byte, pf.Slice.Length)
			if _, err := pf.Slice.File.ReadAt(p.RecordBatches, pf.Slice.Offset); err != nil {
				t.Fatal(err)
			}
		}
		files = r.FetchResponse
	default:
		t.Fatalf("response of type %T", r)
	}
	return copied, files, ranges
}

// TestFetchSendFilesMatchesCopy: a fetch answered with file ranges
// (Request.SendFiles, for sendfile) carries exactly the batches, offsets,
// watermarks and errors of the copying fetch, for several byte limits
// (max_bytes shared across partitions, the first batch always whole) and
// offsets, including out of range ones.
func TestFetchSendFilesMatchesCopy(t *testing.T) {
	e := newSessionEnv(t, "a", "b")
	for i := range 30 {
		e.produce(t, "a", int32(i%2), fmt.Sprintf("value-%03d-%s", i, string(make([]byte, i*10))))
		e.produce(t, "b", 0, fmt.Sprintf("b-%d", i))
	}
	sawRanges := false
	for _, v := range []int16{4, 11, 12, 13, 16, 18} {
		for _, maxBytes := range []int32{0, 100, 300, 1 << 20} {
			for _, off := range []int64{0, 3, 14, 15, 99} {
				parts := []fetchPos{{"a", 0, off}, {"a", 1, off / 2}, {"b", 0, off}, {"b", 1, 0}}
				copied, files, ranges := e.fetchBoth(t, v, maxBytes, 200, parts)
				if !reflect.DeepEqual(copied, files) {
					t.Fatalf("v%d max %d offset %d: file answer differs\ncopy:  %+v\nfiles: %+v", v, maxBytes, off, copied, files)
				}
				sawRanges = sawRanges || ranges > 0
			}
		}
	}
	if !sawRanges {
		t.Fatal("no fetch was answered with file ranges")
	}
}
