package main

import (
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// moreScenario covers MaxRecords smaller than a batch, acknowledgements
// piggy-backed on ShareFetch, two members of one group and the
// acquisition lock timeout.
func (p *prober) moreScenario() {
	run := strconv.FormatInt(time.Now().Unix()%100000, 10)
	topic, g := "sf-c-"+run, "sf-g4-"+run
	tid := p.mustTopic(topic, 1)
	p.produceBatches(topic, 3, 3, "c")
	p.findCoordinator("FindCoordinator group", 0, g)
	p.setGroupConfig(g, "share.auto.offset.reset", "earliest", "share.record.lock.duration.ms", "15000")
	m, _ := p.joined(g, []string{topic}, false)
	r := kmsg.NewPtrShareFetchRequest()
	r.GroupID, r.MemberID = kmsg.StringPtr(g), kmsg.StringPtr(m)
	r.MaxWaitMillis, r.MinBytes, r.MaxBytes, r.MaxRecords, r.BatchSize = 3000, 1, 1<<20, 2, 2
	t := kmsg.NewShareFetchRequestTopic()
	t.TopicID = tid
	pp := kmsg.NewShareFetchRequestTopicPartition()
	pp.PartitionMaxBytes = 1 << 20
	t.Partitions = append(t.Partitions, pp)
	r.Topics = append(r.Topics, t)
	p.fetchRaw("fetch MaxRecords=2 BatchSize=2 (batches of 3)", r)
	r.ShareSessionEpoch = 1
	r.MaxRecords, r.BatchSize = 500, 500
	r.Topics[0].Partitions[0].AcknowledgementBatches = []kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch{ackBatch(0, 0, 1), ackBatch(1, 1, 2)}
	p.fetchRaw("fetch with piggy-backed acks accept 0 release 1", r)
	r.ShareSessionEpoch = 2
	r.Topics[0].Partitions[0].AcknowledgementBatches = []kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch{ackBatch(50, 50, 1)}
	r.MaxWaitMillis = 500
	p.fetchRaw("fetch with a bad piggy-backed ack (offset 50)", r)

	// Second member: assignment shape with one partition and two members.
	m2, _ := p.joined(g, []string{topic}, false)
	d := kmsg.NewPtrShareGroupDescribeRequest()
	d.GroupIDs = []string{g}
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := p.broker().Request(p.ctx, d)
		if err == nil {
			gr := resp.(*kmsg.ShareGroupDescribeResponse).Groups[0]
			n := 0
			for _, mm := range gr.Members {
				if len(mm.Assignment.TopicPartitions) > 0 {
					n++
				}
			}
			if n == 2 {
				break
			}
		}
		time.Sleep(300 * time.Millisecond)
	}
	p.send("ShareGroupDescribe two members one partition", d)
	r2 := kmsg.NewPtrShareFetchRequest()
	*r2 = *r
	r2.MemberID = kmsg.StringPtr(m2)
	r2.ShareSessionEpoch = 0
	r2.Topics = []kmsg.ShareFetchRequestTopic{{TopicID: tid, Partitions: []kmsg.ShareFetchRequestTopicPartition{{Partition: 0, PartitionMaxBytes: 1 << 20}}}}
	r2.MaxWaitMillis = 1000
	p.fetchRaw("member 2 fetch while member 1 holds locks", r2)

	// Lock timeout: member 1's records acquired at epoch 1 time out after 15 s.
	start := time.Now()
	r2.ShareSessionEpoch = 1
	r2.MaxWaitMillis = 5000
	for time.Since(start) < 40*time.Second {
		resp, err := p.broker().Request(p.ctx, r2)
		if err == nil && hasAcquired(resp.(*kmsg.ShareFetchResponse)) {
			println("lock timeout: member 2 got records after", time.Since(start).Round(time.Second).String())
			p.showFetch("member 2 fetch after member 1's lock timed out", resp.(*kmsg.ShareFetchResponse))
			break
		}
		r2.ShareSessionEpoch++
	}
	p.heartbeat("heartbeat of member 1 after its locks expired", g, m, 4, nil)
}

func hasAcquired(r *kmsg.ShareFetchResponse) bool {
	for _, t := range r.Topics {
		for _, p := range t.Partitions {
			if len(p.AcquiredRecords) > 0 {
				return true
			}
		}
	}
	return false
}

func (p *prober) fetchRaw(label string, r *kmsg.ShareFetchRequest) {
	resp, err := p.broker().Request(p.ctx, r)
	if err != nil {
		println(label, err.Error())
		return
	}
	p.showFetch(label, resp.(*kmsg.ShareFetchResponse))
}
