package coordinator

import (
	"encoding/binary"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/wire"
)

// Key versions (Kafka's "apiKey" of coordinator records) of KIP-848
// consumer group records in __consumer_offsets. Keys are not flexible:
// int16 version, then the group id and, for member records, the member id
// as int16-length strings. Values are flexible (compact strings and arrays,
// tagged fields) at value version 0. kmsg has no types for them, so they
// are encoded here, following Kafka's JSON schemas field by field:
//
//	3 ConsumerGroupMetadata          (group)         Epoch int32 [tag 0 MetadataHash, tag 1 CreationTimeMs: not written, skipped]
//	4 ConsumerGroupPartitionMetadata (group)         Topics [TopicId uuid, TopicName, NumPartitions int32, PartitionMetadata [Partition, Racks]]
//	5 ConsumerGroupMemberMetadata    (group, member) InstanceId?, RackId?, ClientId, ClientHost, SubscribedTopicNames, SubscribedTopicRegex?, RebalanceTimeoutMs, ServerAssignor? [tag 0 ClassicMemberMetadata: SessionTimeoutMs, SupportedProtocols [Name, Metadata], for a classic member]
//	6 ConsumerGroupTargetAssignmentMetadata (group)  AssignmentEpoch int32
//	7 ConsumerGroupTargetAssignmentMember (group, member) TopicPartitions [TopicId, Partitions]
//	8 ConsumerGroupCurrentMemberAssignment (group, member) MemberEpoch, PreviousMemberEpoch, State int8, AssignedPartitions, PartitionsPendingRevocation
//
// A null value is a tombstone, as for the other records.
const (
	keyCGMetadata          = 3
	keyCGPartitionMetadata = 4
	keyCGMemberMetadata    = 5
	keyCGTargetMetadata    = 6
	keyCGTargetMember      = 7
	keyCGCurrentAssignment = 8
)

func cgKey(version int16, group string, member *string) []byte {
	dst := kbin.AppendInt16(nil, version)
	dst = kbin.AppendString(dst, group)
	if member != nil {
		dst = kbin.AppendString(dst, *member)
	}
	return dst
}

func cgGroupKey(version int16, group string) []byte { return cgKey(version, group, nil) }
func cgMemberKey(version int16, group, member string) []byte {
	return cgKey(version, group, &member)
}

// valueStart is a version-0 value header.
func valueStart() []byte { return kbin.AppendInt16(nil, 0) }

// valueEnd appends an empty tagged-field section.
func valueEnd(dst []byte) []byte { return kbin.AppendUvarint(dst, 0) }

func appendCompactStrings(dst []byte, ss []string) []byte {
	dst = kbin.AppendCompactArrayLen(dst, len(ss))
	for _, s := range ss {
		dst = kbin.AppendCompactString(dst, s)
	}
	return dst
}

// appendTopicPartitions encodes an Assignment as [TopicId, Partitions,
// tags], topics sorted. With epochs, each topic carries tag 0,
// AssignmentEpochs (KIP-1251): the epoch each partition was assigned at,
// aligned with Partitions.
func appendTopicPartitions(dst []byte, a Assignment, epochs map[assignTP]int32) []byte {
	ids := a.topicIDs()
	dst = kbin.AppendCompactArrayLen(dst, len(ids))
	for _, id := range ids {
		dst = kbin.AppendUuid(dst, id)
		ps := a[id]
		dst = kbin.AppendCompactArrayLen(dst, len(ps))
		for _, p := range ps {
			dst = kbin.AppendInt32(dst, p)
		}
		if epochs == nil {
			dst = valueEnd(dst)
			continue
		}
		field := kbin.AppendCompactArrayLen(nil, len(ps))
		for _, p := range ps {
			field = kbin.AppendInt32(field, epochs[assignTP{id, p}])
		}
		dst = kbin.AppendUvarint(dst, 1) // one tagged field
		dst = kbin.AppendUvarint(dst, 0) // tag 0
		dst = kbin.AppendUvarint(dst, uint32(len(field)))
		dst = append(dst, field...)
	}
	return dst
}

func cgMetadataValue(epoch int32) []byte {
	return valueEnd(kbin.AppendInt32(valueStart(), epoch))
}

func cgPartitionMetadataValue(meta map[string]topicMeta) []byte {
	names := make([]string, 0, len(meta))
	for n := range meta {
		names = append(names, n)
	}
	slices.Sort(names)
	dst := kbin.AppendCompactArrayLen(valueStart(), len(names))
	for _, n := range names {
		m := meta[n]
		dst = kbin.AppendUuid(dst, m.id)
		dst = kbin.AppendCompactString(dst, n)
		dst = kbin.AppendInt32(dst, m.partitions)
		dst = kbin.AppendCompactArrayLen(dst, 0) // PartitionMetadata: racks unused since Kafka 4.0
		dst = valueEnd(dst)
	}
	return valueEnd(dst)
}

func cgMemberMetadataValue(m *cgMember) []byte {
	dst := valueStart()
	dst = kbin.AppendCompactNullableString(dst, m.instanceID)
	dst = kbin.AppendCompactNullableString(dst, m.rackID)
	dst = kbin.AppendCompactString(dst, m.clientID)
	dst = kbin.AppendCompactString(dst, m.clientHost)
	dst = appendCompactStrings(dst, m.topicNames)
	var regex *string
	if m.regex != "" {
		regex = &m.regex
	}
	dst = kbin.AppendCompactNullableString(dst, regex)
	dst = kbin.AppendInt32(dst, int32(m.rebalanceTimeout/time.Millisecond))
	var assignor *string
	if m.serverAssignor != "" {
		assignor = &m.serverAssignor
	}
	dst = kbin.AppendCompactNullableString(dst, assignor)
	if m.classic == nil {
		return valueEnd(dst)
	}
	// Tag 0: ClassicMemberMetadata (SessionTimeoutMs, SupportedProtocols
	// [Name, Metadata]), as Kafka writes for a classic member.
	cm := kbin.AppendInt32(nil, int32(m.classic.sessionTimeout/time.Millisecond))
	cm = kbin.AppendCompactArrayLen(cm, len(m.classic.protocols))
	for _, p := range m.classic.protocols {
		cm = kbin.AppendCompactString(cm, p.Name)
		cm = kbin.AppendCompactBytes(cm, p.Metadata)
		cm = kbin.AppendUvarint(cm, 0)
	}
	cm = kbin.AppendUvarint(cm, 0)
	dst = kbin.AppendUvarint(dst, 1) // one tagged field
	dst = kbin.AppendUvarint(dst, 0) // tag 0
	dst = kbin.AppendUvarint(dst, uint32(len(cm)))
	return append(dst, cm...)
}

func cgTargetMetadataValue(epoch int32) []byte {
	return valueEnd(kbin.AppendInt32(valueStart(), epoch))
}

func cgTargetMemberValue(a Assignment) []byte {
	return valueEnd(appendTopicPartitions(valueStart(), a, nil))
}

func cgCurrentAssignmentValue(m *cgMember) []byte {
	dst := valueStart()
	dst = kbin.AppendInt32(dst, m.epoch)
	dst = kbin.AppendInt32(dst, m.prevEpoch)
	dst = kbin.AppendInt8(dst, int8(m.state))
	dst = appendTopicPartitions(dst, m.assigned, m.epochs)
	dst = appendTopicPartitions(dst, m.pendingRevocation, m.epochs)
	return valueEnd(dst)
}

// Record builders: what a consumer group writes.

func recCGMetadata(g string, epoch int32) wire.Record {
	return wire.Record{Key: cgGroupKey(keyCGMetadata, g), Value: cgMetadataValue(epoch)}
}

func recCGPartitionMetadata(g string, meta map[string]topicMeta) wire.Record {
	return wire.Record{Key: cgGroupKey(keyCGPartitionMetadata, g), Value: cgPartitionMetadataValue(meta)}
}

func recCGMember(g string, m *cgMember) wire.Record {
	return wire.Record{Key: cgMemberKey(keyCGMemberMetadata, g, m.id), Value: cgMemberMetadataValue(m)}
}

func recCGTargetMetadata(g string, epoch int32) wire.Record {
	return wire.Record{Key: cgGroupKey(keyCGTargetMetadata, g), Value: cgTargetMetadataValue(epoch)}
}

func recCGTargetMember(g, member string, a Assignment) wire.Record {
	return wire.Record{Key: cgMemberKey(keyCGTargetMember, g, member), Value: cgTargetMemberValue(a)}
}

func recCGCurrent(g string, m *cgMember) wire.Record {
	return wire.Record{Key: cgMemberKey(keyCGCurrentAssignment, g, m.id), Value: cgCurrentAssignmentValue(m)}
}

// recsCGMemberGone are the tombstones of a member, in Kafka's order:
// current assignment, target assignment, member metadata.
func recsCGMemberGone(g, member string) []wire.Record {
	return []wire.Record{
		{Key: cgMemberKey(keyCGCurrentAssignment, g, member)},
		{Key: cgMemberKey(keyCGTargetMember, g, member)},
		{Key: cgMemberKey(keyCGMemberMetadata, g, member)},
	}
}

// recsCGGroupGone are the tombstones of an empty group's own records.
func recsCGGroupGone(g string) []wire.Record {
	return []wire.Record{
		{Key: cgGroupKey(keyCGTargetMetadata, g)},
		{Key: cgGroupKey(keyCGPartitionMetadata, g)},
		{Key: cgGroupKey(keyCGMetadata, g)},
	}
}

// Decoding.

// cgReader wraps kbin.Reader with the few composite shapes we need.
type cgReader struct{ kbin.Reader }

func (r *cgReader) compactStrings() []string {
	n := r.CompactArrayLen()
	if n <= 0 || !r.Ok() {
		return nil
	}
	out := make([]string, 0, min(int(n), 1024))
	for range n {
		out = append(out, r.CompactString())
		if !r.Ok() {
			return nil
		}
	}
	return out
}

// classicTags reads the tagged fields of a ConsumerGroupMemberMetadata
// value: tag 0 is the classic member metadata, others are skipped.
func (r *cgReader) classicTags() *classicMeta {
	var out *classicMeta
	n := r.Uvarint()
	for range n {
		tag, size := r.Uvarint(), r.Uvarint()
		body := r.Span(int(size))
		if !r.Ok() {
			return nil
		}
		if tag != 0 {
			continue
		}
		br := cgReader{kbin.Reader{Src: body}}
		cm := &classicMeta{sessionTimeout: time.Duration(br.Int32()) * time.Millisecond}
		np := br.CompactArrayLen()
		for i := int32(0); i < np && br.Ok(); i++ {
			p := kmsg.NewJoinGroupRequestProtocol()
			p.Name = br.CompactString()
			p.Metadata = slices.Clone(br.CompactBytes())
			br.skipTags()
			cm.protocols = append(cm.protocols, p)
		}
		if br.Ok() {
			out = cm
		}
	}
	return out
}

// skipTags skips a tagged-field section.
func (r *cgReader) skipTags() {
	n := r.Uvarint()
	for range n {
		r.Uvarint() // tag
		size := r.Uvarint()
		r.Span(int(size))
		if !r.Ok() {
			return
		}
	}
}

// topicPartitions decodes what appendTopicPartitions wrote; assignment
// epochs (tag 0) go into epochs when it is not nil.
func (r *cgReader) topicPartitions(epochs map[assignTP]int32) Assignment {
	a := Assignment{}
	n := r.CompactArrayLen()
	for range max(n, 0) {
		id := r.Uuid()
		k := r.CompactArrayLen()
		var ps []int32
		for range max(k, 0) {
			p := r.Int32()
			if !r.Ok() {
				return a
			}
			ps = append(ps, p)
			a.add(id, p)
		}
		if k == 0 {
			a[id] = nil
		}
		tags := r.Uvarint()
		for range tags {
			tag, size := r.Uvarint(), r.Uvarint()
			field := cgReader{kbin.Reader{Src: r.Span(int(size))}}
			if tag != 0 || epochs == nil {
				continue
			}
			if e := field.CompactArrayLen(); int(e) == len(ps) {
				for _, p := range ps {
					epochs[assignTP{id, p}] = field.Int32()
				}
			}
			if !r.Ok() {
				return a
			}
		}
		if !r.Ok() {
			return a
		}
	}
	return a
}

// cgLoad is one consumer group as read back from __consumer_offsets.
type cgLoad struct {
	hasMetadata bool
	epoch       int32
	meta        map[string]topicMeta
	targetEpoch int32
	members     map[string]*cgMember // from MemberMetadata
	targets     map[string]Assignment
	current     map[string]*cgMember // from CurrentMemberAssignment (epochs, state, partitions)
}

func (ls *loadState) cg(group string) *cgLoad {
	if ls.consumerGroups == nil {
		ls.consumerGroups = map[string]*cgLoad{}
	}
	l := ls.consumerGroups[group]
	if l == nil {
		l = &cgLoad{members: map[string]*cgMember{}, targets: map[string]Assignment{}, current: map[string]*cgMember{}}
		ls.consumerGroups[group] = l
	}
	return l
}

// applyConsumerGroup folds one KIP-848 record (key version 3-8) into the
// load state; other versions are ignored.
func (ls *loadState) applyConsumerGroup(key, value []byte) error {
	version := int16(binary.BigEndian.Uint16(key))
	if version < keyCGMetadata || version > keyCGCurrentAssignment {
		ls.unknownType(version)
		return nil
	}
	kr := cgReader{kbin.Reader{Src: key[2:]}}
	group := kr.String()
	member := ""
	if version == keyCGMemberMetadata || version == keyCGTargetMember || version == keyCGCurrentAssignment {
		member = kr.String()
	}
	if err := kr.Complete(); err != nil {
		return fmt.Errorf("%w: consumer group key v%d: %v", ErrCorrupt, version, err)
	}
	l := ls.cg(group)
	if value == nil {
		switch version {
		case keyCGMetadata:
			delete(ls.consumerGroups, group)
		case keyCGPartitionMetadata:
			l.meta = nil
		case keyCGMemberMetadata:
			delete(l.members, member)
		case keyCGTargetMetadata:
			l.targetEpoch = 0
		case keyCGTargetMember:
			delete(l.targets, member)
		case keyCGCurrentAssignment:
			delete(l.current, member)
		}
		return nil
	}
	if len(value) < 2 {
		return fmt.Errorf("%w: consumer group value of %d bytes", ErrCorrupt, len(value))
	}
	r := cgReader{kbin.Reader{Src: value[2:]}}
	switch version {
	case keyCGMetadata:
		l.hasMetadata = true
		l.epoch = r.Int32()
	case keyCGPartitionMetadata:
		l.meta = map[string]topicMeta{}
		n := r.CompactArrayLen()
		for range max(n, 0) {
			id := r.Uuid()
			name := r.CompactString()
			parts := r.Int32()
			k := r.CompactArrayLen()
			for range max(k, 0) {
				r.Int32()
				r.compactStrings()
				r.skipTags()
				if !r.Ok() {
					break
				}
			}
			r.skipTags()
			if !r.Ok() {
				break
			}
			l.meta[name] = topicMeta{id: id, partitions: parts}
		}
	case keyCGMemberMetadata:
		m := &cgMember{modernMember: modernMember{id: member}}
		m.instanceID = r.CompactNullableString()
		m.rackID = r.CompactNullableString()
		m.clientID = r.CompactString()
		m.clientHost = r.CompactString()
		m.topicNames = r.compactStrings()
		if re := r.CompactNullableString(); re != nil {
			m.regex = *re
		}
		m.rebalanceTimeout = time.Duration(r.Int32()) * time.Millisecond
		if a := r.CompactNullableString(); a != nil {
			m.serverAssignor = *a
		}
		m.classic = r.classicTags()
		l.members[member] = m
	case keyCGTargetMetadata:
		l.targetEpoch = r.Int32()
	case keyCGTargetMember:
		l.targets[member] = r.topicPartitions(nil)
	case keyCGCurrentAssignment:
		m := &cgMember{modernMember: modernMember{id: member}}
		m.epoch = r.Int32()
		m.prevEpoch = r.Int32()
		m.state = memberState(r.Int8())
		m.epochs = map[assignTP]int32{}
		m.assigned = r.topicPartitions(m.epochs)
		m.pendingRevocation = r.topicPartitions(m.epochs)
		l.current[member] = m
	}
	if version != keyCGMemberMetadata { // its tags were read with it
		r.skipTags()
	}
	if err := r.Complete(); err != nil {
		return fmt.Errorf("%w: consumer group value (key v%d): %v", ErrCorrupt, version, err)
	}
	return nil
}
