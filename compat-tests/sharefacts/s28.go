package main

import (
	"fmt"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// s28Scenario covers what session 28 closed on the partition leader:
// delivery throttling of records redelivered often, the boundaries of
// in-flight batches kept across redeliveries, a full share-session cache,
// and a ShareAcknowledge naming one partition more than once. The session
// cache probe needs a broker started with group.share.max.share.sessions=2
// (and group.share.max.size=2, which must not exceed it).
func (p *prober) s28Scenario() {
	s, topic := p.s28Setup("s28", 4, 3) // offsets 0-11 in batches of 3
	g, tid := s.group, s.topic

	// In-flight batches: acquired as [0-5] and [6-11] (BatchSize 5),
	// released 3-8, fetched again with BatchSize 500.
	s.fetch("first fetch, BatchSize 5", 5)
	s.ack("release 3-8", ackBatch(3, 8, 2))
	s.fetch("redelivery of 3-8 with BatchSize 500 (in-flight batches [0-5] [6-11])", 500)
	s.ack("accept 0-2, release 3-11", ackBatch(0, 2, 1), ackBatch(3, 11, 2))

	// Throttling (share.delivery.count.limit 5, so from delivery count 3):
	// 3-11 were delivered 2 or 1 times; release and fetch again until
	// each record is archived, printing every answer.
	for i := 0; i < 14; i++ {
		fr := s.fetch(fmt.Sprintf("throttling fetch %d", i+1), 500)
		var acks []kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch
		for _, t := range fr.Topics {
			for _, pp := range t.Partitions {
				for _, a := range pp.AcquiredRecords {
					acks = append(acks, ackBatch(a.FirstOffset, a.LastOffset, 2))
				}
			}
		}
		if len(acks) == 0 {
			break
		}
		s.ack("release what was acquired", acks...)
	}

	// ShareAcknowledge naming partition 0 twice (in one topic, then in
	// two topic entries), then which acknowledgements were applied.
	p.produceBatches(topic, 2, 3, "dup") // 12-17
	s.fetch("fetch 12-17 for the duplicate-partition acks", 500)
	a := s.ackRequest()
	a.Topics[0].Partitions = []kmsg.ShareAcknowledgeRequestTopicPartition{
		ackPartition(12, 1),
		ackPartition(13, 2),
	}
	p.send("ShareAcknowledge: partition 0 twice in one topic (accept 12, release 13)", a)
	s.ack("then accept 12 alone (0: 12 still acquired, 121: accepted before)", ackBatch(12, 12, 1))
	s.ack("then accept 13 alone (0: 13 still acquired, 121: released before)", ackBatch(13, 13, 1))
	a = s.ackRequest()
	a.Topics = []kmsg.ShareAcknowledgeRequestTopic{
		{TopicID: tid, Partitions: []kmsg.ShareAcknowledgeRequestTopicPartition{ackPartition(14, 1)}},
		{TopicID: tid, Partitions: []kmsg.ShareAcknowledgeRequestTopicPartition{ackPartition(15, 1)}},
	}
	p.send("ShareAcknowledge: the topic twice, partition 0 in each (accept 14, accept 15)", a)
	s.ack("then accept 14 alone", ackBatch(14, 14, 1))
	s.ack("then accept 15 alone", ackBatch(15, 15, 1))
	a = s.ackRequest()
	a.Topics[0].Partitions = []kmsg.ShareAcknowledgeRequestTopicPartition{
		ackPartition(16, 1),
		ackPartition(99, 1),
	}
	p.send("ShareAcknowledge: partition 0 twice (accept 16, then a bad ack of 99)", a)
	s.ack("then accept 16 alone", ackBatch(16, 16, 1))
	a = s.ackRequest()
	a.Topics[0].Partitions = []kmsg.ShareAcknowledgeRequestTopicPartition{
		ackPartition(99, 1),
		ackPartition(17, 1),
	}
	p.send("ShareAcknowledge: partition 0 twice (a bad ack of 99, then accept 17)", a)
	s.ack("then accept 17 alone", ackBatch(17, 17, 1))

	// The share-session cache holds 2: this member's and a second one's;
	// a third member's epoch 0 fetch, the first member opening again, a
	// close and the third again.
	m2 := memberID()
	s2 := &shareSession{p: p, group: g, member: m2, topic: tid}
	s2.fetchWait("second member opens a session (cache 2 of 2)", 500, 0)
	m3 := memberID()
	s3 := &shareSession{p: p, group: g, member: m3, topic: tid}
	start := time.Now()
	s3.fetchWait("third member opens a session, MaxWait 1000 (cache full)", 500, 1000)
	fmt.Printf("    (answered after %v)\n", time.Since(start).Round(10*time.Millisecond))
	s3.epoch = 0
	s.epoch = 0
	s.fetchWait("first member opens a new session (epoch 0) while the cache is full", 500, 0)
	s2.close("second member closes its session (epoch -1)")
	s3.epoch = 0
	s3.fetchWait("third member again", 500, 0)
}

// s28Setup makes the one-partition topic sf-NAME-RUN with batches batches
// of size records (values led by name), sets the share group sf-gNAME-RUN
// to read from the earliest offset with one-minute locks, and joins a
// member to it: its share session, and the topic's name.
func (p *prober) s28Setup(name string, batches, size int) (*shareSession, string) {
	run := strconv.FormatInt(time.Now().Unix()%100000, 10)
	topic, g := "sf-"+name+"-"+run, "sf-g"+name+"-"+run
	tid := p.mustTopic(topic, 1)
	p.produceBatches(topic, batches, size, name)
	p.findCoordinator("FindCoordinator group", 0, g)
	p.setGroupConfig(g, "share.auto.offset.reset", "earliest", "share.record.lock.duration.ms", "60000")
	m, _ := p.joined(g, []string{topic}, false)
	return &shareSession{p: p, group: g, member: m, topic: tid}, topic
}

// ackPartition is partition 0's acknowledgement of offset o with type typ.
func ackPartition(o int64, typ int8) kmsg.ShareAcknowledgeRequestTopicPartition {
	return kmsg.ShareAcknowledgeRequestTopicPartition{Partition: 0, AcknowledgementBatches: []kmsg.ShareAcknowledgeRequestTopicPartitionAcknowledgementBatch{{FirstOffset: o, LastOffset: o, AcknowledgeTypes: []int8{typ}}}}
}

// shareSession is one member's share session as the probe drives it.
type shareSession struct {
	p             *prober
	group, member string
	topic         [16]byte
	epoch         int32
}

func (s *shareSession) fetch(label string, batchSize int32) *kmsg.ShareFetchResponse {
	return s.fetchWait(label, batchSize, 2000)
}

func (s *shareSession) fetchWait(label string, batchSize, wait int32) *kmsg.ShareFetchResponse {
	return s.fetchParts(label, batchSize, wait, []kmsg.ShareFetchRequestTopicPartition{{Partition: 0, PartitionMaxBytes: 1 << 20}})
}

// fetchParts sends a ShareFetch of parts (of the session's topic) in the
// session, prints the answer and moves the epoch on when it is not an
// error.
func (s *shareSession) fetchParts(label string, batchSize, wait int32, parts []kmsg.ShareFetchRequestTopicPartition) *kmsg.ShareFetchResponse {
	r := kmsg.NewPtrShareFetchRequest()
	r.GroupID, r.MemberID = kmsg.StringPtr(s.group), kmsg.StringPtr(s.member)
	r.ShareSessionEpoch = s.epoch
	r.MaxWaitMillis, r.MinBytes, r.MaxBytes, r.MaxRecords, r.BatchSize = wait, 1, 1<<20, 500, batchSize
	r.Topics = []kmsg.ShareFetchRequestTopic{{TopicID: s.topic, Partitions: parts}}
	resp, err := s.p.broker().Request(s.p.ctx, r)
	if err != nil {
		fmt.Printf("### %s: error %v\n", label, err)
		return &kmsg.ShareFetchResponse{}
	}
	fr := resp.(*kmsg.ShareFetchResponse)
	if fr.ErrorCode == 0 {
		s.epoch++
	}
	s.p.showFetch(label, fr)
	return fr
}

func (s *shareSession) ackRequest() *kmsg.ShareAcknowledgeRequest {
	a := kmsg.NewPtrShareAcknowledgeRequest()
	a.GroupID, a.MemberID, a.ShareSessionEpoch = kmsg.StringPtr(s.group), kmsg.StringPtr(s.member), s.epoch
	a.Topics = []kmsg.ShareAcknowledgeRequestTopic{{TopicID: s.topic}}
	s.epoch++
	return a
}

func (s *shareSession) ack(label string, acks ...kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch) {
	a := s.ackRequest()
	pp := kmsg.ShareAcknowledgeRequestTopicPartition{Partition: 0}
	for _, b := range acks {
		pp.AcknowledgementBatches = append(pp.AcknowledgementBatches, kmsg.ShareAcknowledgeRequestTopicPartitionAcknowledgementBatch{FirstOffset: b.FirstOffset, LastOffset: b.LastOffset, AcknowledgeTypes: b.AcknowledgeTypes})
	}
	a.Topics[0].Partitions = []kmsg.ShareAcknowledgeRequestTopicPartition{pp}
	s.p.send(label, a)
}

func (s *shareSession) close(label string) {
	a := s.ackRequest()
	a.ShareSessionEpoch = -1
	a.Topics = nil
	s.p.send(label, a)
}

// s28DupScenario: a ShareAcknowledge or ShareFetch naming partition 0
// twice, acknowledgements in each entry or in one. Offset 0 stays
// acquired throughout, so the start offset never moves and a later
// release of an offset tells whether it was accepted (121) or is still
// held (0).
func (p *prober) s28DupScenario() {
	s, _ := p.s28Setup("s28d", 4, 3) // 0-11
	tid := s.topic
	s.fetch("fetch 0-11", 500)
	accept := func(o int64) kmsg.ShareAcknowledgeRequestTopicPartition { return ackPartition(o, 1) }
	a := s.ackRequest()
	a.Topics[0].Partitions = []kmsg.ShareAcknowledgeRequestTopicPartition{accept(1), accept(2)}
	p.send("ShareAcknowledge: partition 0 twice in one topic, accept 1 / accept 2", a)
	s.ack("then release 1 (0: held, 121: accepted)", ackBatch(1, 1, 2))
	s.ack("then release 2", ackBatch(2, 2, 2))
	a = s.ackRequest()
	a.Topics = []kmsg.ShareAcknowledgeRequestTopic{{TopicID: tid, Partitions: []kmsg.ShareAcknowledgeRequestTopicPartition{accept(3)}}, {TopicID: tid, Partitions: []kmsg.ShareAcknowledgeRequestTopicPartition{accept(4)}}}
	p.send("ShareAcknowledge: the topic twice, accept 3 / accept 4", a)
	s.ack("then release 3", ackBatch(3, 3, 2))
	s.ack("then release 4", ackBatch(4, 4, 2))

	two := func(label string, a, b []kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch) {
		s.fetchParts(label, 500, 500, []kmsg.ShareFetchRequestTopicPartition{
			{Partition: 0, PartitionMaxBytes: 1 << 20, AcknowledgementBatches: a},
			{Partition: 0, PartitionMaxBytes: 1 << 20, AcknowledgementBatches: b},
		})
	}
	one := func(o int64) []kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch {
		return []kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch{ackBatch(o, o, 1)}
	}
	two("ShareFetch: partition 0 twice, accept 5 / accept 6", one(5), one(6))
	s.ack("then release 5", ackBatch(5, 5, 2))
	s.ack("then release 6", ackBatch(6, 6, 2))
	two("ShareFetch: partition 0 twice, accept 7 / no acks", one(7), nil)
	s.ack("then release 7", ackBatch(7, 7, 2))
	two("ShareFetch: partition 0 twice, no acks / accept 8", nil, one(8))
	s.ack("then release 8", ackBatch(8, 8, 2))
}

// s28PastScenario: acknowledgements reaching past the acquired records.
func (p *prober) s28PastScenario() {
	s, _ := p.s28Setup("s28p", 2, 3) // 0-5
	s.fetch("fetch 0-5", 500)
	s.ack("accept 4-9 (the last offset past the acquired records)", ackBatch(4, 9, 1))
	s.ack("accept 2-3 and 5-7", ackBatch(2, 3, 1), ackBatch(5, 7, 1))
	s.ack("accept 6-7 (the first offset past them)", ackBatch(6, 7, 1))
	s.ack("then accept 2-5 (were 2-3 applied?)", ackBatch(2, 5, 1))
}

// s28MsgScenario: the ErrorMessage of INVALID_RECORD_STATE for
// acknowledgements of records the member does not hold, in batches that
// track state per batch or per offset.
func (p *prober) s28MsgScenario() {
	a, _ := p.s28Setup("s28m", 2, 6) // 0-5, 6-11
	g, tid := a.group, a.topic
	a.fetch("A fetches 0-11 with BatchSize 6 (in-flight batches 0-5, 6-11)", 6)
	b := &shareSession{p: p, group: g, member: memberID(), topic: tid}
	b.fetchWait("B opens a session (gets nothing)", 500, 0)
	b.ack("B accepts 0-5 (A's whole batch)", ackBatch(0, 5, 1))
	b.ack("B accepts 2 (part of A's batch)", ackBatch(2, 2, 1))
	a.ack("A accepts 6-11 (a whole batch)", ackBatch(6, 11, 1))
	a.ack("A accepts 6-11 again", ackBatch(6, 11, 1))
	a.ack("A accepts 7 again", ackBatch(7, 7, 1))
	a.ack("A accepts 1 (part of a batch)", ackBatch(1, 1, 1))
	a.ack("A accepts 1 again", ackBatch(1, 1, 1))
	b.ack("B accepts 2 (A's, batch now per offset)", ackBatch(2, 2, 1))
	b.ack("B accepts 1-3", ackBatch(1, 3, 1))
	a.ack("A accepts 0-5 (1 accepted already)", ackBatch(0, 5, 1))
}
