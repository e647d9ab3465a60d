package main

import (
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// v2Scenario covers what ShareFetch and ShareAcknowledge v2 added:
// ShareAcquireMode (0 batch_optimized, 1 record_limit) and renew
// acknowledgements (IsRenewAck, acknowledge type 4).
func (p *prober) v2Scenario() {
	run := strconv.FormatInt(time.Now().Unix()%100000, 10)
	topic, g := "sf-v2-"+run, "sf-gv2-"+run
	tid := p.mustTopic(topic, 1)
	p.produceBatches(topic, 3, 3, "v2")
	p.findCoordinator("FindCoordinator group", 0, g)
	p.setGroupConfig(g, "share.auto.offset.reset", "earliest")
	m, _ := p.joined(g, []string{topic}, false)
	r := kmsg.NewPtrShareFetchRequest()
	r.GroupID, r.MemberID = kmsg.StringPtr(g), kmsg.StringPtr(m)
	r.MaxWaitMillis, r.MinBytes, r.MaxBytes, r.MaxRecords, r.BatchSize = 3000, 1, 1<<20, 2, 2
	r.ShareAcquireMode = 1
	r.Topics = []kmsg.ShareFetchRequestTopic{{TopicID: tid, Partitions: []kmsg.ShareFetchRequestTopicPartition{{Partition: 0, PartitionMaxBytes: 1 << 20}}}}
	p.fetchRaw("record_limit mode (ShareAcquireMode 1), MaxRecords 2, batches of 3", r)
	r.ShareSessionEpoch = 1
	r.ShareAcquireMode = 2
	p.fetchRaw("ShareAcquireMode 2 (undefined)", r)
	r.ShareSessionEpoch = 2
	r.ShareAcquireMode = 1
	r.MaxRecords = 4
	p.fetchRaw("record_limit MaxRecords 4", r)

	a := kmsg.NewPtrShareAcknowledgeRequest()
	a.GroupID, a.MemberID, a.ShareSessionEpoch = kmsg.StringPtr(g), kmsg.StringPtr(m), 3
	a.IsRenewAck = true
	a.Topics = []kmsg.ShareAcknowledgeRequestTopic{{TopicID: tid, Partitions: []kmsg.ShareAcknowledgeRequestTopicPartition{{Partition: 0,
		AcknowledgementBatches: []kmsg.ShareAcknowledgeRequestTopicPartitionAcknowledgementBatch{{FirstOffset: 0, LastOffset: 1, AcknowledgeTypes: []int8{4}}}}}}}
	p.send("ShareAcknowledge IsRenewAck with type 4 (renew) for 0-1", a)
	a.ShareSessionEpoch = 4
	a.IsRenewAck = false
	p.send("ShareAcknowledge type 4 without IsRenewAck", a)
	a.ShareSessionEpoch = 5
	a.IsRenewAck = true
	a.Topics[0].Partitions[0].AcknowledgementBatches[0].AcknowledgeTypes = []int8{1}
	p.send("ShareAcknowledge IsRenewAck with type 1 (accept)", a)
	r.ShareSessionEpoch = 6
	r.IsRenewAck = true
	r.Topics[0].Partitions[0].AcknowledgementBatches = []kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch{{FirstOffset: 2, LastOffset: 2, AcknowledgeTypes: []int8{4}}}
	p.fetchRaw("ShareFetch IsRenewAck with a renew ack of 2", r)
}
