package main

import (
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// joined joins group with a fresh member id and heartbeats until the
// member has an assignment (or 20 s pass); it returns the member id and epoch.
func (p *prober) joined(group string, topics []string, verbose bool) (string, int32) {
	m := memberID()
	hb := p.heartbeat("heartbeat join "+group, group, m, 0, topics)
	if hb == nil {
		return m, 0
	}
	epoch := hb.MemberEpoch
	deadline := time.Now().Add(20 * time.Second)
	for (hb.Assignment == nil || len(hb.Assignment.TopicPartitions) == 0) && time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
		hb = p.heartbeat("heartbeat poll "+group, group, m, epoch, topics)
		if hb == nil {
			break
		}
		epoch = hb.MemberEpoch
	}
	return m, epoch
}

func (p *prober) groupScenario() {
	run := strconv.FormatInt(time.Now().Unix()%100000, 10)
	topic, g := "sf-a-"+run, "sf-g1-"+run
	tid := p.mustTopic(topic, 1)
	p.produceBatches(topic, 3, 3, "before")
	p.findCoordinator("FindCoordinator group", 0, g)
	p.heartbeat("heartbeat with empty member id", g, "", 0, []string{topic})
	p.heartbeat("heartbeat unknown member epoch 5", g, memberID(), 5, []string{topic})
	p.heartbeat("heartbeat join without topics", g+"x", memberID(), 0, nil)
	p.heartbeat("heartbeat join with member id 37 chars", g+"y", strings.Repeat("a", 37), 0, []string{topic})
	m, epoch := p.joined(g, []string{topic}, true)
	p.heartbeat("heartbeat same epoch again", g, m, epoch, nil)
	p.heartbeat("heartbeat stale epoch", g, m, epoch-1, nil)
	p.heartbeat("heartbeat future epoch", g, m, epoch+5, nil)
	d := kmsg.NewPtrShareGroupDescribeRequest()
	d.GroupIDs = []string{g, "sf-nope"}
	d.IncludeAuthorizedOperations = true
	p.send("ShareGroupDescribe", d)

	p.fetch("fetch epoch 0, fresh group (latest), records 0-8 produced before join", g, m, 0, tid, []int32{0}, nil, 1000)
	p.produceBatches(topic, 3, 3, "after")
	p.fetch("fetch epoch 1 after producing 9-17 in 3 batches", g, m, 1, tid, []int32{0}, nil, 3000)
	p.acknowledge("ack epoch 2: accept 9-11 release 12-14 reject 15-17", g, m, 2, tid, []kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch{
		ackBatch(9, 11, 1), ackBatch(12, 14, 2), ackBatch(15, 17, 3),
	})
	p.fetch("fetch epoch 3 (no topics in request; session has the partition) after release", g, m, 3, tid, nil, nil, 2000)
	p.acknowledge("ack epoch 4: offset 0 never acquired", g, m, 4, tid, []kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch{ackBatch(0, 0, 1)})
	p.acknowledge("ack epoch 5: offset 9 already accepted", g, m, 5, tid, []kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch{ackBatch(9, 9, 1)})
	p.acknowledge("ack epoch 6: 12-14 per-offset types accept,release,reject", g, m, 6, tid, []kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch{ackBatch(12, 14, 1, 2, 3)})
	p.fetch("fetch epoch 7 after mixed ack", g, m, 7, tid, nil, nil, 2000)
	p.fetch("fetch epoch 8 with ack gap type 0 for 13", g, m, 8, tid, nil, nil, 500)
	p.acknowledge("ack epoch 9: offset 13 type 0 (gap)", g, m, 9, tid, []kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch{ackBatch(13, 13, 0)})
	p.acknowledge("ack epoch 10: offset 13 type 4 (invalid)", g, m, 10, tid, []kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch{ackBatch(13, 13, 4)})
	p.fetch("fetch bad session epoch 99", g, m, 99, tid, nil, nil, 500)
	p.acknowledge("ack bad session epoch 99", g, m, 99, tid, []kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch{ackBatch(13, 13, 1)})
	p.fetch("fetch epoch 0 again (new session, same member)", g, m, 0, tid, []int32{0}, nil, 500)
	p.acknowledge("ack epoch 0", g, m, 0, tid, []kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch{ackBatch(13, 13, 1)})
	p.fetch("fetch unknown member epoch 0", g, memberID(), 0, tid, []int32{0}, nil, 500)
	p.fetch("fetch unknown member epoch 1", g, memberID(), 1, tid, []int32{0}, nil, 500)
	p.fetch("fetch unknown topic id epoch 1 (session exists)", g, m, 1, [16]byte{1, 2, 3}, []int32{0}, nil, 500)
	p.fetch("fetch partition 5 of the topic epoch 2", g, m, 2, tid, []int32{5}, nil, 500)
	p.fetch("fetch epoch -1 close session", g, m, -1, tid, nil, nil, 500)
	p.fetch("fetch in unknown group", "sf-nogroup", m, 0, tid, []int32{0}, nil, 500)
	p.heartbeat("heartbeat leave", g, m, -1, nil)
	p.heartbeat("heartbeat after leave", g, m, epoch, nil)
	p.send("ShareGroupDescribe after leave", d)
}

// findCoordinator asks FindCoordinator (v6, batched keys) for keys of keyType
// and polls until every key has a coordinator (or 30 s pass).
func (p *prober) findCoordinator(label string, keyType int8, keys ...string) {
	deadline := time.Now().Add(30 * time.Second)
	for {
		r := kmsg.NewPtrFindCoordinatorRequest()
		r.CoordinatorType = keyType
		r.CoordinatorKeys = keys
		resp, err := p.cl.Request(p.ctx, r)
		ok := err == nil
		if ok {
			for _, c := range resp.(*kmsg.FindCoordinatorResponse).Coordinators {
				ok = ok && c.ErrorCode == 0
			}
		}
		if ok || time.Now().After(deadline) {
			p.show(label, resp)
			return
		}
		p.show(label+" (retrying)", resp)
		time.Sleep(500 * time.Millisecond)
	}
}
