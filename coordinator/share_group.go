package coordinator

import (
	"fmt"
	"hash/fnv"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/wire"
)

// ShareGroupConfig holds the broker settings of KIP-932 share groups.
type ShareGroupConfig struct {
	SessionTimeout    time.Duration // group.share.session.timeout.ms
	HeartbeatInterval time.Duration // group.share.heartbeat.interval.ms
	MaxSize           int           // group.share.max.size
}

// sgMember is one member of a share group. A share member's assignment is
// its target itself: share groups have no revocation handshake (several
// members may fetch one partition), so a member takes its target at once.
type sgMember struct {
	id         string
	rackID     *string
	clientID   string
	clientHost string
	topicNames []string // sorted

	epoch     int32
	prevEpoch int32
	assigned  Assignment

	sessionDeadline time.Time
}

func (m *sgMember) clone() *sgMember {
	c := *m
	c.topicNames = slices.Clone(m.topicNames)
	c.assigned = m.assigned.clone()
	return &c
}

// sgTopic is one topic of a share group's initialized share-partitions.
type sgTopic struct {
	name       string
	partitions []int32 // sorted
}

// ShareGroup is the KIP-932 state machine of one share group: members with
// epochs, a group epoch bumped on every membership or subscription change
// and whenever share-partitions become initialized, a target assignment
// computed by the share assignor over the initialized share-partitions of
// the subscribed topics, and the set of share-partitions whose state the
// group initialized (ShareGroupStatePartitionMetadata). It does no IO and
// reads no clock; methods return the records to write. Not safe for
// concurrent use: the shard goroutine owns it.
type ShareGroup struct {
	cfg *ShareGroupConfig
	id  string

	epoch           int32
	assignmentEpoch int32
	// metadataHash is a hash of the subscribed topics (IDs, names,
	// partition counts) at the last epoch bump: a change of the topics
	// bumps the epoch, as Kafka's MetadataHash does.
	metadataHash int64
	members      map[string]*sgMember
	target       map[string]Assignment
	// initialized are the share-partitions whose state this group
	// initialized, by topic ID (durable).
	initialized map[[16]byte]*sgTopic
	// initializing are the share-partitions a heartbeat is initializing
	// right now (memory only: a restart forgets them and they are
	// initialized again, which is safe since none was assigned yet).
	initializing map[assignTP]bool
	emptySince   time.Time
}

// NewShareGroup returns an empty share group at epoch 1, where Kafka 4.4
// starts every new group of KIP-848's kind (ModernGroup's constructor, the
// base of its ShareGroup): the first member's join bumps it to 2.
func NewShareGroup(cfg *ShareGroupConfig, id string, now time.Time) *ShareGroup {
	return &ShareGroup{
		cfg:          cfg,
		id:           id,
		epoch:        1,
		members:      map[string]*sgMember{},
		target:       map[string]Assignment{},
		initialized:  map[[16]byte]*sgTopic{},
		initializing: map[assignTP]bool{},
		emptySince:   now,
	}
}

// ID returns the group id.
func (g *ShareGroup) ID() string { return g.id }

// Epoch returns the group epoch.
func (g *ShareGroup) Epoch() int32 { return g.epoch }

// Empty tells whether the group has no member.
func (g *ShareGroup) Empty() bool { return len(g.members) == 0 }

// StateName returns the state as Kafka names a share group's: Empty or
// Stable.
func (g *ShareGroup) StateName() string {
	if len(g.members) == 0 {
		return "Empty"
	}
	return "Stable"
}

func (g *ShareGroup) clone() *ShareGroup {
	c := *g
	c.members = make(map[string]*sgMember, len(g.members))
	for id, m := range g.members {
		c.members[id] = m.clone()
	}
	c.target = make(map[string]Assignment, len(g.target))
	for id, a := range g.target {
		c.target[id] = a.clone()
	}
	c.initialized = make(map[[16]byte]*sgTopic, len(g.initialized))
	for id, t := range g.initialized {
		c.initialized[id] = &sgTopic{name: t.name, partitions: slices.Clone(t.partitions)}
	}
	c.initializing = maps.Clone(g.initializing)
	return &c
}

// isInitialized tells whether the group initialized one share-partition.
func (g *ShareGroup) isInitialized(id [16]byte, p int32) bool {
	t := g.initialized[id]
	if t == nil {
		return false
	}
	_, ok := slices.BinarySearch(t.partitions, p)
	return ok
}

// InitializedPartitions returns the group's initialized share-partitions.
func (g *ShareGroup) InitializedPartitions() []SharePartition {
	var out []SharePartition
	for _, id := range sortedIDs(g.initialized) {
		t := g.initialized[id]
		for _, p := range t.partitions {
			out = append(out, SharePartition{TopicID: id, Topic: t.name, Partition: p})
		}
	}
	return out
}

// SharePartition names one share-partition of a group.
type SharePartition struct {
	TopicID   [16]byte
	Topic     string
	Partition int32
}

func sortedIDs[V any](m map[[16]byte]V) [][16]byte {
	ids := slices.Collect(maps.Keys(m))
	slices.SortFunc(ids, func(a, b [16]byte) int { return strings.Compare(string(a[:]), string(b[:])) })
	return ids
}

// sgHBError sets an error on a share heartbeat response; an empty msg
// leaves the message null.
func sgHBError(resp *kmsg.ShareGroupHeartbeatResponse, e *kerr.Error, msg string) {
	resp.ErrorCode = e.Code
	if msg != "" {
		resp.ErrorMessage = &msg
	}
}

// validateShareHeartbeat checks the request fields that do not depend on
// the group (Kafka's throwIfShareGroupHeartbeatRequestIsInvalid).
func validateShareHeartbeat(req *kmsg.ShareGroupHeartbeatRequest) (*kerr.Error, string) {
	switch {
	case req.GroupID == "":
		return kerr.InvalidRequest, "GroupId can't be empty."
	case strings.TrimSpace(req.MemberID) == "", len(req.MemberID) > 36:
		// Kafka 4.4 answers these two without a message.
		return kerr.InvalidRequest, ""
	case req.RackID != nil && *req.RackID == "":
		return kerr.InvalidRequest, "RackId can't be empty."
	case req.MemberEpoch < leaveGroupEpoch:
		return kerr.InvalidRequest, "MemberEpoch is invalid."
	case req.MemberEpoch == 0 && len(req.SubscribedTopicNames) == 0:
		return kerr.InvalidRequest, "SubscribedTopicNames must be set in first request."
	}
	return nil, ""
}

// ShareHeartbeatResult is what a share heartbeat leaves to do outside the
// shard: share-partitions to initialize, each with the start offset Kafka
// passes (-1 for a topic the group sees for the first time, so that the
// partition leader applies share.auto.offset.reset; 0 for a partition
// added to a topic the group already has, so nothing produced to it is
// skipped), at the group epoch as state epoch.
type ShareHeartbeatResult struct {
	Initialize []ShareInit
	StateEpoch int32
}

// ShareInit is one share-partition to initialize.
type ShareInit struct {
	SharePartition
	StartOffset int64
}

// Heartbeat runs one ShareGroupHeartbeat (validated) against the group and
// fills resp. It returns the records to write and the share-partitions to
// initialize, which it marks initializing; on an error in resp nothing
// changed.
func (g *ShareGroup) Heartbeat(now time.Time, c Client, img TopicImage, req *kmsg.ShareGroupHeartbeatRequest, resp *kmsg.ShareGroupHeartbeatResponse) ([]wire.Record, ShareHeartbeatResult) {
	if req.MemberEpoch == leaveGroupEpoch {
		m := g.members[req.MemberID]
		if m == nil {
			sgHBError(resp, kerr.UnknownMemberID, "Member "+req.MemberID+" is not a member of group "+g.id+".")
			return nil, ShareHeartbeatResult{}
		}
		resp.MemberID = &req.MemberID
		resp.MemberEpoch = leaveGroupEpoch
		return g.removeMember(now, m.id), ShareHeartbeatResult{}
	}
	old := g.members[req.MemberID]
	var m *sgMember
	switch {
	case old == nil && req.MemberEpoch != 0:
		sgHBError(resp, kerr.UnknownMemberID, "Member "+req.MemberID+" is not a member of group "+g.id+".")
		return nil, ShareHeartbeatResult{}
	case old == nil:
		if g.cfg.MaxSize > 0 && len(g.members) >= g.cfg.MaxSize {
			sgHBError(resp, kerr.GroupMaxSizeReached, "the share group has reached its maximum number of members")
			return nil, ShareHeartbeatResult{}
		}
		m = &sgMember{id: req.MemberID, assigned: Assignment{}}
	default:
		// A member re-joining with epoch 0 keeps its id; otherwise the
		// epoch must be the member's, or the previous one when our
		// answer bumping it was lost.
		if req.MemberEpoch > old.epoch {
			sgHBError(resp, kerr.FencedMemberEpoch, fmt.Sprintf("The share group member has a greater member epoch (%d) than the one known by the group coordinator (%d). The member must abandon all its partitions and rejoin.", req.MemberEpoch, old.epoch))
			return nil, ShareHeartbeatResult{}
		}
		if req.MemberEpoch != 0 && req.MemberEpoch < old.epoch && req.MemberEpoch != old.prevEpoch {
			sgHBError(resp, kerr.FencedMemberEpoch, fmt.Sprintf("The share group member has a smaller member epoch (%d) than the one known by the group coordinator (%d), and it does not match the previous member epoch (%d). The member must abandon all its partitions and rejoin.", req.MemberEpoch, old.epoch, old.prevEpoch))
			return nil, ShareHeartbeatResult{}
		}
		m = old.clone()
	}

	m.clientID, m.clientHost = c.ID, c.Host
	if req.RackID != nil {
		m.rackID = req.RackID
	}
	if req.SubscribedTopicNames != nil {
		m.topicNames = slices.Compact(slices.Sorted(slices.Values(req.SubscribedTopicNames)))
	}
	var recs []wire.Record
	bump := old == nil || !slices.Equal(old.topicNames, m.topicNames)
	if old == nil || bump || !sameShareMemberMetadata(old, m) {
		recs = append(recs, recSGMember(g.id, m))
	}
	g.members[m.id] = m

	// Topics deleted since: their share-partitions are forgotten (their
	// state is the share coordinator's to clean up).
	if recs2, changed := g.pruneDeletedTopics(img); changed {
		recs = append(recs, recs2...)
		bump = true
	}
	if h := g.subscriptionHash(img); h != g.metadataHash {
		g.metadataHash = h
		bump = true
	}
	if bump {
		g.epoch++
		recs = append(recs, recSGMetadata(g.id, g.epoch, g.metadataHash))
	}
	if g.epoch > g.assignmentEpoch {
		recs = append(recs, g.computeTarget()...)
	}
	recs = append(recs, g.reconcile(m, old)...)
	m.sessionDeadline = now.Add(g.cfg.SessionTimeout)

	resp.MemberID = &m.id
	resp.MemberEpoch = m.epoch
	resp.HeartbeatIntervalMillis = int32(g.cfg.HeartbeatInterval / time.Millisecond)
	// The assignment goes out when it changed, when the request carried
	// the subscription, or when the member's epoch is behind (our answer
	// that moved it on was lost).
	if req.MemberEpoch == 0 || req.SubscribedTopicNames != nil || old == nil || !m.assigned.equal(old.assigned) || req.MemberEpoch != m.epoch {
		resp.Assignment = shareAssignment(m.assigned)
	}

	// Share-partitions of subscribed topics not yet initialized.
	var res ShareHeartbeatResult
	for _, name := range g.subscribedNames() {
		id, parts, ok := img.TopicByName(name)
		if !ok {
			continue
		}
		known := g.initialized[id] != nil
		for p := range parts {
			tp := assignTP{id, p}
			if g.isInitialized(id, p) || g.initializing[tp] {
				continue
			}
			start := int64(-1)
			if known {
				start = 0
			}
			g.initializing[tp] = true
			res.Initialize = append(res.Initialize, ShareInit{SharePartition{TopicID: id, Topic: name, Partition: p}, start})
		}
	}
	res.StateEpoch = g.epoch
	return recs, res
}

// reconcile moves a member to its target at the assignment epoch and
// returns its CurrentMemberAssignment record when something changed.
func (g *ShareGroup) reconcile(m, old *sgMember) []wire.Record {
	target := g.target[m.id]
	if target == nil {
		target = Assignment{}
	}
	if m.epoch != g.assignmentEpoch {
		m.prevEpoch, m.epoch = m.epoch, g.assignmentEpoch
	}
	m.assigned = target.clone()
	if old == nil || old.epoch != m.epoch || old.prevEpoch != m.prevEpoch || !old.assigned.equal(m.assigned) {
		return []wire.Record{recSGCurrent(g.id, m)}
	}
	return nil
}

func shareAssignment(a Assignment) *kmsg.ShareGroupHeartbeatResponseAssignment {
	out := kmsg.NewShareGroupHeartbeatResponseAssignment()
	out.TopicPartitions = []kmsg.ShareGroupHeartbeatResponseAssignmentTopicPartition{}
	for _, id := range a.topicIDs() {
		t := kmsg.NewShareGroupHeartbeatResponseAssignmentTopicPartition()
		t.TopicID = id
		t.Partitions = slices.Clone(a[id])
		out.TopicPartitions = append(out.TopicPartitions, t)
	}
	return &out
}

func sameShareMemberMetadata(a, b *sgMember) bool {
	eq := func(x, y *string) bool { return (x == nil) == (y == nil) && (x == nil || *x == *y) }
	return a.clientID == b.clientID && a.clientHost == b.clientHost && eq(a.rackID, b.rackID)
}

// subscribedNames returns every topic name some member subscribes to,
// sorted.
func (g *ShareGroup) subscribedNames() []string {
	var out []string
	for _, m := range g.members {
		out = append(out, m.topicNames...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// subscriptionHash hashes what the assignment depends on besides the
// members: each subscribed topic's ID and partition count, and the
// initialized share-partitions.
func (g *ShareGroup) subscriptionHash(img TopicImage) int64 {
	h := fnv.New64a()
	var buf []byte
	for _, name := range g.subscribedNames() {
		id, parts, ok := img.TopicByName(name)
		if !ok {
			continue
		}
		buf = kbin.AppendString(buf[:0], name)
		buf = append(buf, id[:]...)
		buf = kbin.AppendInt32(buf, parts)
		_, _ = h.Write(buf)
	}
	for _, id := range sortedIDs(g.initialized) {
		buf = append(buf[:0], id[:]...)
		for _, p := range g.initialized[id].partitions {
			buf = kbin.AppendInt32(buf, p)
		}
		_, _ = h.Write(buf)
	}
	return int64(h.Sum64())
}

// pruneDeletedTopics forgets the initialized share-partitions of topics
// the image no longer has (by ID: a topic re-created under the same name
// is a new topic).
func (g *ShareGroup) pruneDeletedTopics(img TopicImage) ([]wire.Record, bool) {
	changed := false
	for id, t := range g.initialized {
		if cur, _, ok := img.TopicByName(t.name); !ok || cur != id {
			delete(g.initialized, id)
			changed = true
		}
	}
	if !changed {
		return nil, false
	}
	return []wire.Record{recSGStatePartitions(g.id, g.initialized)}, true
}

// MarkInitialized records the outcome of initializing share-partitions:
// the ones in done become initialized (and the group epoch is bumped so
// the next heartbeat assigns them), the ones in failed are retried by a
// later heartbeat. It returns the records to write.
func (g *ShareGroup) MarkInitialized(done, failed []SharePartition) []wire.Record {
	for _, sp := range failed {
		delete(g.initializing, assignTP{sp.TopicID, sp.Partition})
	}
	if len(done) == 0 {
		return nil
	}
	for _, sp := range done {
		delete(g.initializing, assignTP{sp.TopicID, sp.Partition})
		g.addInitialized(sp)
	}
	return []wire.Record{recSGStatePartitions(g.id, g.initialized)}
}

func (g *ShareGroup) addInitialized(sp SharePartition) {
	t := g.initialized[sp.TopicID]
	if t == nil {
		t = &sgTopic{name: sp.Topic}
		g.initialized[sp.TopicID] = t
	}
	if i, ok := slices.BinarySearch(t.partitions, sp.Partition); !ok {
		t.partitions = slices.Insert(t.partitions, i, sp.Partition)
	}
}

// ForgetPartitions removes share-partitions from the initialized set
// (DeleteShareGroupOffsets) and returns the record to write.
func (g *ShareGroup) ForgetPartitions(sps []SharePartition) []wire.Record {
	for _, sp := range sps {
		t := g.initialized[sp.TopicID]
		if t == nil {
			continue
		}
		if i, ok := slices.BinarySearch(t.partitions, sp.Partition); ok {
			t.partitions = slices.Delete(t.partitions, i, i+1)
		}
		if len(t.partitions) == 0 {
			delete(g.initialized, sp.TopicID)
		}
	}
	return []wire.Record{recSGStatePartitions(g.id, g.initialized)}
}

// computeTarget runs the share assignor over the members and the
// initialized share-partitions of their topics.
func (g *ShareGroup) computeTarget() []wire.Record {
	ids := slices.Sorted(maps.Keys(g.members))
	subs := make(map[string][][16]byte, len(ids))
	for _, id := range ids {
		var topics [][16]byte
		for _, n := range g.members[id].topicNames {
			for tid, t := range g.initialized {
				if t.name == n {
					topics = append(topics, tid)
				}
			}
		}
		subs[id] = topics
	}
	parts := make(map[[16]byte][]int32, len(g.initialized))
	for tid, t := range g.initialized {
		parts[tid] = t.partitions
	}
	next := assignShare(ids, subs, parts, g.target)
	var recs []wire.Record
	for _, id := range ids {
		a := next[id]
		if prev, ok := g.target[id]; !ok || !prev.equal(a) {
			recs = append(recs, recSGTargetMember(g.id, id, a))
		}
	}
	g.target = next
	g.assignmentEpoch = g.epoch
	return append(recs, recSGTargetMetadata(g.id, g.assignmentEpoch))
}

// removeMember drops a member (left or expired) and bumps the group epoch.
func (g *ShareGroup) removeMember(now time.Time, id string) []wire.Record {
	if g.members[id] == nil {
		return nil
	}
	recs := recsSGMemberGone(g.id, id)
	delete(g.members, id)
	delete(g.target, id)
	if len(g.members) == 0 {
		g.emptySince = now
	}
	g.epoch++
	return append(recs, recSGMetadata(g.id, g.epoch, g.metadataHash))
}

// NextDeadline returns the earliest session deadline.
func (g *ShareGroup) NextDeadline() (time.Time, bool) {
	var next time.Time
	for _, m := range g.members {
		if d := m.sessionDeadline; !d.IsZero() && (next.IsZero() || d.Before(next)) {
			next = d
		}
	}
	return next, !next.IsZero()
}

// Tick removes members whose session expired.
func (g *ShareGroup) Tick(now time.Time) []wire.Record {
	var recs []wire.Record
	for _, id := range slices.Sorted(maps.Keys(g.members)) {
		if d := g.members[id].sessionDeadline; !d.IsZero() && !now.Before(d) {
			recs = append(recs, g.removeMember(now, id)...)
		}
	}
	return recs
}

// Describe returns the group as ShareGroupDescribe reports it.
func (g *ShareGroup) Describe() kmsg.ShareGroupDescribeResponseGroup {
	d := kmsg.NewShareGroupDescribeResponseGroup()
	d.GroupID = g.id
	d.GroupState = g.StateName()
	d.GroupEpoch = g.epoch
	d.AssignmentEpoch = g.assignmentEpoch
	d.Assignor = "simple"
	for _, id := range slices.Sorted(maps.Keys(g.members)) {
		m := g.members[id]
		dm := kmsg.NewShareGroupDescribeResponseGroupMember()
		dm.MemberID = m.id
		dm.RackID = m.rackID
		dm.MemberEpoch = m.epoch
		dm.ClientID = m.clientID
		dm.ClientHost = m.clientHost
		dm.SubscribedTopicNames = slices.Clone(m.topicNames)
		if dm.SubscribedTopicNames == nil {
			dm.SubscribedTopicNames = []string{}
		}
		dm.Assignment.TopicPartitions = []kmsg.ShareGroupDescribeResponseGroupMemberAssignmentTopicPartition{}
		for _, tid := range m.assigned.topicIDs() {
			tp := kmsg.NewShareGroupDescribeResponseGroupMemberAssignmentTopicPartition()
			tp.TopicID = tid
			if t := g.initialized[tid]; t != nil {
				tp.Topic = t.name
			}
			tp.Partitions = slices.Clone(m.assigned[tid])
			dm.Assignment.TopicPartitions = append(dm.Assignment.TopicPartitions, tp)
		}
		d.Members = append(d.Members, dm)
	}
	return d
}

// SubscribedTopicNames returns the topics some member subscribes to.
func (g *ShareGroup) SubscribedTopicNames() []string { return g.subscribedNames() }
