package main

import (
	"fmt"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// notLeaderScenario needs several brokers: it sends ShareFetch and
// ShareAcknowledge for a partition to a broker that does not lead it, and
// ShareGroupHeartbeat to a broker that does not coordinate the group.
func (p *prober) notLeaderScenario() {
	run := strconv.FormatInt(time.Now().Unix()%100000, 10)
	topic, g := "sf-nl-"+run, "sf-gnl-"+run
	tid := p.mustTopic(topic, 1)
	p.produceBatches(topic, 1, 3, "nl")
	adm := kadm.NewClient(p.cl)
	md, err := adm.Metadata(p.ctx, topic)
	if err != nil {
		fmt.Println("metadata:", err)
		return
	}
	leader := md.Topics[topic].Partitions[0].Leader
	var other int32 = -1
	for _, b := range md.Brokers {
		if b.NodeID != leader {
			other = b.NodeID
			break
		}
	}
	fmt.Printf("partition leader %d, asking %d\n", leader, other)
	p.findCoordinator("FindCoordinator group", 0, g)
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorKeys = []string{g}
	resp, err := p.cl.Request(p.ctx, fc)
	if err != nil {
		fmt.Println(err)
		return
	}
	coord := resp.(*kmsg.FindCoordinatorResponse).Coordinators[0].NodeID
	notCoord := int32(-1)
	for _, b := range md.Brokers {
		if b.NodeID != coord {
			notCoord = b.NodeID
			break
		}
	}
	m := memberID()
	r := kmsg.NewPtrShareGroupHeartbeatRequest()
	r.GroupID, r.MemberID, r.SubscribedTopicNames = g, m, []string{topic}
	p.sendTo(notCoord, "heartbeat to a broker that is not the coordinator", r)
	p.sendTo(coord, "heartbeat join at the coordinator", r)
	f := kmsg.NewPtrShareFetchRequest()
	f.GroupID, f.MemberID = kmsg.StringPtr(g), kmsg.StringPtr(m)
	f.MaxWaitMillis, f.MinBytes, f.MaxBytes, f.MaxRecords, f.BatchSize = 500, 1, 1<<20, 500, 500
	f.Topics = []kmsg.ShareFetchRequestTopic{{TopicID: tid, Partitions: []kmsg.ShareFetchRequestTopicPartition{{Partition: 0, PartitionMaxBytes: 1 << 20}}}}
	if resp := p.sendTo(other, "ShareFetch epoch 0 to a non-leader", f); resp != nil {
		p.showFetch("ShareFetch epoch 0 to a non-leader (decoded)", resp.(*kmsg.ShareFetchResponse))
	}
	a := kmsg.NewPtrShareAcknowledgeRequest()
	a.GroupID, a.MemberID, a.ShareSessionEpoch = kmsg.StringPtr(g), kmsg.StringPtr(m), 1
	a.Topics = []kmsg.ShareAcknowledgeRequestTopic{{TopicID: tid, Partitions: []kmsg.ShareAcknowledgeRequestTopicPartition{{Partition: 0,
		AcknowledgementBatches: []kmsg.ShareAcknowledgeRequestTopicPartitionAcknowledgementBatch{{FirstOffset: 0, LastOffset: 0, AcknowledgeTypes: []int8{1}}}}}}}
	p.sendTo(other, "ShareAcknowledge epoch 1 to a non-leader", a)
}

func (p *prober) sendTo(node int32, label string, r kmsg.Request) kmsg.Response {
	resp, err := p.cl.Broker(int(node)).Request(p.ctx, r)
	if err != nil {
		fmt.Printf("### %s: error %v\n", label, err)
		return nil
	}
	p.show(fmt.Sprintf("%s (node %d)", label, node), resp)
	return resp
}
