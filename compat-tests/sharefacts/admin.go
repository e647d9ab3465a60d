package main

import (
	"fmt"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func (p *prober) setGroupConfig(group string, kv ...string) {
	a := kmsg.NewPtrIncrementalAlterConfigsRequest()
	ar := kmsg.NewIncrementalAlterConfigsRequestResource()
	ar.ResourceType = kmsg.ConfigResourceTypeGroupConfig
	ar.ResourceName = group
	for i := 0; i+1 < len(kv); i += 2 {
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name = kv[i]
		c.Value = kmsg.StringPtr(kv[i+1])
		ar.Configs = append(ar.Configs, c)
	}
	a.Resources = append(a.Resources, ar)
	p.req("IncrementalAlterConfigs group "+group, a)
}

// adminScenario covers share.auto.offset.reset=earliest, the delivery
// count limit, DescribeShareGroupOffsets and the classic admin APIs on
// share groups.
func (p *prober) adminScenario() {
	run := strconv.FormatInt(time.Now().Unix()%100000, 10)
	topic, g, gNever := "sf-b-"+run, "sf-g2-"+run, "sf-g3-"+run
	tid := p.mustTopic(topic, 2)
	p.produceBatches(topic, 3, 3, "b")
	p.findCoordinator("FindCoordinator group", 0, g, gNever)
	p.setGroupConfig(g, "share.auto.offset.reset", "earliest", "share.delivery.count.limit", "2")
	m, epoch := p.joined(g, []string{topic}, false)
	p.fetch("earliest: fetch epoch 0 MaxRecords=500", g, m, 0, tid, []int32{0, 1}, nil, 3000)
	p.acknowledge("release 0-8", g, m, 1, tid, []kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch{ackBatch(0, 8, 2)})
	p.fetch("earliest: fetch again (delivery 2)", g, m, 2, tid, nil, nil, 3000)
	p.acknowledge("release 0-8 again (limit 2 reached)", g, m, 3, tid, []kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch{ackBatch(0, 8, 2)})
	p.fetch("fetch after limit: archived?", g, m, 4, tid, nil, nil, 1000)
	p.produceBatches(topic, 1, 3, "c")
	r4 := kmsg.NewPtrShareFetchRequest()
	_ = r4
	p.fetch("fetch new batch 9-11", g, m, 5, tid, nil, nil, 3000)
	p.acknowledge("ack 13 (beyond the log end)", g, m, 6, tid, []kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch{ackBatch(13, 13, 1)})
	p.acknowledge("ack 5 (archived)", g, m, 7, tid, []kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch{ackBatch(5, 5, 1)})

	// A member of gNever subscribes but never fetches.
	mNever, _ := p.joined(gNever, []string{topic}, false)

	for _, c := range []struct {
		label string
		group string
		parts []int32
	}{
		{"DescribeShareGroupOffsets partitions 0,1 (1 never fetched)", g, []int32{0, 1}},
		{"DescribeShareGroupOffsets of a group that never fetched", gNever, []int32{0, 1}},
		{"DescribeShareGroupOffsets unknown group", "sf-nope", []int32{0}},
		{"DescribeShareGroupOffsets partition 7 of a 2-partition topic", g, []int32{7}},
	} {
		dso := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
		rg := kmsg.NewDescribeShareGroupOffsetsRequestGroup()
		rg.GroupID = c.group
		t := kmsg.NewDescribeShareGroupOffsetsRequestGroupTopic()
		t.Topic = topic
		t.Partitions = c.parts
		rg.Topics = append(rg.Topics, t)
		dso.Groups = append(dso.Groups, rg)
		p.req(c.label, dso)
	}
	all := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
	for _, grp := range []string{g, gNever} {
		rg := kmsg.NewDescribeShareGroupOffsetsRequestGroup()
		rg.GroupID = grp
		all.Groups = append(all.Groups, rg)
	}
	p.req("DescribeShareGroupOffsets with null topics (all)", all)

	lg := kmsg.NewPtrListGroupsRequest()
	p.req("ListGroups (no filter)", lg)
	lg2 := kmsg.NewPtrListGroupsRequest()
	lg2.TypesFilter = []string{"share"}
	p.req("ListGroups types [share]", lg2)
	lg3 := kmsg.NewPtrListGroupsRequest()
	lg3.TypesFilter = []string{"Share"}
	lg3.StatesFilter = []string{"stable"}
	p.req("ListGroups types [Share] states [stable]", lg3)

	dg := kmsg.NewPtrDescribeGroupsRequest()
	dg.Groups = []string{g}
	p.req("DescribeGroups (classic) on a share group", dg)
	of := kmsg.NewPtrOffsetFetchRequest()
	of.Group = g
	p.req("OffsetFetch on a share group", of)
	cgd := kmsg.NewPtrConsumerGroupDescribeRequest()
	cgd.Groups = []string{g}
	p.req("ConsumerGroupDescribe on a share group", cgd)

	dele := kmsg.NewPtrDeleteGroupsRequest()
	dele.Groups = []string{g}
	p.req("DeleteGroups on a non-empty share group", dele)

	p.fetch("fetch close session", g, m, -1, tid, nil, nil, 100)
	p.heartbeat("leave", g, m, -1, nil)
	p.heartbeat("leave never", gNever, mNever, -1, nil)
	_ = epoch

	dsgo := kmsg.NewPtrDeleteShareGroupOffsetsRequest()
	dsgo.GroupID = gNever
	dt := kmsg.NewDeleteShareGroupOffsetsRequestTopic()
	dt.Topic = topic
	dsgo.Topics = append(dsgo.Topics, dt)
	dt2 := kmsg.NewDeleteShareGroupOffsetsRequestTopic()
	dt2.Topic = "sf-no-such-topic"
	dsgo.Topics = append(dsgo.Topics, dt2)
	p.req("DeleteShareGroupOffsets on empty group", dsgo)

	asgo := kmsg.NewPtrAlterShareGroupOffsetsRequest()
	asgo.GroupID = g
	at := kmsg.NewAlterShareGroupOffsetsRequestTopic()
	at.Topic = topic
	ap := kmsg.NewAlterShareGroupOffsetsRequestTopicPartition()
	ap.Partition = 0
	ap.StartOffset = 4
	at.Partitions = append(at.Partitions, ap)
	ap1 := kmsg.NewAlterShareGroupOffsetsRequestTopicPartition()
	ap1.Partition = 1
	ap1.StartOffset = -1
	at.Partitions = append(at.Partitions, ap1)
	asgo.Topics = append(asgo.Topics, at)
	p.req("AlterShareGroupOffsets p0=4 p1=-1 on empty group", asgo)
	p.req("DescribeShareGroupOffsets after alter", all)

	p.req("DescribeGroups on an empty share group", dg)
	p.req("DeleteGroups on an empty share group", dele)
	p.req("DeleteGroups again", dele)

	p.findCoordinator("FindCoordinator key type 2 (share)", 2, g+":"+topicIDString(tid)+":0")
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorType = 2
	fc.CoordinatorKeys = []string{"bad-key", g + ":" + topicIDString(tid), g + ":" + topic + ":0"}
	p.req("FindCoordinator key type 2 bad keys", fc)
	md := kmsg.NewPtrMetadataRequest()
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr("__share_group_state")
	md.Topics = append(md.Topics, mt)
	resp := p.req("Metadata __share_group_state", md)
	if resp != nil {
		for _, t := range resp.(*kmsg.MetadataResponse).Topics {
			fmt.Printf("__share_group_state: error %d internal %v partitions %d\n", t.ErrorCode, t.IsInternal, len(t.Partitions))
		}
	}
	dc := kmsg.NewPtrDescribeConfigsRequest()
	dr := kmsg.NewDescribeConfigsRequestResource()
	dr.ResourceType = kmsg.ConfigResourceTypeTopic
	dr.ResourceName = "__share_group_state"
	dc.Resources = append(dc.Resources, dr)
	cr, err := p.cl.Request(p.ctx, dc)
	if err == nil {
		for _, res := range cr.(*kmsg.DescribeConfigsResponse).Resources {
			for _, c := range res.Configs {
				if c.Source == kmsg.ConfigSourceDynamicTopicConfig && c.Value != nil {
					fmt.Printf("__share_group_state config %s=%s\n", c.Name, *c.Value)
				}
			}
		}
	}
}

func topicIDString(id [16]byte) string {
	return base64URL(id[:])
}
