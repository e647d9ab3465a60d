package broker

import (
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/wire"
)

// TestResponseSizeHintFitsFetch: a fetch response, at every version we
// serve, encodes within the capacity responseSizeHint gives, so encoding
// never grows the buffer (each growth copies every record byte again).
func TestResponseSizeHintFitsFetch(t *testing.T) {
	resp := kmsg.NewPtrFetchResponse()
	for ti := range 3 {
		rt := kmsg.NewFetchResponseTopic()
		rt.Topic = strings.Repeat("t", 200+ti)
		for p := range 4 {
			rp := kmsg.NewFetchResponseTopicPartition()
			rp.Partition = int32(p)
			rp.RecordBatches = make([]byte, 1000*p)
			for a := range p {
				at := kmsg.NewFetchResponseTopicPartitionAbortedTransaction()
				at.ProducerID, at.FirstOffset = int64(a), int64(a)
				rp.AbortedTransactions = append(rp.AbortedTransactions, at)
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	for v := int16(4); v <= 18; v++ {
		hint := responseSizeHint(resp)
		out := wire.AppendResponse(make([]byte, 0, hint), wire.RequestHeader{APIKey: int16(kmsg.Fetch), APIVersion: v}, resp)
		if len(out) > hint {
			t.Errorf("v%d: encoded %d bytes, hint %d", v, len(out), hint)
		}
	}
	if responseSizeHint(kmsg.NewPtrMetadataResponse()) != 0 {
		t.Error("hint for a metadata response")
	}
}
