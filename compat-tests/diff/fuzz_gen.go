package diff

import (
	"fmt"
	"math"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// generators lists the request generator of every API the fuzz run
// sends. Each draws its fields in a fixed order whatever the session, and
// reads what the session learned only to fill a drawn choice.
func (f *fuzzer) generators() []generator {
	return []generator{
		{key: kmsg.Produce, gen: genProduce},
		{key: kmsg.Produce, gen: genProduce},
		{key: kmsg.Fetch, gen: genFetch},
		{key: kmsg.Fetch, gen: genFetch},
		{key: kmsg.ListOffsets, gen: genListOffsets},
		{key: kmsg.Metadata, gen: genMetadata},
		{key: kmsg.OffsetCommit, gen: genOffsetCommit},
		{key: kmsg.OffsetFetch, gen: genOffsetFetch},
		{key: kmsg.FindCoordinator, gen: genFindCoordinator},
		{key: kmsg.JoinGroup, gen: genJoinGroup},
		{key: kmsg.Heartbeat, gen: genHeartbeat},
		{key: kmsg.LeaveGroup, gen: genLeaveGroup},
		{key: kmsg.SyncGroup, gen: genSyncGroup},
		{key: kmsg.DescribeGroups, gen: genDescribeGroups},
		{key: kmsg.ListGroups, gen: genListGroups},
		{key: kmsg.DeleteGroups, gen: genDeleteGroups},
		{key: kmsg.OffsetDelete, gen: genOffsetDelete},
		{key: kmsg.CreateTopics, gen: genCreateTopics, after: afterCreateTopics},
		{key: kmsg.DeleteTopics, gen: genDeleteTopics, after: afterDeleteTopics},
		{key: kmsg.CreatePartitions, gen: genCreatePartitions, after: afterCreatePartitions},
		{key: kmsg.DeleteRecords, gen: genDeleteRecords},
		{key: kmsg.DescribeConfigs, gen: genDescribeConfigs},
		{key: kmsg.IncrementalAlterConfigs, gen: genIncrementalAlterConfigs},
		{key: kmsg.AlterConfigs, gen: genAlterConfigs},
		{key: kmsg.InitProducerID, gen: genInitProducerID, after: afterTxn},
		{key: kmsg.AddPartitionsToTxn, gen: genAddPartitionsToTxn},
		{key: kmsg.AddOffsetsToTxn, gen: genAddOffsetsToTxn},
		{key: kmsg.EndTxn, gen: genEndTxn, after: afterTxn},
		{key: kmsg.TxnOffsetCommit, gen: genTxnOffsetCommit},
		{key: kmsg.DescribeProducers, gen: genDescribeProducers},
		{key: kmsg.DescribeTransactions, gen: genDescribeTransactions},
		{key: kmsg.ListTransactions, gen: genListTransactions},
		{key: kmsg.OffsetForLeaderEpoch, gen: genOffsetForLeaderEpoch},
		{key: kmsg.DescribeTopicPartitions, gen: genDescribeTopicPartitions},
		{key: kmsg.DescribeLogDirs, gen: genDescribeLogDirs},
		{key: kmsg.ConsumerGroupHeartbeat, gen: genConsumerGroupHeartbeat},
		{key: kmsg.ConsumerGroupDescribe, gen: genConsumerGroupDescribe},
	}
}

func genProduce(f *fuzzer, v int16) kmsg.Request {
	req := kmsg.NewPtrProduceRequest()
	seen := map[string]bool{}
	req.Acks = pickInt[int16](f, "acks", -1, -1, 1, 2, -2)
	req.TimeoutMillis = pickInt[int32](f, "timeout", 30000, 30000, 0, -1)
	txn := ""
	if f.pick("txnid", "null", "null", "tx", "missing") != "null" {
		txn = fuzzTx
		if f.desc[len(f.desc)-1] == "txnid=missing" {
			txn = "fz-notx"
		}
		req.TransactionID = kmsg.StringPtr(txn)
	}
	for range f.count("topics") {
		t := kmsg.NewProduceRequestTopic()
		t.Topic = f.topic("topic")
		if v >= 13 {
			t.TopicID = f.topicID(t.Topic)
		}
		pseen := map[string]bool{} // one entry per partition: Kafka merges them
		for range f.count("parts") {
			p := kmsg.NewProduceRequestTopicPartition()
			p.Partition = f.partition("p")
			p.Records = f.records(txn)
			if fresh(pseen, fmt.Sprint(p.Partition)) {
				t.Partitions = append(t.Partitions, p)
			}
		}
		if fresh(seen, t.Topic) {
			req.Topics = append(req.Topics, t)
		}
	}
	return req
}

func genFetch(f *fuzzer, v int16) kmsg.Request {
	req := kmsg.NewPtrFetchRequest()
	seen := map[string]bool{}
	req.ReplicaID = -1
	req.MaxWaitMillis = 0
	req.MinBytes = pickInt[int32](f, "minb", 1, 0)
	req.MaxBytes = pickInt[int32](f, "maxb", 1<<20, 1<<20, 1, 0, -1)
	// Only valid isolation levels: Kafka 4.4 answers another with
	// UNKNOWN_SERVER_ERROR (IllegalArgumentException), for the whole
	// Fetch and every ListOffsets partition.
	req.IsolationLevel = pickInt[int8](f, "iso", 0, 1, 1)
	switch f.pick("session", "none", "none", "new", "unknown") {
	case "none":
		req.SessionID, req.SessionEpoch = 0, -1
	case "new":
		req.SessionID, req.SessionEpoch = 0, 0
	case "unknown":
		req.SessionID, req.SessionEpoch = 424242, 3
	}
	for range f.count("topics") {
		t := kmsg.NewFetchRequestTopic()
		t.Topic = f.topic("topic")
		if v >= 13 {
			t.TopicID = f.topicID(t.Topic)
		}
		pseen := map[string]bool{} // one entry per partition: Kafka merges them
		for range f.count("parts") {
			p := kmsg.NewFetchRequestTopicPartition()
			p.Partition = f.partition("p")
			p.FetchOffset = f.offset("off")
			p.CurrentLeaderEpoch = f.epoch("ep")
			p.LogStartOffset = -1
			p.PartitionMaxBytes = pickInt[int32](f, "pmax", 1<<20, 1<<20, 1, 0, -5)
			if fresh(pseen, fmt.Sprint(p.Partition)) {
				t.Partitions = append(t.Partitions, p)
			}
		}
		if fresh(seen, t.Topic) {
			req.Topics = append(req.Topics, t)
		}
	}
	if v >= 7 && f.maybe(4) {
		ft := kmsg.NewFetchRequestForgottenTopic()
		ft.Topic = f.topic("forget")
		if v >= 13 {
			ft.TopicID = f.topicID(ft.Topic)
		}
		ft.Partitions = []int32{f.partition("fp")}
		req.ForgottenTopics = append(req.ForgottenTopics, ft)
	}
	return req
}

func genListOffsets(f *fuzzer, v int16) kmsg.Request {
	req := kmsg.NewPtrListOffsetsRequest()
	seen := map[string]bool{}
	req.ReplicaID = pickInt[int32](f, "replica", -1, -1, -1, 1, -2)
	req.IsolationLevel = pickInt[int8](f, "iso", 0, 1)
	for range f.count("topics") {
		t := kmsg.NewListOffsetsRequestTopic()
		t.Topic = f.topic("topic")
		for range f.count("parts") {
			p := kmsg.NewListOffsetsRequestTopicPartition()
			p.Partition = f.partition("p")
			switch ts := f.pick("ts", "-1", "-2", "-3", "-4", "-5", "-6", "-7", "base", "base+1", "base+9", "0", "max"); ts {
			case "base":
				p.Timestamp = f.s.BaseTS
			case "base+1":
				p.Timestamp = f.s.BaseTS + 1
			case "base+9":
				p.Timestamp = f.s.BaseTS + 9
			case "max":
				p.Timestamp = math.MaxInt64
			default:
				p.Timestamp = map[string]int64{"-1": -1, "-2": -2, "-3": -3, "-4": -4, "-5": -5, "-6": -6, "-7": -7, "0": 0}[ts]
			}
			p.CurrentLeaderEpoch = f.epoch("ep")
			p.MaxNumOffsets = pickInt[int32](f, "maxn", 1, 1, 0, 5)
			t.Partitions = append(t.Partitions, p)
		}
		if fresh(seen, t.Topic) {
			req.Topics = append(req.Topics, t)
		}
	}
	return req
}

func genMetadata(f *fuzzer, v int16) kmsg.Request {
	req := kmsg.NewPtrMetadataRequest()
	list := f.pick("list", "named", "named", "all", "empty")
	if v < 4 && list == "named" {
		// Below v4 a named topic that does not exist is auto-created
		// (Kafka asynchronously, samsa at once: explained in the suite).
		list = "all"
	}
	switch list {
	case "all":
		if v >= 1 {
			req.Topics = nil
			break
		}
		req.Topics = []kmsg.MetadataRequestTopic{}
	case "empty":
		req.Topics = []kmsg.MetadataRequestTopic{}
	default:
		req.Topics = []kmsg.MetadataRequestTopic{}
		for range f.count("topics") {
			t := kmsg.NewMetadataRequestTopic()
			name := f.topic("topic")
			if v >= 10 && f.pick("by", "name", "name", "id", "both") != "name" {
				t.TopicID = f.topicID(name)
				if f.desc[len(f.desc)-2] == "by=both" {
					t.Topic = kmsg.StringPtr(name)
				}
			} else {
				t.Topic = kmsg.StringPtr(name)
			}
			req.Topics = append(req.Topics, t)
		}
	}
	if v >= 8 && v <= 10 {
		req.IncludeClusterAuthorizedOperations = f.maybe(3)
	}
	if v >= 8 {
		req.IncludeTopicAuthorizedOperations = f.maybe(3)
	}
	return req
}

func genOffsetCommit(f *fuzzer, v int16) kmsg.Request {
	req := kmsg.NewPtrOffsetCommitRequest()
	seen := map[string]bool{}
	req.Group = f.group("group")
	req.MemberID, req.Generation = f.member(req.Group)
	if v >= 7 && f.maybe(5) {
		req.InstanceID = kmsg.StringPtr("fz-instance")
	}
	if v >= 2 && v <= 4 {
		req.RetentionTimeMillis = pickInt[int64](f, "retention", -1, 60000, 0)
	}
	for range f.count("topics") {
		t := kmsg.NewOffsetCommitRequestTopic()
		t.Topic = f.topic("topic")
		if v >= 10 {
			t.TopicID = f.topicID(t.Topic)
		}
		pseen := map[string]bool{} // one entry per partition: Kafka merges them
		for range f.count("parts") {
			p := kmsg.NewOffsetCommitRequestTopicPartition()
			p.Partition = f.partition("p")
			p.Offset = f.offset("off")
			p.LeaderEpoch = f.epoch("ep")
			p.Metadata = f.str("meta")
			if fresh(pseen, fmt.Sprint(p.Partition)) {
				t.Partitions = append(t.Partitions, p)
			}
		}
		if fresh(seen, t.Topic) {
			req.Topics = append(req.Topics, t)
		}
	}
	return req
}

func genOffsetFetch(f *fuzzer, v int16) kmsg.Request {
	req := kmsg.NewPtrOffsetFetchRequest()
	topics := func() (names []string, parts [][]int32, all bool) {
		if f.pick("topics", "some", "some", "all") == "all" {
			return nil, nil, true
		}
		seen := map[string]bool{}
		for range f.count("n") {
			name := f.topic("topic")
			var ps []int32
			for range f.count("parts") {
				ps = append(ps, f.partition("p"))
			}
			if fresh(seen, name) {
				names = append(names, name)
				parts = append(parts, ps)
			}
		}
		return names, parts, false
	}
	if v >= 7 {
		req.RequireStable = f.maybe(2)
	}
	if v < 8 {
		req.Group = f.group("group")
		names, parts, all := topics()
		if all && v >= 2 {
			req.Topics = nil
		} else {
			req.Topics = []kmsg.OffsetFetchRequestTopic{}
			for i, n := range names {
				req.Topics = append(req.Topics, kmsg.OffsetFetchRequestTopic{Topic: n, Partitions: parts[i]})
			}
		}
		return req
	}
	for range f.count("groups") {
		g := kmsg.NewOffsetFetchRequestGroup()
		g.Group = f.group("group")
		if v >= 9 && f.maybe(3) {
			g.MemberID = kmsg.StringPtr("fz-bogus-member")
			g.MemberEpoch = pickInt[int32](f, "mepoch", 0, 5, -1)
		}
		names, parts, all := topics()
		if !all {
			g.Topics = []kmsg.OffsetFetchRequestGroupTopic{}
			for i, n := range names {
				gt := kmsg.OffsetFetchRequestGroupTopic{Topic: n, Partitions: parts[i]}
				if v >= 10 {
					gt.TopicID = f.topicID(n)
				}
				g.Topics = append(g.Topics, gt)
			}
		}
		req.Groups = append(req.Groups, g)
	}
	return req
}

func genFindCoordinator(f *fuzzer, v int16) kmsg.Request {
	req := kmsg.NewPtrFindCoordinatorRequest()
	if v >= 1 {
		req.CoordinatorType = pickInt[int8](f, "type", 0, 1, 2, 9, -1)
	}
	key := func() string {
		if req.CoordinatorType == 1 {
			return f.txnID("key")
		}
		return f.group("key")
	}
	if v < 4 {
		req.CoordinatorKey = key()
		return req
	}
	req.CoordinatorKeys = []string{}
	for range f.count("keys") {
		req.CoordinatorKeys = append(req.CoordinatorKeys, key())
	}
	return req
}

// joinGroup draws a JoinGroup that cannot wait on another member: a new
// member joins a fresh group (alone, so the join completes at once) or
// asks for a member id (v4+); others are rejected at once.
func genJoinGroup(f *fuzzer, v int16) kmsg.Request {
	req := kmsg.NewPtrJoinGroupRequest()
	switch f.pick("group", "fresh", "fresh", "g", "missing", "empty") {
	case "fresh":
		req.Group = fmt.Sprintf("fz-jg-%d", f.step)
		f.joined = append(f.joined, req.Group)
	case "g":
		req.Group = fuzzGroup
	case "missing":
		req.Group = "fz-nogroup"
	}
	switch f.pick("member", "none", "none", "bogus") {
	case "bogus":
		req.MemberID = "fz-bogus-member"
	default:
		// A new member of fz-g below v4 would join it and wait for its
		// stable member to rejoin: ask as a bogus member instead.
		if req.Group == fuzzGroup && v < 4 {
			req.MemberID = "fz-bogus-member"
		}
	}
	req.ProtocolType = f.pick("ptype", "consumer", "consumer", "", "connect")
	req.SessionTimeoutMillis = pickInt[int32](f, "session", 300000, 300000, 10, 100_000_000)
	req.RebalanceTimeoutMillis = 60000
	switch f.pick("protocols", "one", "one", "none", "dup") {
	case "one":
		req.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{0, 1, 0, 0, 0, 0, 0, 0}}}
	case "dup":
		req.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range"}, {Name: "range", Metadata: []byte{1}}}
	}
	// A static member new to fz-g would rebalance it: only elsewhere.
	if static := v >= 5 && f.maybe(4); static && req.Group != fuzzGroup {
		req.InstanceID = kmsg.StringPtr("fz-instance")
	}
	return req
}

func genHeartbeat(f *fuzzer, v int16) kmsg.Request {
	req := kmsg.NewPtrHeartbeatRequest()
	req.Group = f.group("group")
	req.MemberID, req.Generation = f.member(req.Group)
	return req
}

func genLeaveGroup(f *fuzzer, v int16) kmsg.Request {
	req := kmsg.NewPtrLeaveGroupRequest()
	// The stable member of fz-g never leaves (its group keeps its state).
	switch f.pick("group", "missing", "empty", "fresh-member", "g-bogus") {
	case "missing":
		req.Group = "fz-nogroup"
	case "fresh-member":
		// A group an earlier step joined (whatever the broker answered).
		if len(f.joined) > 0 {
			req.Group = f.joined[f.r.IntN(len(f.joined))]
		}
	case "g-bogus":
		req.Group = fuzzGroup
	}
	member := "fz-bogus-member"
	if m, ok := f.members[req.Group]; ok && req.Group != fuzzGroup {
		member = m.id
	}
	if v < 3 {
		req.MemberID = member
		return req
	}
	req.Members = []kmsg.LeaveGroupRequestMember{}
	for range f.count("members") {
		req.Members = append(req.Members, kmsg.LeaveGroupRequestMember{MemberID: member})
	}
	return req
}

func genSyncGroup(f *fuzzer, v int16) kmsg.Request {
	req := kmsg.NewPtrSyncGroupRequest()
	req.Group = f.group("group")
	req.MemberID, req.Generation = f.member(req.Group)
	if req.Group == fuzzGroup && req.MemberID == f.members[fuzzGroup].id {
		// The stable member's SyncGroup re-sends its assignment.
		req.GroupAssignment = []kmsg.SyncGroupRequestGroupAssignment{{MemberID: req.MemberID, MemberAssignment: []byte{0, 1, 0, 0, 0, 0, 0, 0, 0, 0}}}
	}
	if v >= 5 {
		switch f.pick("proto", "match", "none", "other") {
		case "match":
			req.ProtocolType, req.Protocol = kmsg.StringPtr("consumer"), kmsg.StringPtr("range")
		case "other":
			req.ProtocolType, req.Protocol = kmsg.StringPtr("connect"), kmsg.StringPtr("sticky")
		}
	}
	return req
}

func genDescribeGroups(f *fuzzer, v int16) kmsg.Request {
	req := kmsg.NewPtrDescribeGroupsRequest()
	req.Groups = []string{}
	for range f.count("groups") {
		req.Groups = append(req.Groups, f.group("group"))
	}
	if v >= 3 {
		req.IncludeAuthorizedOperations = f.maybe(3)
	}
	return req
}

func genListGroups(f *fuzzer, v int16) kmsg.Request {
	req := kmsg.NewPtrListGroupsRequest()
	if v >= 4 {
		for range pickInt(f, "states", 0, 0, 1, 2) {
			req.StatesFilter = append(req.StatesFilter, f.pick("state", "Stable", "Empty", "stable", "Dead", "bogus", ""))
		}
	}
	if v >= 5 {
		for range pickInt(f, "types", 0, 0, 1, 2) {
			req.TypesFilter = append(req.TypesFilter, f.pick("type", "classic", "consumer", "Consumer", "share", "bogus"))
		}
	}
	return req
}

func genDeleteGroups(f *fuzzer, v int16) kmsg.Request {
	req := kmsg.NewPtrDeleteGroupsRequest()
	req.Groups = []string{}
	seen := map[string]bool{} // Kafka answers a group named twice once
	for range f.count("groups") {
		if g := f.group("group"); fresh(seen, g) {
			req.Groups = append(req.Groups, g)
		}
	}
	return req
}

func genOffsetDelete(f *fuzzer, v int16) kmsg.Request {
	req := kmsg.NewPtrOffsetDeleteRequest()
	seen := map[string]bool{}
	req.Group = f.group("group")
	for range f.count("topics") {
		t := kmsg.OffsetDeleteRequestTopic{Topic: f.topic("topic")}
		for range f.count("parts") {
			t.Partitions = append(t.Partitions, kmsg.OffsetDeleteRequestTopicPartition{Partition: f.partition("p")})
		}
		if fresh(seen, t.Topic) {
			req.Topics = append(req.Topics, t)
		}
	}
	return req
}

// topicConfig draws one config entry for a topic: valid and invalid
// values of real settings, an unknown name, a null value.
func (f *fuzzer) topicConfig() (string, *string) {
	type kv struct{ k, v string }
	c := []kv{
		{"retention.ms", "3600000"}, {"retention.ms", "-1"}, {"retention.ms", "abc"}, {"retention.ms", ""},
		{"cleanup.policy", "compact"}, {"cleanup.policy", "delete,compact"}, {"cleanup.policy", "bogus"},
		{"min.insync.replicas", "1"}, {"min.insync.replicas", "0"}, {"max.message.bytes", "100"},
		{"max.message.bytes", "-1"}, {"segment.bytes", "1"}, {"compression.type", "producer"},
		{"compression.type", "nope"}, {"message.timestamp.type", "LogAppendTime"}, {"message.timestamp.type", "x"},
		{"no.such.config", "1"}, {"retention.bytes", "null"}, {"unclean.leader.election.enable", "maybe"},
		{"segment.ms", "99999999999999999999"}, {"delete.retention.ms", " 5 "},
	}[f.r.IntN(21)]
	f.desc = append(f.desc, "cfg="+c.k+"="+c.v)
	if c.v == "null" {
		return c.k, nil
	}
	return c.k, kmsg.StringPtr(c.v)
}

func genCreateTopics(f *fuzzer, v int16) kmsg.Request {
	// Not timeout 0: Kafka 4.4 then answers REQUEST_TIMED_OUT for every
	// topic, invalid names too, and may still create the valid ones.
	req := createTopicsReq(false)
	if v >= 1 {
		req.ValidateOnly = f.maybe(4)
	}
	for range f.count("topics") {
		t := kmsg.NewCreateTopicsRequestTopic()
		t.Topic = fuzzTopicName(f.pick("topic", "c1", "c2", "c1", "c2", "a", "missing", "offsets", "empty", "invalid", "long", "dot"))
		t.NumPartitions = pickInt[int32](f, "n", 1, 2, 1, -1, 0, -5)
		t.ReplicationFactor = pickInt[int16](f, "rf", 1, 1, -1, 0, 2, -3)
		switch f.pick("assign", "none", "none", "none", "one", "two", "bad-broker", "dup-replica") {
		case "one":
			t.ReplicaAssignment = []kmsg.CreateTopicsRequestTopicReplicaAssignment{{Partition: 0, Replicas: []int32{1}}}
		case "two":
			t.ReplicaAssignment = []kmsg.CreateTopicsRequestTopicReplicaAssignment{{Partition: 0, Replicas: []int32{1}}, {Partition: 1, Replicas: []int32{1}}}
		case "bad-broker":
			t.ReplicaAssignment = []kmsg.CreateTopicsRequestTopicReplicaAssignment{{Partition: 0, Replicas: []int32{7}}}
		case "dup-replica":
			t.ReplicaAssignment = []kmsg.CreateTopicsRequestTopicReplicaAssignment{{Partition: 0, Replicas: []int32{1, 1}}}
		}
		for range pickInt(f, "cfgs", 0, 0, 1, 2) {
			k, val := f.topicConfig()
			t.Configs = append(t.Configs, kmsg.CreateTopicsRequestTopicConfig{Name: k, Value: val})
		}
		req.Topics = append(req.Topics, t)
	}
	return req
}

func afterCreateTopics(f *fuzzer, req kmsg.Request, resp kmsg.Response) error {
	r, ok := resp.(*kmsg.CreateTopicsResponse)
	if !ok || req.(*kmsg.CreateTopicsRequest).ValidateOnly {
		return nil
	}
	var made []string
	for _, t := range r.Topics {
		if t.ErrorCode == 0 {
			made = append(made, t.Topic)
			delete(f.deleted, t.Topic)
		}
	}
	return f.waitTopics(false, made)
}

func genDeleteTopics(f *fuzzer, v int16) kmsg.Request {
	req := kmsg.NewPtrDeleteTopicsRequest()
	req.TimeoutMillis = 30000
	for range f.count("topics") {
		// Only the churn topics, missing, internal and invalid ones: the
		// fuzz topics stay.
		// Kafka 4.4 deletes __consumer_offsets when asked (samsa refuses):
		// the internal topics are left out, they carry the run's groups.
		name := fuzzTopicName(f.pick("topic", "c1", "c2", "c1", "c2", "missing", "empty", "invalid"))
		if v < 6 {
			req.TopicNames = append(req.TopicNames, name)
			continue
		}
		t := kmsg.NewDeleteTopicsRequestTopic()
		switch f.pick("by", "name", "name", "id", "both", "null-zero") {
		case "name":
			t.Topic = kmsg.StringPtr(name)
		case "id":
			t.TopicID = f.topicID(name)
		case "both":
			t.Topic, t.TopicID = kmsg.StringPtr(name), f.topicID(name)
		}
		req.Topics = append(req.Topics, t)
	}
	return req
}

func afterDeleteTopics(f *fuzzer, req kmsg.Request, resp kmsg.Response) error {
	r, ok := resp.(*kmsg.DeleteTopicsResponse)
	if !ok {
		return nil
	}
	var gone []string
	for _, t := range r.Topics {
		if t.ErrorCode == 0 && t.Topic != nil {
			gone = append(gone, *t.Topic)
		}
	}
	return f.waitTopics(true, gone)
}

func genCreatePartitions(f *fuzzer, v int16) kmsg.Request {
	req := kmsg.NewPtrCreatePartitionsRequest()
	req.TimeoutMillis = 30000
	req.ValidateOnly = f.maybe(4)
	for range f.count("topics") {
		t := kmsg.NewCreatePartitionsRequestTopic()
		t.Topic = fuzzTopicName(f.pick("topic", "p", "c1", "c2", "a", "missing", "empty"))
		t.Count = pickInt[int32](f, "count", 2, 3, 4, 1, 0, -1)
		switch f.pick("assign", "none", "none", "right", "short", "bad-broker") {
		case "right":
			for range max(0, min(int(t.Count)-1, 3)) {
				t.Assignment = append(t.Assignment, kmsg.CreatePartitionsRequestTopicAssignment{Replicas: []int32{1}})
			}
		case "short":
			t.Assignment = []kmsg.CreatePartitionsRequestTopicAssignment{}
		case "bad-broker":
			t.Assignment = []kmsg.CreatePartitionsRequestTopicAssignment{{Replicas: []int32{7}}}
		}
		req.Topics = append(req.Topics, t)
	}
	return req
}

func afterCreatePartitions(f *fuzzer, req kmsg.Request, resp kmsg.Response) error {
	r, ok := resp.(*kmsg.CreatePartitionsResponse)
	if !ok || req.(*kmsg.CreatePartitionsRequest).ValidateOnly {
		return nil
	}
	var grown []string
	for _, t := range r.Topics {
		if t.ErrorCode == 0 {
			grown = append(grown, t.Topic)
		}
	}
	return f.waitTopics(false, grown)
}

func genDeleteRecords(f *fuzzer, v int16) kmsg.Request {
	req := kmsg.NewPtrDeleteRecordsRequest()
	seen := map[string]bool{}
	req.TimeoutMillis = 30000
	for range f.count("topics") {
		t := kmsg.NewDeleteRecordsRequestTopic()
		t.Topic = f.topic("topic")
		pseen := map[string]bool{} // one entry per partition: Kafka merges them
		for range f.count("parts") {
			p := kmsg.NewDeleteRecordsRequestTopicPartition()
			p.Partition = f.partition("p")
			p.Offset = pickInt[int64](f, "off", 0, 1, 2, -1, -2, 999)
			if fresh(pseen, fmt.Sprint(p.Partition)) {
				t.Partitions = append(t.Partitions, p)
			}
		}
		if fresh(seen, t.Topic) {
			req.Topics = append(req.Topics, t)
		}
	}
	return req
}

func (f *fuzzer) configResource(field string) (kmsg.ConfigResourceType, string) {
	switch f.pick(field, "topic", "topic", "topic", "broker", "broker-default", "broker-other", "broker-bad", "logger", "group", "unknown-type") {
	case "broker":
		return kmsg.ConfigResourceTypeBroker, "1"
	case "broker-default":
		return kmsg.ConfigResourceTypeBroker, ""
	case "broker-other":
		return kmsg.ConfigResourceTypeBroker, "7"
	case "broker-bad":
		return kmsg.ConfigResourceTypeBroker, "x"
	case "logger":
		return kmsg.ConfigResourceTypeBrokerLogger, "1"
	case "group":
		return kmsg.ConfigResourceType(32), "fz-g"
	case "unknown-type":
		return kmsg.ConfigResourceType(77), "x"
	}
	return kmsg.ConfigResourceTypeTopic, f.topic("topic")
}

func genDescribeConfigs(f *fuzzer, v int16) kmsg.Request {
	req := kmsg.NewPtrDescribeConfigsRequest()
	req.IncludeSynonyms = v >= 1 && f.maybe(2)
	req.IncludeDocumentation = v >= 3 && f.maybe(2)
	for range f.count("resources") {
		r := kmsg.NewDescribeConfigsRequestResource()
		r.ResourceType, r.ResourceName = f.configResource("res")
		if f.pick("names", "all", "some", "empty") != "all" {
			r.ConfigNames = []string{}
			if f.desc[len(f.desc)-1] == "names=some" {
				for range f.count("n") {
					r.ConfigNames = append(r.ConfigNames, f.pick("name", "retention.ms", "cleanup.policy", "num.partitions", "log.retention.ms", "no.such", "", "min.insync.replicas"))
				}
			}
		}
		req.Resources = append(req.Resources, r)
	}
	return req
}

// The topic settings the config steps may change are limited to ones that
// keep the fuzz topics usable for later steps (max.message.bytes 100 would
// refuse every produce that follows, which is deterministic but dull).
func genIncrementalAlterConfigs(f *fuzzer, v int16) kmsg.Request {
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	req.ValidateOnly = f.maybe(3)
	for range f.count("resources") {
		r := kmsg.NewIncrementalAlterConfigsRequestResource()
		r.ResourceType, r.ResourceName = f.configResource("res")
		for range f.count("cfgs") {
			c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
			c.Op = kmsg.IncrementalAlterConfigOp(pickInt[int8](f, "op", 0, 0, 1, 2, 3, 9))
			if r.ResourceType == kmsg.ConfigResourceTypeBroker {
				c.Name = f.pick("name", "log.retention.ms", "num.io.threads", "log.dirs", "no.such", "log.cleaner.threads")
				value := f.pick("value", "86400000", "1", "abc", "-1")
				if value == "1" && !req.ValidateOnly {
					value = "604800000" // a retention of 1 ms would race the retention checker
				}
				c.Value = kmsg.StringPtr(value)
				if !req.ValidateOnly && c.Name != "log.dirs" && c.Name != "no.such" {
					c.Name = "log.retention.ms" // dynamic changes of a thread pool resize it: keep them to validation
				}
			} else {
				c.Name, c.Value = f.topicConfig()
				if c.Name == "max.message.bytes" || c.Name == "segment.bytes" {
					c.Name = "retention.ms"
				}
			}
			r.Configs = append(r.Configs, c)
		}
		req.Resources = append(req.Resources, r)
	}
	return req
}

func genAlterConfigs(f *fuzzer, v int16) kmsg.Request {
	req := kmsg.NewPtrAlterConfigsRequest()
	req.ValidateOnly = f.maybe(3)
	// One entry per resource: Kafka 4.4 left a legacy AlterConfigs naming
	// broker 1 twice unanswered for a minute.
	resources := map[string]bool{}
	for range f.count("resources") {
		r := kmsg.NewAlterConfigsRequestResource()
		// Not the group, logger, other or malformed broker resources:
		// Kafka 4.4 left one such AlterConfigs unanswered for a minute.
		names := map[string]bool{}
		switch f.pick("res", "topic", "topic", "broker", "broker-default") {
		case "topic":
			r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeTopic, f.topic("topic")
		case "broker":
			r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeBroker, "1"
		default:
			r.ResourceType = kmsg.ConfigResourceTypeBroker
		}
		for range f.count("cfgs") {
			c := kmsg.NewAlterConfigsRequestResourceConfig()
			if r.ResourceType == kmsg.ConfigResourceTypeBroker {
				c.Name = f.pick("name", "log.retention.ms", "log.dirs", "no.such")
				c.Value = kmsg.StringPtr(f.pick("value", "86400000", "abc"))
			} else {
				c.Name, c.Value = f.topicConfig()
				if c.Name == "max.message.bytes" || c.Name == "segment.bytes" {
					c.Name = "retention.ms"
				}
			}
			// One value per name: Kafka 4.4 left an AlterConfigs of a
			// broker naming log.dirs twice unanswered for a minute.
			if fresh(names, c.Name) {
				r.Configs = append(r.Configs, c)
			}
		}
		if fresh(resources, fmt.Sprint(r.ResourceType, r.ResourceName)) {
			req.Resources = append(req.Resources, r)
		}
	}
	return req
}

func genInitProducerID(f *fuzzer, v int16) kmsg.Request {
	req := kmsg.NewPtrInitProducerIDRequest()
	switch f.pick("txnid", "null", "tx", "tx", "fresh", "empty") {
	case "tx":
		req.TransactionalID = kmsg.StringPtr(fuzzTx)
	case "fresh":
		req.TransactionalID = kmsg.StringPtr("fz-txi-" + string(rune('a'+f.r.IntN(4))))
	case "empty":
		req.TransactionalID = kmsg.StringPtr("")
	}
	req.TransactionTimeoutMillis = pickInt[int32](f, "timeout", 900000, 900000, 0, -1, 1_000_000_000)
	if v >= 3 {
		req.ProducerID, req.ProducerEpoch = f.producer(deref(req.TransactionalID))
	}
	return req
}

// afterTxn waits for the transaction a step ended or fenced to complete.
func afterTxn(f *fuzzer, req kmsg.Request, resp kmsg.Response) error {
	var txn string
	switch q := req.(type) {
	case *kmsg.InitProducerIDRequest:
		txn = deref(q.TransactionalID)
	case *kmsg.EndTxnRequest:
		txn = q.TransactionalID
	}
	if txn == "" || resp == nil {
		return nil
	}
	if err := f.settleTxn(txn); err != nil {
		return err
	}
	// Kafka 4.4 answers an InitProducerId that fences an ongoing
	// transaction CONCURRENT_TRANSACTIONS once the abort is prepared
	// (TransactionCoordinator.handleInitProducerId, javap) and the client
	// retries; samsa waits for the abort and answers as that retry would
	// (coordinator/txn doc.go). Retry here as a client does, and compare
	// the answer the client ends with (the step's recorded answer becomes
	// the last retry's), so both brokers go on from the same epoch and state.
	q, ok := req.(*kmsg.InitProducerIDRequest)
	if !ok || resp.(*kmsg.InitProducerIDResponse).ErrorCode != kerr.ConcurrentTransactions.Code {
		return nil
	}
	for range 50 {
		retry := *q
		r, err := f.s.Quiet(q.GetVersion(), &retry)
		if err != nil {
			return err
		}
		f.learn(q, r)
		if r.(*kmsg.InitProducerIDResponse).ErrorCode != kerr.ConcurrentTransactions.Code {
			f.s.Steps[len(f.s.Steps)-1].Resp = r
			return f.settleTxn(txn)
		}
		if err := f.settleTxn(txn); err != nil {
			return err
		}
	}
	return fmt.Errorf("%w: %s: InitProducerId %s stays CONCURRENT_TRANSACTIONS", ErrDiffTimeout, f.s.Broker, txn)
}

func (f *fuzzer) txnTopics() []kmsg.AddPartitionsToTxnRequestTopic {
	var out []kmsg.AddPartitionsToTxnRequestTopic
	seen := map[string]bool{}
	for range f.count("topics") {
		t := kmsg.AddPartitionsToTxnRequestTopic{Topic: f.topic("topic")}
		pseen := map[string]bool{} // Kafka merges a partition named twice
		for range f.count("parts") {
			if p := f.partition("p"); fresh(pseen, fmt.Sprint(p)) {
				t.Partitions = append(t.Partitions, p)
			}
		}
		if fresh(seen, t.Topic) {
			out = append(out, t)
		}
	}
	return out
}

func genAddPartitionsToTxn(f *fuzzer, v int16) kmsg.Request {
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	if v < 4 {
		req.TransactionalID = f.txnID("txnid")
		req.ProducerID, req.ProducerEpoch = f.producer(req.TransactionalID)
		req.Topics = f.txnTopics()
		return req
	}
	seen := map[string]bool{} // Kafka keys the answer by transactional id: the last entry of an id wins
	for range f.count("txns") {
		t := kmsg.NewAddPartitionsToTxnRequestTransaction()
		t.TransactionalID = f.txnID("txnid")
		t.ProducerID, t.ProducerEpoch = f.producer(t.TransactionalID)
		t.VerifyOnly = f.maybe(2)
		for _, tt := range f.txnTopics() {
			t.Topics = append(t.Topics, kmsg.AddPartitionsToTxnRequestTransactionTopic{Topic: tt.Topic, Partitions: tt.Partitions})
		}
		if fresh(seen, t.TransactionalID) {
			req.Transactions = append(req.Transactions, t)
		}
	}
	return req
}

func genAddOffsetsToTxn(f *fuzzer, v int16) kmsg.Request {
	req := kmsg.NewPtrAddOffsetsToTxnRequest()
	req.TransactionalID = f.txnID("txnid")
	req.ProducerID, req.ProducerEpoch = f.producer(req.TransactionalID)
	req.Group = f.group("group")
	return req
}

func genEndTxn(f *fuzzer, v int16) kmsg.Request {
	req := kmsg.NewPtrEndTxnRequest()
	req.TransactionalID = f.txnID("txnid")
	req.ProducerID, req.ProducerEpoch = f.producer(req.TransactionalID)
	req.Commit = f.pick("commit", "true", "false") == "true"
	return req
}

func genTxnOffsetCommit(f *fuzzer, v int16) kmsg.Request {
	req := kmsg.NewPtrTxnOffsetCommitRequest()
	seen := map[string]bool{}
	req.TransactionalID = f.txnID("txnid")
	req.ProducerID, req.ProducerEpoch = f.producer(req.TransactionalID)
	req.Group = f.group("group")
	if v >= 3 {
		req.MemberID, req.Generation = f.member(req.Group)
	}
	for range f.count("topics") {
		t := kmsg.NewTxnOffsetCommitRequestTopic()
		t.Topic = f.topic("topic")
		pseen := map[string]bool{} // one entry per partition: Kafka merges them
		for range f.count("parts") {
			p := kmsg.NewTxnOffsetCommitRequestTopicPartition()
			p.Partition, p.Offset, p.LeaderEpoch = f.partition("p"), f.offset("off"), f.epoch("ep")
			p.Metadata = f.str("meta")
			if fresh(pseen, fmt.Sprint(p.Partition)) {
				t.Partitions = append(t.Partitions, p)
			}
		}
		if fresh(seen, t.Topic) {
			req.Topics = append(req.Topics, t)
		}
	}
	return req
}

func genDescribeProducers(f *fuzzer, v int16) kmsg.Request {
	req := kmsg.NewPtrDescribeProducersRequest()
	seen := map[string]bool{}
	for range f.count("topics") {
		t := kmsg.DescribeProducersRequestTopic{Topic: f.topic("topic")}
		for range f.count("parts") {
			t.Partitions = append(t.Partitions, f.partition("p"))
		}
		if fresh(seen, t.Topic) {
			req.Topics = append(req.Topics, t)
		}
	}
	return req
}

func genDescribeTransactions(f *fuzzer, v int16) kmsg.Request {
	req := kmsg.NewPtrDescribeTransactionsRequest()
	req.TransactionalIDs = []string{}
	for range f.count("ids") {
		req.TransactionalIDs = append(req.TransactionalIDs, f.txnID("txnid"))
	}
	return req
}

func genListTransactions(f *fuzzer, v int16) kmsg.Request {
	req := kmsg.NewPtrListTransactionsRequest()
	req.StateFilters = []string{}
	for range pickInt(f, "states", 0, 0, 1, 2) {
		req.StateFilters = append(req.StateFilters, f.pick("state", "Ongoing", "Empty", "CompleteCommit", "bogus", "ongoing"))
	}
	req.ProducerIDFilters = []int64{}
	if f.maybe(4) {
		req.ProducerIDFilters = append(req.ProducerIDFilters, f.producers[fuzzTx].id, -1)
		f.desc = append(f.desc, "pids")
	}
	if v >= 1 {
		req.DurationFilterMillis = pickInt[int64](f, "duration", -1, -1, 0, 1, 3_600_000)
	}
	if v >= 2 && f.maybe(2) {
		req.TransactionalIDPattern = kmsg.StringPtr(f.pick("pattern", "fz-.*", "fz", ".*", "[", ""))
	}
	return req
}

func genOffsetForLeaderEpoch(f *fuzzer, v int16) kmsg.Request {
	req := kmsg.NewPtrOffsetForLeaderEpochRequest()
	seen := map[string]bool{}
	req.ReplicaID = pickInt[int32](f, "replica", -1, -1, 1, -2)
	for range f.count("topics") {
		t := kmsg.NewOffsetForLeaderEpochRequestTopic()
		t.Topic = f.topic("topic")
		for range f.count("parts") {
			p := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
			p.Partition, p.CurrentLeaderEpoch, p.LeaderEpoch = f.partition("p"), f.epoch("cur"), f.epoch("ep")
			t.Partitions = append(t.Partitions, p)
		}
		if fresh(seen, t.Topic) {
			req.Topics = append(req.Topics, t)
		}
	}
	return req
}

func genDescribeTopicPartitions(f *fuzzer, v int16) kmsg.Request {
	req := kmsg.NewPtrDescribeTopicPartitionsRequest()
	for range f.count("topics") {
		req.Topics = append(req.Topics, kmsg.DescribeTopicPartitionsRequestTopic{Topic: f.topic("topic")})
	}
	req.ResponsePartitionLimit = pickInt[int32](f, "limit", 2000, 1, 2, 0, -1, 5000)
	switch f.pick("cursor", "none", "none", "a1", "missing", "a9", "neg") {
	case "a1":
		req.Cursor = &kmsg.DescribeTopicPartitionsRequestCursor{Topic: fuzzA, Partition: 1}
	case "missing":
		req.Cursor = &kmsg.DescribeTopicPartitionsRequestCursor{Topic: "fz-missing", Partition: 0}
	case "a9":
		req.Cursor = &kmsg.DescribeTopicPartitionsRequestCursor{Topic: fuzzA, Partition: 9}
	case "neg":
		req.Cursor = &kmsg.DescribeTopicPartitionsRequestCursor{Topic: fuzzA, Partition: -1}
	}
	return req
}

func genDescribeLogDirs(f *fuzzer, v int16) kmsg.Request {
	req := kmsg.NewPtrDescribeLogDirsRequest()
	seen := map[string]bool{}
	if f.pick("topics", "some", "all", "empty") == "all" {
		req.Topics = nil
		return req
	}
	req.Topics = []kmsg.DescribeLogDirsRequestTopic{}
	if f.desc[len(f.desc)-1] == "topics=empty" {
		return req
	}
	for range f.count("n") {
		t := kmsg.DescribeLogDirsRequestTopic{Topic: f.topic("topic")}
		for range f.count("parts") {
			t.Partitions = append(t.Partitions, f.partition("p"))
		}
		if fresh(seen, t.Topic) {
			req.Topics = append(req.Topics, t)
		}
	}
	return req
}

// genConsumerGroupHeartbeat sends KIP-848 heartbeats: joins of fresh
// groups (alone, so the assignment is theirs at once), the learned
// member's heartbeats and leaves, and invalid fields.
func genConsumerGroupHeartbeat(f *fuzzer, v int16) kmsg.Request {
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	// Not the classic group fz-g: Kafka 4.4 converts a classic group a
	// KIP-848 member joins into a consumer group (the migration of
	// group.consumer.migration.policy), which samsa does not do (it
	// answers GROUP_ID_NOT_FOUND); the conversion would then change fz-g
	// for every later step.
	group := f.pick("group", "cg", "cg", "empty", "long")
	switch group {
	case "long":
		req.Group = strings.Repeat("c", 300)
	}
	member := f.pick("member", "join", "known", "known", "leave", "bogus", "fenced")
	if group == "cg" {
		// A join makes a group of its own, other heartbeats name one an
		// earlier join made: with a second member, Kafka 4.4 computes the
		// new target assignment a moment later (its first answer has the
		// old epoch and no partitions), samsa at once, so the answers
		// would depend on timing.
		if member == "join" || len(f.cgJoined) == 0 {
			req.Group = fmt.Sprintf("fz-cg-%d", f.step)
			f.cgJoined = append(f.cgJoined, req.Group)
		} else {
			req.Group = f.cgJoined[f.r.IntN(len(f.cgJoined))]
		}
	}
	m, known := f.members[req.Group]
	switch member {
	case "join":
		req.MemberEpoch = 0
		if v >= 1 {
			req.MemberID = "fzmember" + strings.Repeat("0", 14) + string(rune('a'+f.r.IntN(3)))
		}
	case "known":
		if known {
			req.MemberID, req.MemberEpoch = m.id, m.generation
		}
	case "leave":
		if known {
			req.MemberID = m.id
		}
		req.MemberEpoch = -1
	case "bogus":
		req.MemberID, req.MemberEpoch = "fz-bogus-member", 3
	case "fenced":
		if known {
			req.MemberID = m.id
		}
		req.MemberEpoch = m.generation + 5
	}
	req.RebalanceTimeoutMillis = pickInt[int32](f, "rebalance", 60000, 60000, -1, 0)
	switch f.pick("sub", "names", "names", "none", "empty", "missing", "regex", "bad-regex") {
	case "names":
		req.SubscribedTopicNames = []string{fuzzA}
	case "empty":
		req.SubscribedTopicNames = []string{}
	case "missing":
		req.SubscribedTopicNames = []string{"fz-missing", fuzzE}
	case "regex":
		if v >= 1 {
			req.SubscribedTopicRegex = kmsg.StringPtr("fz-[ab]")
		}
	case "bad-regex":
		if v >= 1 {
			req.SubscribedTopicRegex = kmsg.StringPtr("fz-[")
		}
	}
	switch f.pick("assignor", "null", "null", "uniform", "range", "bogus") {
	case "uniform", "range", "bogus":
		req.ServerAssignor = kmsg.StringPtr(f.desc[len(f.desc)-1][len("assignor="):])
	}
	if empty := f.maybe(3); req.MemberEpoch == 0 || empty {
		req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	}
	return req
}

func genConsumerGroupDescribe(f *fuzzer, v int16) kmsg.Request {
	req := kmsg.NewPtrConsumerGroupDescribeRequest()
	req.Groups = []string{}
	for range f.count("groups") {
		switch f.pick("group", "cg", "classic", "missing", "empty") {
		case "cg":
			if len(f.cgJoined) == 0 {
				req.Groups = append(req.Groups, "fz-cg-none")
				break
			}
			req.Groups = append(req.Groups, f.cgJoined[f.r.IntN(len(f.cgJoined))])
		case "classic":
			req.Groups = append(req.Groups, fuzzGroup)
		case "missing":
			req.Groups = append(req.Groups, "fz-nogroup")
		default:
			req.Groups = append(req.Groups, "")
		}
	}
	req.IncludeAuthorizedOperations = f.maybe(3)
	return req
}
