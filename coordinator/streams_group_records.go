package coordinator

import (
	"encoding/binary"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/wire"
)

// Key versions of KIP-1071 streams group records in __consumer_offsets,
// encoded as the consumer group ones (consumer_group_records.go: keys not
// flexible, values flexible at version 0), following Kafka 4.4's schemas
// (kafka-group-coordinator-4.4.0.jar, common/message/StreamsGroup*.json):
//
//	17 StreamsGroupMetadata          (group)         Epoch int32, MetadataHash int64 [tags: not written, skipped]
//	19 StreamsGroupMemberMetadata    (group, member) InstanceId?, RackId?, ClientId, ClientHost, RebalanceTimeoutMs, TopologyEpoch, ProcessId, UserEndpoint? {Host, Port uint16}, ClientTags [Key, Value]
//	20 StreamsGroupTargetAssignmentMetadata (group)  AssignmentEpoch int32
//	21 StreamsGroupTargetAssignmentMember (group, member) ActiveTasks, StandbyTasks, WarmupTasks: [SubtopologyId, Partitions]
//	22 StreamsGroupCurrentMemberAssignment (group, member) MemberEpoch, PreviousMemberEpoch, State int8, Active/Standby/Warmup tasks, then the same pending revocation
//	23 StreamsGroupTopology          (group)         Epoch, Subtopologies [Id, SourceTopics, SourceTopicRegex, StateChangelogTopics, RepartitionSinkTopics, RepartitionSourceTopics, CopartitionGroups]
//
// Task offsets, the endpoint epoch and a pending shutdown request are not
// written (Kafka keeps them in memory too); the topology's resolution
// against the cluster is recomputed at the next heartbeat.
const (
	keySTMetadata          = 17
	keySTMemberMetadata    = 19
	keySTTargetMetadata    = 20
	keySTTargetMember      = 21
	keySTCurrentAssignment = 22
	keySTTopology          = 23
)

func isStreamsGroupKey(version int16) bool {
	return version >= keySTMetadata && version <= keySTTopology && version != 18
}

func appendTaskIDs(dst []byte, t taskSet) []byte {
	subs := slices.Sorted(maps.Keys(t))
	subs = slices.DeleteFunc(subs, func(s string) bool { return len(t[s]) == 0 })
	dst = kbin.AppendCompactArrayLen(dst, len(subs))
	for _, s := range subs {
		dst = kbin.AppendCompactString(dst, s)
		dst = kbin.AppendCompactArrayLen(dst, len(t[s]))
		for _, p := range t[s] {
			dst = kbin.AppendInt32(dst, p)
		}
		dst = valueEnd(dst)
	}
	return dst
}

func appendStreamsTasks(dst []byte, a streamsTasks) []byte {
	dst = appendTaskIDs(dst, a.active)
	dst = appendTaskIDs(dst, a.standby)
	return appendTaskIDs(dst, a.warmup)
}

func appendTopicInfos(dst []byte, ts []kmsg.TopicInfo) []byte {
	dst = kbin.AppendCompactArrayLen(dst, len(ts))
	for _, t := range ts {
		dst = kbin.AppendCompactString(dst, t.Topic)
		dst = kbin.AppendInt32(dst, t.NumPartitions)
		dst = kbin.AppendInt16(dst, t.ReplicationFactor)
		dst = kbin.AppendCompactArrayLen(dst, len(t.Configs))
		for _, c := range t.Configs {
			dst = kbin.AppendCompactString(dst, c.Key)
			dst = kbin.AppendCompactString(dst, c.Value)
			dst = valueEnd(dst)
		}
		dst = valueEnd(dst)
	}
	return dst
}

func appendInt16s(dst []byte, vs []int16) []byte {
	dst = kbin.AppendCompactArrayLen(dst, len(vs))
	for _, v := range vs {
		dst = kbin.AppendInt16(dst, v)
	}
	return dst
}

func stTopologyValue(t *kmsg.StreamsGroupHeartbeatRequestTopology) []byte {
	dst := kbin.AppendInt32(valueStart(), t.Epoch)
	dst = kbin.AppendCompactArrayLen(dst, len(t.Subtopologies))
	for _, st := range t.Subtopologies {
		dst = kbin.AppendCompactString(dst, st.SubtopologyID)
		dst = appendCompactStrings(dst, st.SourceTopics)
		dst = appendCompactStrings(dst, st.SourceTopicRegex)
		dst = appendTopicInfos(dst, st.StateChangelogTopics)
		dst = appendCompactStrings(dst, st.RepartitionSinkTopics)
		dst = appendTopicInfos(dst, st.RepartitionSourceTopics)
		dst = kbin.AppendCompactArrayLen(dst, len(st.CopartitionGroups))
		for _, cg := range st.CopartitionGroups {
			dst = appendInt16s(dst, cg.SourceTopics)
			dst = appendInt16s(dst, cg.SourceTopicRegex)
			dst = appendInt16s(dst, cg.RepartitionSourceTopics)
			dst = valueEnd(dst)
		}
		dst = valueEnd(dst)
	}
	return valueEnd(dst)
}

func stMemberMetadataValue(m *stMember) []byte {
	dst := valueStart()
	dst = kbin.AppendCompactNullableString(dst, m.instanceID)
	dst = kbin.AppendCompactNullableString(dst, m.rackID)
	dst = kbin.AppendCompactString(dst, m.clientID)
	dst = kbin.AppendCompactString(dst, m.clientHost)
	dst = kbin.AppendInt32(dst, int32(m.rebalanceTimeout/time.Millisecond))
	dst = kbin.AppendInt32(dst, m.topologyEpoch)
	dst = kbin.AppendCompactString(dst, m.processID)
	if m.userEndpoint == nil {
		dst = append(dst, 0xff) // null struct (-1)
	} else {
		dst = append(dst, 1)
		dst = kbin.AppendCompactString(dst, m.userEndpoint.Host)
		dst = kbin.AppendUint16(dst, m.userEndpoint.Port)
		dst = valueEnd(dst)
	}
	dst = kbin.AppendCompactArrayLen(dst, len(m.clientTags))
	for _, t := range m.clientTags {
		dst = kbin.AppendCompactString(dst, t.Key)
		dst = kbin.AppendCompactString(dst, t.Value)
		dst = valueEnd(dst)
	}
	return valueEnd(dst)
}

func stCurrentValue(m *stMember) []byte {
	dst := valueStart()
	dst = kbin.AppendInt32(dst, m.epoch)
	dst = kbin.AppendInt32(dst, m.prevEpoch)
	dst = kbin.AppendInt8(dst, int8(m.state))
	dst = appendStreamsTasks(dst, m.assigned)
	dst = appendStreamsTasks(dst, streamsTasks{active: m.pendingRevocation, standby: taskSet{}, warmup: taskSet{}})
	return valueEnd(dst)
}

func stGroupKey(version int16, g string) []byte     { return cgGroupKey(version, g) }
func stMemberKey(version int16, g, m string) []byte { return cgMemberKey(version, g, m) }

// sameStreamsMemberMetadata tells whether a member's MemberMetadata record
// would be the same.
func sameStreamsMemberMetadata(a, b *stMember) bool {
	eq := func(x, y *string) bool { return (x == nil) == (y == nil) && (x == nil || *x == *y) }
	ep := (a.userEndpoint == nil) == (b.userEndpoint == nil) &&
		(a.userEndpoint == nil || (a.userEndpoint.Host == b.userEndpoint.Host && a.userEndpoint.Port == b.userEndpoint.Port))
	tags := slices.EqualFunc(a.clientTags, b.clientTags, func(x, y kmsg.StreamsGroupHeartbeatRequestClientTag) bool {
		return x.Key == y.Key && x.Value == y.Value
	})
	return eq(a.instanceID, b.instanceID) && eq(a.rackID, b.rackID) && a.clientID == b.clientID &&
		a.clientHost == b.clientHost && a.rebalanceTimeout == b.rebalanceTimeout && a.topologyEpoch == b.topologyEpoch &&
		a.processID == b.processID && ep && tags
}

// streamsRecords returns the records that take the stored group from
// before (nil: none stored) to after (nil: deleted), in Kafka's order:
// members, group metadata, topology, targets, target metadata, current
// assignments; tombstones of gone members first.
func streamsRecords(before, after *StreamsGroup) []wire.Record {
	var recs []wire.Record
	id := ""
	if before != nil {
		id = before.id
	} else if after != nil {
		id = after.id
	}
	var bm map[string]*stMember
	var bt map[string]streamsTasks
	if before != nil {
		bm, bt = before.members, before.target
	}
	var am map[string]*stMember
	var at map[string]streamsTasks
	if after != nil {
		am, at = after.members, after.target
	}
	for _, mid := range slices.Sorted(maps.Keys(bm)) {
		if am[mid] == nil {
			recs = append(recs,
				wire.Record{Key: stMemberKey(keySTCurrentAssignment, id, mid)},
				wire.Record{Key: stMemberKey(keySTTargetMember, id, mid)},
				wire.Record{Key: stMemberKey(keySTMemberMetadata, id, mid)})
		}
	}
	if after == nil {
		return append(recs,
			wire.Record{Key: stGroupKey(keySTTargetMetadata, id)},
			wire.Record{Key: stGroupKey(keySTTopology, id)},
			wire.Record{Key: stGroupKey(keySTMetadata, id)})
	}
	ids := slices.Sorted(maps.Keys(am))
	for _, mid := range ids {
		if b := bm[mid]; b == nil || !sameStreamsMemberMetadata(b, am[mid]) {
			recs = append(recs, wire.Record{Key: stMemberKey(keySTMemberMetadata, id, mid), Value: stMemberMetadataValue(am[mid])})
		}
	}
	if before == nil || before.epoch != after.epoch {
		recs = append(recs, wire.Record{Key: stGroupKey(keySTMetadata, id), Value: valueEnd(kbin.AppendInt64(kbin.AppendInt32(valueStart(), after.epoch), 0))})
	}
	if after.topology != nil && (before == nil || before.topology != after.topology) {
		recs = append(recs, wire.Record{Key: stGroupKey(keySTTopology, id), Value: stTopologyValue(after.topology)})
	}
	for _, mid := range ids {
		a, ok := at[mid]
		if !ok {
			continue
		}
		if b, ok := bt[mid]; !ok || !b.equal(a) {
			recs = append(recs, wire.Record{Key: stMemberKey(keySTTargetMember, id, mid), Value: valueEnd(appendStreamsTasks(valueStart(), a))})
		}
	}
	if before == nil || before.assignmentEpoch != after.assignmentEpoch {
		recs = append(recs, wire.Record{Key: stGroupKey(keySTTargetMetadata, id), Value: valueEnd(kbin.AppendInt32(valueStart(), after.assignmentEpoch))})
	}
	for _, mid := range ids {
		a, b := am[mid], bm[mid]
		if b == nil || a.epoch != b.epoch || a.prevEpoch != b.prevEpoch || a.state != b.state ||
			!a.assigned.equal(b.assigned) || !a.pendingRevocation.equal(b.pendingRevocation) {
			recs = append(recs, wire.Record{Key: stMemberKey(keySTCurrentAssignment, id, mid), Value: stCurrentValue(a)})
		}
	}
	return recs
}

// stLoad is one streams group as read back.
type stLoad struct {
	hasMetadata bool
	epoch       int32
	targetEpoch int32
	topology    *kmsg.StreamsGroupHeartbeatRequestTopology
	members     map[string]*stMember
	targets     map[string]streamsTasks
	current     map[string]*stMember
}

func (ls *loadState) st(group string) *stLoad {
	if ls.streamsGroups == nil {
		ls.streamsGroups = map[string]*stLoad{}
	}
	l := ls.streamsGroups[group]
	if l == nil {
		l = &stLoad{members: map[string]*stMember{}, targets: map[string]streamsTasks{}, current: map[string]*stMember{}}
		ls.streamsGroups[group] = l
	}
	return l
}

func (r *cgReader) taskIDs() taskSet {
	t := taskSet{}
	n := r.CompactArrayLen()
	for range max(n, 0) {
		s := r.CompactString()
		k := r.CompactArrayLen()
		for range max(k, 0) {
			p := r.Int32()
			if !r.Ok() {
				return t
			}
			t.add(s, p)
		}
		r.skipTags()
		if !r.Ok() {
			return t
		}
	}
	return t
}

func (r *cgReader) streamsTasks() streamsTasks {
	return streamsTasks{active: r.taskIDs(), standby: r.taskIDs(), warmup: r.taskIDs()}
}

func (r *cgReader) topicInfos() []kmsg.TopicInfo {
	n := r.CompactArrayLen()
	out := []kmsg.TopicInfo{}
	for range max(n, 0) {
		t := kmsg.NewTopicInfo()
		t.Topic = r.CompactString()
		t.NumPartitions = r.Int32()
		t.ReplicationFactor = r.Int16()
		k := r.CompactArrayLen()
		for range max(k, 0) {
			c := kmsg.TopicInfoConfig{Key: r.CompactString(), Value: r.CompactString()}
			r.skipTags()
			if !r.Ok() {
				return out
			}
			t.Configs = append(t.Configs, c)
		}
		r.skipTags()
		if !r.Ok() {
			return out
		}
		out = append(out, t)
	}
	return out
}

func (r *cgReader) int16s() []int16 {
	n := r.CompactArrayLen()
	var out []int16
	for range max(n, 0) {
		out = append(out, r.Int16())
		if !r.Ok() {
			return out
		}
	}
	return out
}

// applyStreamsGroup folds one streams group record (key versions 17-23)
// into the load state.
func (ls *loadState) applyStreamsGroup(key, value []byte) error {
	version := int16(binary.BigEndian.Uint16(key))
	kr := cgReader{kbin.Reader{Src: key[2:]}}
	group := kr.String()
	member := ""
	if version == keySTMemberMetadata || version == keySTTargetMember || version == keySTCurrentAssignment {
		member = kr.String()
	}
	if err := kr.Complete(); err != nil {
		return fmt.Errorf("%w: streams group key v%d: %v", ErrCorrupt, version, err)
	}
	l := ls.st(group)
	if value == nil {
		switch version {
		case keySTMetadata:
			delete(ls.streamsGroups, group)
		case keySTTopology:
			l.topology = nil
		case keySTMemberMetadata:
			delete(l.members, member)
		case keySTTargetMetadata:
			l.targetEpoch = 0
		case keySTTargetMember:
			delete(l.targets, member)
		case keySTCurrentAssignment:
			delete(l.current, member)
		}
		return nil
	}
	if len(value) < 2 {
		return fmt.Errorf("%w: streams group value of %d bytes", ErrCorrupt, len(value))
	}
	r := cgReader{kbin.Reader{Src: value[2:]}}
	switch version {
	case keySTMetadata:
		l.hasMetadata = true
		l.epoch = r.Int32()
		r.Int64() // MetadataHash
	case keySTTopology:
		t := kmsg.NewStreamsGroupHeartbeatRequestTopology()
		t.Epoch = r.Int32()
		n := r.CompactArrayLen()
		for range max(n, 0) {
			st := kmsg.NewStreamsGroupHeartbeatRequestTopologySubtopology()
			st.SubtopologyID = r.CompactString()
			st.SourceTopics = r.compactStrings()
			st.SourceTopicRegex = r.compactStrings()
			st.StateChangelogTopics = r.topicInfos()
			st.RepartitionSinkTopics = r.compactStrings()
			st.RepartitionSourceTopics = r.topicInfos()
			k := r.CompactArrayLen()
			for range max(k, 0) {
				cg := kmsg.NewStreamsGroupHeartbeatRequestTopologySubtopologyCopartitionGroup()
				cg.SourceTopics = r.int16s()
				cg.SourceTopicRegex = r.int16s()
				cg.RepartitionSourceTopics = r.int16s()
				r.skipTags()
				if !r.Ok() {
					break
				}
				st.CopartitionGroups = append(st.CopartitionGroups, cg)
			}
			r.skipTags()
			if !r.Ok() {
				break
			}
			t.Subtopologies = append(t.Subtopologies, st)
		}
		l.topology = &t
	case keySTMemberMetadata:
		m := &stMember{modernMember: modernMember{id: member}}
		m.instanceID = r.CompactNullableString()
		m.rackID = r.CompactNullableString()
		m.clientID = r.CompactString()
		m.clientHost = r.CompactString()
		m.rebalanceTimeout = time.Duration(r.Int32()) * time.Millisecond
		m.topologyEpoch = r.Int32()
		m.processID = r.CompactString()
		// A nullable struct: a negative byte is null (Kafka's
		// generated code writes -1), else the struct follows.
		if r.Int8() >= 0 {
			ep := kmsg.NewStreamsGroupHeartbeatRequestUserEndpoint()
			ep.Host = r.CompactString()
			ep.Port = r.Uint16()
			r.skipTags()
			m.userEndpoint = &ep
		}
		n := r.CompactArrayLen()
		for range max(n, 0) {
			t := kmsg.StreamsGroupHeartbeatRequestClientTag{Key: r.CompactString(), Value: r.CompactString()}
			r.skipTags()
			if !r.Ok() {
				break
			}
			m.clientTags = append(m.clientTags, t)
		}
		l.members[member] = m
	case keySTTargetMetadata:
		l.targetEpoch = r.Int32()
	case keySTTargetMember:
		l.targets[member] = r.streamsTasks()
	case keySTCurrentAssignment:
		m := &stMember{modernMember: modernMember{id: member}}
		m.epoch = r.Int32()
		m.prevEpoch = r.Int32()
		m.state = memberState(r.Int8())
		m.assigned = r.streamsTasks()
		m.pendingRevocation = r.streamsTasks().active
		l.current[member] = m
	}
	r.skipTags()
	if err := r.Complete(); err != nil {
		return fmt.Errorf("%w: streams group value (key v%d): %v", ErrCorrupt, version, err)
	}
	return nil
}
