package main

import (
	"fmt"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// gapsScenario covers what session 27 closed on the partition leader:
// BatchSize splitting AcquiredRecords (KIP-1206), the group config
// share.renew.acknowledge.enable, and a share session whose connection
// closes without a goodbye.
func (p *prober) gapsScenario() {
	run := strconv.FormatInt(time.Now().Unix()%100000, 10)
	topic, g := "sf-gaps-"+run, "sf-ggaps-"+run
	tid := p.mustTopic(topic, 1)
	p.produceBatches(topic, 4, 3, "gaps") // offsets 0-11 in batches of 3
	p.findCoordinator("FindCoordinator group", 0, g)
	p.setGroupConfig(g, "share.auto.offset.reset", "earliest", "share.renew.acknowledge.enable", "false", "share.record.lock.duration.ms", "60000")
	m, _ := p.joined(g, []string{topic}, false)
	r := kmsg.NewPtrShareFetchRequest()
	r.GroupID, r.MemberID = kmsg.StringPtr(g), kmsg.StringPtr(m)
	r.MaxWaitMillis, r.MinBytes, r.MaxBytes, r.MaxRecords, r.BatchSize = 3000, 1, 1<<20, 500, 5
	r.Topics = []kmsg.ShareFetchRequestTopic{{TopicID: tid, Partitions: []kmsg.ShareFetchRequestTopicPartition{{Partition: 0, PartitionMaxBytes: 1 << 20}}}}
	p.fetchRaw("batch_optimized, BatchSize 5, 4 batches of 3", r)

	a := kmsg.NewPtrShareAcknowledgeRequest()
	a.GroupID, a.MemberID, a.ShareSessionEpoch = kmsg.StringPtr(g), kmsg.StringPtr(m), 1
	a.IsRenewAck = true
	a.Topics = []kmsg.ShareAcknowledgeRequestTopic{{TopicID: tid, Partitions: []kmsg.ShareAcknowledgeRequestTopicPartition{{Partition: 0,
		AcknowledgementBatches: []kmsg.ShareAcknowledgeRequestTopicPartitionAcknowledgementBatch{{FirstOffset: 0, LastOffset: 0, AcknowledgeTypes: []int8{1}}, {FirstOffset: 1, LastOffset: 1, AcknowledgeTypes: []int8{4}}}}}}}
	p.send("renew disabled: IsRenewAck, accept 0 and renew 1", a)
	a.ShareSessionEpoch = 2
	a.IsRenewAck = false
	a.Topics[0].Partitions[0].AcknowledgementBatches = a.Topics[0].Partitions[0].AcknowledgementBatches[:1]
	p.send("then accept 0 alone (was it applied by the refused request?)", a)
	a.ShareSessionEpoch = 3
	a.IsRenewAck = true
	a.Topics[0].Partitions[0].AcknowledgementBatches = []kmsg.ShareAcknowledgeRequestTopicPartitionAcknowledgementBatch{{FirstOffset: 6, LastOffset: 11, AcknowledgeTypes: []int8{4}}}
	p.send("renew disabled: renew 6-11 (a whole in-flight batch)", a)
	a.ShareSessionEpoch = 4
	a.IsRenewAck = false
	a.Topics[0].Partitions[0].AcknowledgementBatches = []kmsg.ShareAcknowledgeRequestTopicPartitionAcknowledgementBatch{{FirstOffset: 1, LastOffset: 11, AcknowledgeTypes: []int8{2}}}
	p.send("release 1-11", a)
	r.ShareSessionEpoch = 5
	r.Topics = nil
	p.fetchRaw("redelivery of 1-11 with BatchSize 5", r)

	// Member B on another client takes 1-11... then its connections
	// close without a goodbye; the first member must get them again.
	other, err := kgo.NewClient(kgo.SeedBrokers(p.cl.OptValue(kgo.SeedBrokers).([]string)...))
	if err != nil {
		fmt.Println("client:", err)
		return
	}
	a.ShareSessionEpoch = 6
	a.Topics[0].Partitions[0].AcknowledgementBatches = []kmsg.ShareAcknowledgeRequestTopicPartitionAcknowledgementBatch{{FirstOffset: 1, LastOffset: 11, AcknowledgeTypes: []int8{2}}}
	p.send("release 1-11 again", a)
	mb, _ := p.joined(g, []string{topic}, false)
	rb := kmsg.NewPtrShareFetchRequest()
	rb.GroupID, rb.MemberID = kmsg.StringPtr(g), kmsg.StringPtr(mb)
	rb.MaxWaitMillis, rb.MinBytes, rb.MaxBytes, rb.MaxRecords, rb.BatchSize = 3000, 1, 1<<20, 500, 500
	rb.Topics = []kmsg.ShareFetchRequestTopic{{TopicID: tid, Partitions: []kmsg.ShareFetchRequestTopicPartition{{Partition: 0, PartitionMaxBytes: 1 << 20}}}}
	resp, err := other.Broker(1).Request(p.ctx, rb)
	if err != nil {
		fmt.Println("B's fetch:", err)
		other.Close()
		return
	}
	p.showFetch("B (own connection) fetches", resp.(*kmsg.ShareFetchResponse))
	other.Close()
	closed := time.Now()
	for epoch := int32(7); time.Since(closed) < 70*time.Second; epoch++ {
		r.ShareSessionEpoch = epoch
		r.MaxWaitMillis = 1000
		fr, err := p.broker().Request(p.ctx, r)
		if err != nil {
			fmt.Println("A's fetch:", err)
			return
		}
		if hasAcquired(fr.(*kmsg.ShareFetchResponse)) {
			p.showFetch(fmt.Sprintf("A fetches after B's connection closed (%v later)", time.Since(closed).Round(100*time.Millisecond)), fr.(*kmsg.ShareFetchResponse))
			break
		}
	}
}
