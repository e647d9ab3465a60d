package coordinator

import (
	"encoding/binary"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"

	"github.com/samsa-broker/samsa/wire"
)

// Key versions of KIP-932 share group records in __consumer_offsets, as
// Kafka 4.4 writes them (keys not flexible: int16 version, group id and,
// for member records, member id; values flexible at version 0):
//
//	10 ShareGroupMemberMetadata (group, member)          RackId?, ClientId, ClientHost, SubscribedTopicNames
//	11 ShareGroupMetadata (group)                        Epoch int32, MetadataHash int64
//	12 ShareGroupTargetAssignmentMetadata (group)        AssignmentEpoch int32 [tag 0 AssignmentTimestamp: not written]
//	13 ShareGroupTargetAssignmentMember (group, member)  TopicPartitions [TopicId, Partitions]
//	14 ShareGroupCurrentMemberAssignment (group, member) MemberEpoch, PreviousMemberEpoch, State int8, AssignedPartitions
//	15 ShareGroupStatePartitionMetadata (group)          InitializingTopics, InitializedTopics [TopicId, TopicName, Partitions], DeletingTopics [TopicId, TopicName]
//
// samsa writes InitializingTopics and DeletingTopics empty: a
// share-partition being initialized is kept in memory only (see
// ShareGroup.initializing), and deletions are done before the record that
// forgets them is written. Kafka's loader reads such records fine.
const (
	keySGMemberMetadata         = 10
	keySGMetadata               = 11
	keySGTargetMetadata         = 12
	keySGTargetMember           = 13
	keySGCurrentAssignment      = 14
	keySGStatePartitionMetadata = 15
)

func recSGMember(g string, m *sgMember) wire.Record {
	dst := valueStart()
	dst = kbin.AppendCompactNullableString(dst, m.rackID)
	dst = kbin.AppendCompactString(dst, m.clientID)
	dst = kbin.AppendCompactString(dst, m.clientHost)
	dst = appendCompactStrings(dst, m.topicNames)
	return wire.Record{Key: cgMemberKey(keySGMemberMetadata, g, m.id), Value: valueEnd(dst)}
}

func recSGMetadata(g string, epoch int32, hash int64) wire.Record {
	dst := kbin.AppendInt32(valueStart(), epoch)
	dst = kbin.AppendInt64(dst, hash)
	return wire.Record{Key: cgGroupKey(keySGMetadata, g), Value: valueEnd(dst)}
}

func recSGTargetMetadata(g string, epoch int32) wire.Record {
	return wire.Record{Key: cgGroupKey(keySGTargetMetadata, g), Value: valueEnd(kbin.AppendInt32(valueStart(), epoch))}
}

func recSGTargetMember(g, member string, a Assignment) wire.Record {
	return wire.Record{Key: cgMemberKey(keySGTargetMember, g, member), Value: valueEnd(appendTopicPartitions(valueStart(), a, nil))}
}

func recSGCurrent(g string, m *sgMember) wire.Record {
	dst := valueStart()
	dst = kbin.AppendInt32(dst, m.epoch)
	dst = kbin.AppendInt32(dst, m.prevEpoch)
	dst = kbin.AppendInt8(dst, 0) // STABLE: share members have no other state
	dst = appendTopicPartitions(dst, m.assigned, nil)
	return wire.Record{Key: cgMemberKey(keySGCurrentAssignment, g, m.id), Value: valueEnd(dst)}
}

func recSGStatePartitions(g string, initialized map[[16]byte]*sgTopic) wire.Record {
	dst := kbin.AppendCompactArrayLen(valueStart(), 0) // InitializingTopics
	ids := sortedIDs(initialized)
	dst = kbin.AppendCompactArrayLen(dst, len(ids))
	for _, id := range ids {
		t := initialized[id]
		dst = kbin.AppendUuid(dst, id)
		dst = kbin.AppendCompactString(dst, t.name)
		dst = kbin.AppendCompactArrayLen(dst, len(t.partitions))
		for _, p := range t.partitions {
			dst = kbin.AppendInt32(dst, p)
		}
		dst = valueEnd(dst)
	}
	dst = kbin.AppendCompactArrayLen(dst, 0) // DeletingTopics
	return wire.Record{Key: cgGroupKey(keySGStatePartitionMetadata, g), Value: valueEnd(dst)}
}

// recsSGMemberGone are the tombstones of a share member.
func recsSGMemberGone(g, member string) []wire.Record {
	return []wire.Record{
		{Key: cgMemberKey(keySGCurrentAssignment, g, member)},
		{Key: cgMemberKey(keySGTargetMember, g, member)},
		{Key: cgMemberKey(keySGMemberMetadata, g, member)},
	}
}

// recsSGGroupGone are the tombstones of an empty share group's records.
func recsSGGroupGone(g string) []wire.Record {
	return []wire.Record{
		{Key: cgGroupKey(keySGStatePartitionMetadata, g)},
		{Key: cgGroupKey(keySGTargetMetadata, g)},
		{Key: cgGroupKey(keySGMetadata, g)},
	}
}

// sgLoad is one share group as read back from __consumer_offsets.
type sgLoad struct {
	hasMetadata bool
	epoch       int32
	hash        int64
	targetEpoch int32
	members     map[string]*sgMember
	targets     map[string]Assignment
	current     map[string]*sgMember
	initialized map[[16]byte]*sgTopic
}

func (ls *loadState) sg(group string) *sgLoad {
	if ls.shareGroups == nil {
		ls.shareGroups = map[string]*sgLoad{}
	}
	l := ls.shareGroups[group]
	if l == nil {
		l = &sgLoad{members: map[string]*sgMember{}, targets: map[string]Assignment{}, current: map[string]*sgMember{}, initialized: map[[16]byte]*sgTopic{}}
		ls.shareGroups[group] = l
	}
	return l
}

// isShareGroupKey tells whether a key version is a share group record's.
func isShareGroupKey(version int16) bool {
	return version >= keySGMemberMetadata && version <= keySGStatePartitionMetadata
}

// applyShareGroup folds one share group record (key version 10-15) into
// the load state.
func (ls *loadState) applyShareGroup(key, value []byte) error {
	version := int16(binary.BigEndian.Uint16(key))
	kr := cgReader{kbin.Reader{Src: key[2:]}}
	group := kr.String()
	member := ""
	if version == keySGMemberMetadata || version == keySGTargetMember || version == keySGCurrentAssignment {
		member = kr.String()
	}
	if err := kr.Complete(); err != nil {
		return fmt.Errorf("%w: share group key v%d: %v", ErrCorrupt, version, err)
	}
	l := ls.sg(group)
	if value == nil {
		switch version {
		case keySGMetadata:
			delete(ls.shareGroups, group)
		case keySGMemberMetadata:
			delete(l.members, member)
		case keySGTargetMetadata:
			l.targetEpoch = 0
		case keySGTargetMember:
			delete(l.targets, member)
		case keySGCurrentAssignment:
			delete(l.current, member)
		case keySGStatePartitionMetadata:
			l.initialized = map[[16]byte]*sgTopic{}
		}
		return nil
	}
	if len(value) < 2 {
		return fmt.Errorf("%w: share group value of %d bytes", ErrCorrupt, len(value))
	}
	r := cgReader{kbin.Reader{Src: value[2:]}}
	switch version {
	case keySGMemberMetadata:
		m := &sgMember{id: member}
		m.rackID = r.CompactNullableString()
		m.clientID = r.CompactString()
		m.clientHost = r.CompactString()
		m.topicNames = r.compactStrings()
		l.members[member] = m
	case keySGMetadata:
		l.hasMetadata = true
		l.epoch = r.Int32()
		l.hash = r.Int64()
	case keySGTargetMetadata:
		l.targetEpoch = r.Int32()
	case keySGTargetMember:
		l.targets[member] = r.topicPartitions(nil)
	case keySGCurrentAssignment:
		m := &sgMember{id: member}
		m.epoch = r.Int32()
		m.prevEpoch = r.Int32()
		r.Int8()
		m.assigned = r.topicPartitions(nil)
		l.current[member] = m
	case keySGStatePartitionMetadata:
		l.initialized = map[[16]byte]*sgTopic{}
		readTopics := func(keep bool) {
			n := r.CompactArrayLen()
			for range max(n, 0) {
				id := r.Uuid()
				t := &sgTopic{name: r.CompactString()}
				k := r.CompactArrayLen()
				for range max(k, 0) {
					t.partitions = append(t.partitions, r.Int32())
				}
				r.skipTags()
				if !r.Ok() {
					return
				}
				if keep && len(t.partitions) > 0 {
					l.initialized[id] = t
				}
			}
		}
		readTopics(false) // initializing: Kafka retries them; samsa re-initializes at the next heartbeat
		readTopics(true)
		n := r.CompactArrayLen() // deleting
		for range max(n, 0) {
			r.Uuid()
			r.CompactString()
			r.skipTags()
		}
	}
	r.skipTags()
	if err := r.Complete(); err != nil {
		return fmt.Errorf("%w: share group value (key v%d): %v", ErrCorrupt, version, err)
	}
	return nil
}

// restoreShareGroup rebuilds a share group from its records; sessions
// restart at now.
func restoreShareGroup(cfg *ShareGroupConfig, id string, l *sgLoad, now time.Time) *ShareGroup {
	g := NewShareGroup(cfg, id, now)
	g.epoch, g.metadataHash, g.assignmentEpoch = l.epoch, l.hash, l.targetEpoch
	g.initialized = l.initialized
	for mid, m := range l.members {
		if cur := l.current[mid]; cur != nil {
			m.epoch, m.prevEpoch, m.assigned = cur.epoch, cur.prevEpoch, cur.assigned
		}
		if m.assigned == nil {
			m.assigned = Assignment{}
		}
		m.sessionDeadline = now.Add(cfg.SessionTimeout)
		g.members[mid] = m
	}
	for mid, a := range l.targets {
		if _, ok := g.members[mid]; ok {
			g.target[mid] = a
		}
	}
	return g
}
