package main

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// memberID returns a client-generated member id (a random UUID in Kafka's
// base64 form), as KIP-848 and KIP-932 clients make them.
func memberID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

func (p *prober) groupConfigs() {
	r := kmsg.NewPtrDescribeConfigsRequest()
	rr := kmsg.NewDescribeConfigsRequestResource()
	rr.ResourceType = kmsg.ConfigResourceTypeGroupConfig
	rr.ResourceName = "sf-never"
	r.Resources = append(r.Resources, rr)
	resp, err := p.cl.Request(p.ctx, r)
	if err != nil {
		fmt.Println("group configs:", err)
		return
	}
	for _, res := range resp.(*kmsg.DescribeConfigsResponse).Resources {
		fmt.Printf("group resource error %d %v\n", res.ErrorCode, res.ErrorMessage)
		for _, c := range res.Configs {
			v := "null"
			if c.Value != nil {
				v = *c.Value
			}
			fmt.Printf("group %s=%s (source %v, ro %v, type %v)\n", c.Name, v, c.Source, c.ReadOnly, c.ConfigType)
		}
	}
	bad := [][2]string{
		{"share.auto.offset.reset", "bogus"},
		{"share.record.lock.duration.ms", "999"},
		{"share.record.lock.duration.ms", "60001"},
		{"share.delivery.count.limit", "1"},
		{"share.delivery.count.limit", "11"},
		{"share.heartbeat.interval.ms", "4999"},
		{"share.session.timeout.ms", "44999"},
		{"share.isolation.level", "read_whatever"},
		{"share.partition.max.record.locks", "99"},
		{"share.no.such.config", "1"},
		{"share.auto.offset.reset", "by_duration:PT1H"},
		{"share.auto.offset.reset", "earliest"},
	}
	for _, kv := range bad {
		a := kmsg.NewPtrIncrementalAlterConfigsRequest()
		ar := kmsg.NewIncrementalAlterConfigsRequestResource()
		ar.ResourceType = kmsg.ConfigResourceTypeGroupConfig
		ar.ResourceName = "sf-never"
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name = kv[0]
		c.Value = kmsg.StringPtr(kv[1])
		c.Op = kmsg.IncrementalAlterConfigOpSet
		ar.Configs = append(ar.Configs, c)
		a.Resources = append(a.Resources, ar)
		a.ValidateOnly = true
		resp, err := p.cl.Request(p.ctx, a)
		if err != nil {
			fmt.Println("alter:", err)
			continue
		}
		for _, res := range resp.(*kmsg.IncrementalAlterConfigsResponse).Resources {
			msg := ""
			if res.ErrorMessage != nil {
				msg = *res.ErrorMessage
			}
			fmt.Printf("alter group %s=%s -> error %d %q\n", kv[0], kv[1], res.ErrorCode, msg)
		}
	}
}

func (p *prober) mustTopic(name string, parts int32) [16]byte {
	adm := kadm.NewClient(p.cl)
	_, _ = adm.CreateTopic(p.ctx, parts, 1, nil, name)
	for {
		md, err := adm.Metadata(p.ctx, name)
		if err == nil && md.Topics[name].Err == nil && len(md.Topics[name].Partitions) == int(parts) {
			return md.Topics[name].ID
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// produceBatches produces n batches of per records each to partition 0.
func (p *prober) produceBatches(topic string, n, per int, tag string) {
	for i := 0; i < n; i++ {
		var rs []*kgo.Record
		for j := 0; j < per; j++ {
			rs = append(rs, &kgo.Record{Topic: topic, Partition: 0, Value: []byte(tag + "-" + strconv.Itoa(i) + "-" + strconv.Itoa(j))})
		}
		if err := p.cl.ProduceSync(p.ctx, rs...).FirstErr(); err != nil {
			fmt.Println("produce:", err)
		}
	}
}

func (p *prober) broker() *kgo.Broker {
	return p.cl.Broker(1)
}

func (p *prober) send(label string, r kmsg.Request) kmsg.Response {
	resp, err := p.broker().Request(p.ctx, r)
	if err != nil {
		fmt.Printf("### %s: error %v\n", label, err)
		return nil
	}
	p.show(label, resp)
	return resp
}

func (p *prober) heartbeat(label, group, member string, epoch int32, topics []string) *kmsg.ShareGroupHeartbeatResponse {
	r := kmsg.NewPtrShareGroupHeartbeatRequest()
	r.GroupID = group
	r.MemberID = member
	r.MemberEpoch = epoch
	r.SubscribedTopicNames = topics
	resp := p.send(label, r)
	if resp == nil {
		return nil
	}
	return resp.(*kmsg.ShareGroupHeartbeatResponse)
}

// batches decodes the record batches of a ShareFetch partition.
func batches(b []byte) string {
	out := ""
	for len(b) > 0 {
		var rb kmsg.RecordBatch
		if err := rb.ReadFrom(b); err != nil {
			return out + " (undecodable: " + err.Error() + ")"
		}
		out += fmt.Sprintf("[batch base %d last %d n %d] ", rb.FirstOffset, rb.FirstOffset+int64(rb.LastOffsetDelta), rb.NumRecords)
		b = b[12+int(rb.Length):]
	}
	return out
}

func (p *prober) fetch(label, group, member string, epoch int32, topicID [16]byte, parts []int32, acks []kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch, wait int32) *kmsg.ShareFetchResponse {
	r := kmsg.NewPtrShareFetchRequest()
	r.GroupID = kmsg.StringPtr(group)
	r.MemberID = kmsg.StringPtr(member)
	r.ShareSessionEpoch = epoch
	r.MaxWaitMillis = wait
	r.MinBytes = 1
	r.MaxBytes = 1 << 20
	r.MaxRecords = 500
	r.BatchSize = 500
	if parts != nil {
		t := kmsg.NewShareFetchRequestTopic()
		t.TopicID = topicID
		for _, pn := range parts {
			pp := kmsg.NewShareFetchRequestTopicPartition()
			pp.Partition = pn
			pp.PartitionMaxBytes = 1 << 20
			if pn == 0 {
				pp.AcknowledgementBatches = acks
			}
			t.Partitions = append(t.Partitions, pp)
		}
		r.Topics = append(r.Topics, t)
	}
	resp, err := p.broker().Request(p.ctx, r)
	if err != nil {
		fmt.Printf("### %s: error %v\n", label, err)
		return nil
	}
	fr := resp.(*kmsg.ShareFetchResponse)
	p.showFetch(label, fr)
	return fr
}

func (p *prober) showFetch(label string, fr *kmsg.ShareFetchResponse) {
	cp := *fr
	cp.Topics = nil
	fmt.Printf("### %s (v%d)\n", label, fr.Version)
	for _, t := range fr.Topics {
		ct := t
		ct.Partitions = nil
		for _, pp := range t.Partitions {
			fmt.Printf("  partition %d records: %s\n", pp.Partition, batches(pp.Records))
			pp.Records = nil
			ct.Partitions = append(ct.Partitions, pp)
		}
		cp.Topics = append(cp.Topics, ct)
	}
	p.show(label+" (records elided)", &cp)
}

func ackBatch(first, last int64, types ...int8) kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch {
	a := kmsg.NewShareFetchRequestTopicPartitionAcknowledgementBatch()
	a.FirstOffset = first
	a.LastOffset = last
	a.AcknowledgeTypes = types
	return a
}

func (p *prober) acknowledge(label, group, member string, epoch int32, topicID [16]byte, acks []kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch) *kmsg.ShareAcknowledgeResponse {
	r := kmsg.NewPtrShareAcknowledgeRequest()
	r.GroupID = kmsg.StringPtr(group)
	r.MemberID = kmsg.StringPtr(member)
	r.ShareSessionEpoch = epoch
	t := kmsg.NewShareAcknowledgeRequestTopic()
	t.TopicID = topicID
	pp := kmsg.NewShareAcknowledgeRequestTopicPartition()
	pp.Partition = 0
	for _, a := range acks {
		b := kmsg.NewShareAcknowledgeRequestTopicPartitionAcknowledgementBatch()
		b.FirstOffset, b.LastOffset, b.AcknowledgeTypes = a.FirstOffset, a.LastOffset, a.AcknowledgeTypes
		pp.AcknowledgementBatches = append(pp.AcknowledgementBatches, b)
	}
	t.Partitions = append(t.Partitions, pp)
	r.Topics = append(r.Topics, t)
	resp := p.send(label, r)
	if resp == nil {
		return nil
	}
	return resp.(*kmsg.ShareAcknowledgeResponse)
}

func base64URL(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }
