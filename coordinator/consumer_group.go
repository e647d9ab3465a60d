package coordinator

import (
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/wire"
)

// TopicImage is the cluster's topics as KIP-848 assignment needs them. The
// broker hands its current metadata image with every request, so topics
// created or deleted are seen at the next heartbeat of any member (Kafka
// polls its metadata image the same way).
type TopicImage interface {
	// TopicByName returns a topic's ID and partition count.
	TopicByName(name string) (id [16]byte, partitions int32, ok bool)
	// TopicNames returns every topic, for regex subscriptions.
	TopicNames() []string
}

// ConsumerGroupConfig holds the broker settings of KIP-848 groups.
type ConsumerGroupConfig struct {
	SessionTimeout    time.Duration // group.consumer.session.timeout.ms
	HeartbeatInterval time.Duration // group.consumer.heartbeat.interval.ms
	MaxSize           int           // group.consumer.max.size
	// Assignors are the server-side assignor names (group.consumer.assignors);
	// the first is the default.
	Assignors []string
	// MigrationPolicy is group.consumer.migration.policy: disabled,
	// upgrade, downgrade or bidirectional ("" is the default,
	// bidirectional), case insensitive (consumer_group_classic.go).
	MigrationPolicy string
}

// Member epochs with a meaning of their own in ConsumerGroupHeartbeat.
const (
	leaveGroupEpoch       = -1
	leaveStaticGroupEpoch = -2
)

// memberState is a KIP-848 member's reconciliation state, with Kafka's
// values (stored in CurrentMemberAssignment).
//
//	STABLE ──target moved, must revoke──► UNREVOKED_PARTITIONS ──member acks revocation──┐
//	  ▲  └──target moved, nothing to revoke, some partitions still owned by others──┐    │
//	  │                                                                             ▼    ▼
//	  └──────────────────────── all partitions released ◄──────────── UNRELEASED_PARTITIONS
type memberState int8

const (
	memberStable     memberState = 0
	memberUnrevoked  memberState = 1
	memberUnreleased memberState = 2
)

// topicMeta is one subscribed topic in a group's subscription metadata.
type topicMeta struct {
	id         [16]byte
	partitions int32
}

// cgMember is one member of a consumer group.
type cgMember struct {
	modernMember
	topicNames     []string // sorted
	regex          string   // "" for none
	serverAssignor string   // "" for none

	assigned          Assignment
	pendingRevocation Assignment
	// epochs is the member epoch at which each partition of assigned and
	// pendingRevocation was assigned (KIP-1251): a commit with an older
	// epoch than the member's is still good for partitions it had then.
	epochs map[assignTP]int32

	// classic is set for a member using the classic protocol
	// (JoinGroup, SyncGroup, Heartbeat) inside the consumer group
	// (online migration, consumer_group_classic.go); nil for a KIP-848
	// member.
	classic *classicMeta
}

func (m *cgMember) clone() *cgMember {
	c := *m
	c.topicNames = slices.Clone(m.topicNames)
	c.assigned = m.assigned.clone()
	c.pendingRevocation = m.pendingRevocation.clone()
	c.epochs = maps.Clone(m.epochs)
	return &c
}

// ConsumerGroup is the KIP-848 state machine of one group: members with
// epochs, a group epoch bumped on every membership or subscription change,
// a target assignment computed by a server-side assignor, and each member's
// reconciliation towards its target, one heartbeat at a time, never giving
// a member a partition before its previous owner revoked it. It does no IO
// and reads no clock; methods return the records to write. Not safe for
// concurrent use: the shard goroutine owns it.
type ConsumerGroup struct {
	modernGroup[*cgMember, Assignment]
	cfg *ConsumerGroupConfig

	meta map[string]topicMeta // subscribed topics by name

	regexes map[string]*regexp.Regexp // compiled subscriptions, not persisted
}

// NewConsumerGroup returns an empty consumer group at epoch 1: Kafka 4.4
// starts every new KIP-848 group there (ModernGroup's constructor), so the
// first member's join bumps it to 2, and the member and assignment epochs
// with it (compat-tests/diff, ConsumerGroupDescribe).
func NewConsumerGroup(cfg *ConsumerGroupConfig, id string, now time.Time) *ConsumerGroup {
	return &ConsumerGroup{
		modernGroup: newModernGroup[*cgMember, Assignment](id, 1, now),
		cfg:         cfg,
		meta:        map[string]topicMeta{},
		regexes:     map[string]*regexp.Regexp{},
	}
}

// clone returns a deep copy, to roll back when a write fails.
func (g *ConsumerGroup) clone() *ConsumerGroup {
	c := *g
	c.modernGroup = g.cloneModern()
	c.meta = maps.Clone(g.meta)
	return &c
}

// StateName returns the group state as Kafka names it: Empty, Assigning
// (the target lags the group epoch), Reconciling (a member has not reached
// the target) or Stable.
func (g *ConsumerGroup) StateName() string {
	if len(g.members) == 0 {
		return "Empty"
	}
	return g.progressState()
}

// hbError sets an error on a heartbeat response.
func hbError(resp *kmsg.ConsumerGroupHeartbeatResponse, e *kerr.Error, msg string) {
	resp.ErrorCode = e.Code
	if msg == "" {
		msg = e.Message
	}
	resp.ErrorMessage = &msg
}

// Heartbeat runs one ConsumerGroupHeartbeat (already validated by
// validateHeartbeat) against the group and fills resp. It returns the
// records to write; on an error in resp, nothing changed and there are
// none.
func (g *ConsumerGroup) Heartbeat(now time.Time, c Client, img TopicImage, req *kmsg.ConsumerGroupHeartbeatRequest, resp *kmsg.ConsumerGroupHeartbeatResponse) []wire.Record {
	if req.MemberEpoch < 0 {
		return g.leave(now, req, resp)
	}
	var recs []wire.Record
	old := g.members[req.MemberID]
	var m *cgMember
	replaced := false // a static member came back under a new id
	if req.MemberEpoch == 0 {
		if prevID, prev, ok := g.staticHolder(req.InstanceID, req.MemberID); ok {
			if prev.epoch != leaveStaticGroupEpoch {
				hbError(resp, kerr.UnreleasedInstanceID, "static member "+*req.InstanceID+" is still in use by member "+prevID)
				return nil
			}
			// The static member comes back under a new member id
			// and takes over its assignment.
			m = prev.clone()
			m.id = req.MemberID
			m.pendingRevocation = Assignment{}
			m.epochs = nil // a new member: what it keeps counts from its new epoch
			recs = append(recs, recsCGMemberGone(g.id, prevID)...)
			if t, moved := g.takeOver(m, prevID); moved {
				recs = append(recs, recCGTargetMember(g.id, m.id, t))
			}
			old, replaced = prev, true
		}
		if m == nil && old != nil {
			m = old.clone()
		}
		if m == nil {
			if g.cfg.MaxSize > 0 && len(g.members) >= g.cfg.MaxSize {
				hbError(resp, kerr.GroupMaxSizeReached, "the consumer group has reached its maximum number of members")
				return nil
			}
			m = &cgMember{modernMember: modernMember{id: req.MemberID}, assigned: Assignment{}, pendingRevocation: Assignment{}}
		}
	} else {
		if old == nil {
			hbError(resp, kerr.UnknownMemberID, "member "+req.MemberID+" is not a member of group "+g.id)
			return nil
		}
		if code := old.checkEpoch(req.MemberEpoch, req.Topics); code != nil {
			hbError(resp, code, "")
			return nil
		}
		m = old.clone()
	}

	// A new regular expression is judged once the member is known, as
	// Kafka 4.4 does (GroupMetadataManager.maybeUpdateRegularExpressions,
	// javap): an unknown or fenced member gets UNKNOWN_MEMBER_ID /
	// FENCED_MEMBER_EPOCH whatever its regex (compat-tests/diff fuzzing).
	if req.SubscribedTopicRegex != nil && *req.SubscribedTopicRegex != "" && (old == nil || old.regex != *req.SubscribedTopicRegex) {
		if _, err := regexp.Compile(*req.SubscribedTopicRegex); err != nil {
			hbError(resp, kerr.InvalidRegularExpression, "SubscribedTopicRegex is not a valid regular expression: "+err.Error())
			return nil
		}
	}

	// A member that comes with ConsumerGroupHeartbeat uses KIP-848 from
	// now on (a static classic member upgraded in place).
	m.classic = nil
	// Subscription and client metadata.
	m.setClient(c, req.InstanceID, req.RebalanceTimeoutMillis)
	if req.RackID != nil {
		m.rackID = req.RackID
	}
	if req.SubscribedTopicNames != nil {
		m.topicNames = slices.Sorted(slices.Values(req.SubscribedTopicNames))
		m.topicNames = slices.Compact(m.topicNames)
	}
	if req.SubscribedTopicRegex != nil {
		m.regex = *req.SubscribedTopicRegex
	}
	if req.ServerAssignor != nil {
		m.serverAssignor = *req.ServerAssignor
	}
	bump := old == nil || !slices.Equal(old.topicNames, m.topicNames) || old.regex != m.regex || old.serverAssignor != m.serverAssignor
	if old == nil || replaced || bump || !sameMemberMetadata(old, m) || old.classic != nil {
		recs = append(recs, recCGMember(g.id, m))
	}
	g.putMember(m)
	recs = append(recs, g.advanceEpoch(img, bump)...)

	before := previousState(old, replaced)
	g.reconcile(now, m, req.Topics)
	if currentChanged(before, m) {
		recs = append(recs, recCGCurrent(g.id, m))
	}
	m.sessionDeadline = now.Add(g.cfg.SessionTimeout)

	resp.MemberID = &m.id
	resp.MemberEpoch = m.epoch
	resp.HeartbeatIntervalMillis = int32(g.cfg.HeartbeatInterval / time.Millisecond)
	full := req.MemberEpoch == 0 || (req.RebalanceTimeoutMillis != -1 &&
		(req.SubscribedTopicNames != nil || req.SubscribedTopicRegex != nil) && req.Topics != nil)
	if full || old == nil || !m.assigned.equal(old.assigned) {
		a := kmsg.NewConsumerGroupHeartbeatResponseAssignment()
		for _, id := range m.assigned.topicIDs() {
			t := kmsg.NewConsumerGroupHeartbeatResponseAssignmentTopic()
			t.TopicID = id
			t.Partitions = slices.Clone(m.assigned[id])
			a.Topics = append(a.Topics, t)
		}
		resp.Assignment = &a
	}
	return recs
}

// sameMemberMetadata tells whether the fields of MemberMetadata other than
// the subscription are unchanged.
func sameMemberMetadata(a, b *cgMember) bool {
	eq := func(x, y *string) bool { return (x == nil) == (y == nil) && (x == nil || *x == *y) }
	return a.clientID == b.clientID && a.clientHost == b.clientHost && eq(a.instanceID, b.instanceID) &&
		eq(a.rackID, b.rackID) && a.rebalanceTimeout == b.rebalanceTimeout
}

// checkEpoch validates the epoch of a heartbeat from an existing member:
// a newer epoch than ours is fenced; an older one is accepted only when it
// is the previous epoch (our answer bumping it was lost) and the member
// owns nothing it should not (Kafka's throwIfMemberEpochIsInvalid).
func (m *cgMember) checkEpoch(received int32, owned []kmsg.ConsumerGroupHeartbeatRequestTopic) *kerr.Error {
	return m.modernMember.checkEpoch(received, owned != nil, func() bool {
		for _, t := range owned {
			for _, p := range t.Partitions {
				if !m.assigned.has(t.TopicID, p) {
					return false
				}
			}
		}
		return true
	})
}

// leave handles member epochs -1 (leave) and -2 (a static member leaving
// for now: it keeps its assignment until its session expires or its
// instance rejoins).
func (g *ConsumerGroup) leave(now time.Time, req *kmsg.ConsumerGroupHeartbeatRequest, resp *kmsg.ConsumerGroupHeartbeatResponse) []wire.Record {
	m, ok := g.leaving(req.MemberID, req.InstanceID)
	if !ok {
		hbError(resp, kerr.UnknownMemberID, "member "+req.MemberID+" is not a member of group "+g.id)
		return nil
	}
	resp.MemberID = &req.MemberID
	resp.MemberEpoch = req.MemberEpoch
	if req.MemberEpoch == leaveStaticGroupEpoch && m.instanceID != nil {
		if !m.leaveStatic() {
			return nil
		}
		return []wire.Record{recCGCurrent(g.id, m)}
	}
	return g.removeMember(now, m.id)
}

// removeMember drops a member (left, expired or fenced) and bumps the group
// epoch; the next heartbeat computes the new target.
func (g *ConsumerGroup) removeMember(now time.Time, id string) []wire.Record {
	if !g.dropMember(now, id) {
		return nil
	}
	return append(recsCGMemberGone(g.id, id), recCGMetadata(g.id, g.epoch))
}

// compiledRegex returns a member's subscription regex, compiled once.
// Kafka matches whole topic names with RE2J, whose syntax is Go's.
func (g *ConsumerGroup) compiledRegex(expr string) *regexp.Regexp {
	if re, ok := g.regexes[expr]; ok {
		return re
	}
	re, err := regexp.Compile("^(?:" + expr + ")$")
	if err != nil {
		re = nil // validated on the way in; a stored bad one matches nothing
	}
	if g.regexes == nil {
		g.regexes = map[string]*regexp.Regexp{}
	}
	g.regexes[expr] = re
	return re
}

// memberTopics returns the existing topics a member subscribes to, by name
// or regex.
func (g *ConsumerGroup) memberTopics(m *cgMember, img TopicImage, all []string) []string {
	out := slices.Clone(m.topicNames)
	if m.regex != "" {
		if re := g.compiledRegex(m.regex); re != nil {
			for _, n := range all {
				if re.MatchString(n) {
					out = append(out, n)
				}
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// subscriptionMetadata resolves every member's subscription against the
// image: the topics that exist, with their IDs and partition counts.
// advanceEpoch refreshes the group's subscription metadata after a member
// changed and, when that member's subscription (bump) or the metadata
// changed, bumps the group epoch; a group epoch ahead of the assignment's
// gets a new target. Heartbeat and ClassicJoin share it.
func (g *ConsumerGroup) advanceEpoch(img TopicImage, bump bool) []wire.Record {
	var recs []wire.Record
	if meta := g.subscriptionMetadata(img); !maps.Equal(meta, g.meta) {
		g.meta = meta
		recs = append(recs, recCGPartitionMetadata(g.id, meta))
		bump = true
	}
	if bump {
		g.epoch++
		recs = append(recs, recCGMetadata(g.id, g.epoch))
	}
	if g.epoch > g.assignmentEpoch {
		recs = append(recs, g.computeTarget()...)
	}
	return recs
}

// previousState is what a member's current assignment is compared with
// after its reconciliation: old, or nothing (epoch -1) for a new member or
// one that replaced another.
func previousState(old *cgMember, replaced bool) *cgMember {
	if old == nil || replaced {
		return &cgMember{modernMember: modernMember{epoch: -1}}
	}
	return old
}

// currentChanged reports whether m's epochs, state or assignments differ
// from before, that is whether its current-assignment record is due.
func currentChanged(before, m *cgMember) bool {
	return m.epoch != before.epoch || m.prevEpoch != before.prevEpoch || m.state != before.state ||
		!m.assigned.equal(before.assigned) || !m.pendingRevocation.equal(before.pendingRevocation)
}

func (g *ConsumerGroup) subscriptionMetadata(img TopicImage) map[string]topicMeta {
	var all []string
	for _, m := range g.members {
		if m.regex != "" {
			all = img.TopicNames()
			break
		}
	}
	meta := map[string]topicMeta{}
	for _, m := range g.members {
		for _, n := range g.memberTopics(m, img, all) {
			if _, ok := meta[n]; ok {
				continue
			}
			if id, parts, ok := img.TopicByName(n); ok && parts > 0 {
				meta[n] = topicMeta{id: id, partitions: parts}
			}
		}
	}
	return meta
}

// subscribedIDs returns the topic IDs, from the group's subscription
// metadata, that a member subscribes to.
func (g *ConsumerGroup) subscribedIDs(m *cgMember) [][16]byte {
	var ids [][16]byte
	seen := map[[16]byte]bool{}
	addName := func(n string) {
		if t, ok := g.meta[n]; ok && !seen[t.id] {
			seen[t.id] = true
			ids = append(ids, t.id)
		}
	}
	for _, n := range m.topicNames {
		addName(n)
	}
	if m.regex != "" {
		if re := g.compiledRegex(m.regex); re != nil {
			for n := range g.meta {
				if re.MatchString(n) {
					addName(n)
				}
			}
		}
	}
	return ids
}

// SubscribedTopics returns the names of the topics some member subscribes
// to, for OffsetDelete and offset expiry.
func (g *ConsumerGroup) SubscribedTopics() map[string]bool {
	out := map[string]bool{}
	for n := range g.meta {
		out[n] = true
	}
	for _, m := range g.members {
		for _, n := range m.topicNames {
			out[n] = true
		}
	}
	return out
}

// assignorName returns the assignor the group uses: the one most members
// ask for, else the broker's default (Kafka's preferred server assignor).
func (g *ConsumerGroup) assignorName() string {
	counts := map[string]int{}
	best := ""
	for _, m := range g.members {
		if m.serverAssignor == "" {
			continue
		}
		counts[m.serverAssignor]++
		if n := counts[m.serverAssignor]; n > counts[best] || (n == counts[best] && m.serverAssignor < best) {
			best = m.serverAssignor
		}
	}
	if best == "" && len(g.cfg.Assignors) > 0 {
		best = g.cfg.Assignors[0]
	}
	if best == "" {
		best = "uniform"
	}
	return best
}

// computeTarget runs the assignor over the members and stores the new
// target at the group epoch.
func (g *ConsumerGroup) computeTarget() []wire.Record {
	assignor, ok := assignorByName(g.assignorName())
	if !ok {
		assignor = uniformAssignor{}
	}
	ids := slices.Sorted(maps.Keys(g.members))
	in := make([]AssignorMember, 0, len(ids))
	for _, id := range ids {
		m := g.members[id]
		in = append(in, AssignorMember{ID: id, InstanceID: m.instanceID, Topics: g.subscribedIDs(m), Current: g.target[id]})
	}
	parts := make(map[[16]byte]int32, len(g.meta))
	for _, t := range g.meta {
		parts[t.id] = t.partitions
	}
	next := assignor.Assign(in, parts)
	var recs []wire.Record
	for _, id := range ids {
		a := next[id]
		if a == nil {
			a = Assignment{}
		}
		if prev, ok := g.target[id]; !ok || !prev.equal(a) {
			recs = append(recs, recCGTargetMember(g.id, id, a))
		}
		next[id] = a
	}
	g.target = next
	g.assignmentEpoch = g.epoch
	return append(recs, recCGTargetMetadata(g.id, g.assignmentEpoch))
}

// ownedByOthers returns the partitions that members other than id hold or
// still have to revoke.
func (g *ConsumerGroup) ownedByOthers(id string) map[assignTP]bool {
	out := map[assignTP]bool{}
	for mid, m := range g.members {
		if mid == id {
			continue
		}
		for t, ps := range m.assigned {
			for _, p := range ps {
				out[assignTP{t, p}] = true
			}
		}
		for t, ps := range m.pendingRevocation {
			for _, p := range ps {
				out[assignTP{t, p}] = true
			}
		}
	}
	return out
}

// reconcile moves a member towards its target (Kafka's
// CurrentAssignmentBuilder). owned is what the member says it holds; nil
// when it did not say.
func (g *ConsumerGroup) reconcile(now time.Time, m *cgMember, owned []kmsg.ConsumerGroupHeartbeatRequestTopic) {
	revoked := func() bool {
		if owned == nil {
			return false
		}
		for _, t := range owned {
			for _, p := range t.Partitions {
				if m.pendingRevocation.has(t.TopicID, p) {
					return false // still revoking
				}
			}
		}
		return true
	}
	g.modernGroup.reconcile(&m.modernMember, revoked, func() { g.nextAssignment(now, m) })
}

// nextAssignment computes a member's next step towards its target: first
// revoke what it must give up (keeping its epoch); then take the target
// epoch with every target partition already released by its previous owner.
func (g *ConsumerGroup) nextAssignment(now time.Time, m *cgMember) {
	target := g.target[m.id]
	kept, revoke := Assignment{}, Assignment{}
	for t, ps := range m.assigned {
		for _, p := range ps {
			if target.has(t, p) {
				kept.add(t, p)
			} else {
				revoke.add(t, p)
			}
		}
	}
	if revoke.count() > 0 {
		m.assigned = kept
		m.pendingRevocation = revoke
		m.startRevocation(now)
		m.updateEpochs()
		return
	}
	var others map[assignTP]bool
	unreleased := false
	for t, ps := range target {
		for _, p := range ps {
			if kept.has(t, p) {
				continue
			}
			if others == nil {
				others = g.ownedByOthers(m.id)
			}
			if others[assignTP{t, p}] {
				unreleased = true
				continue
			}
			kept.add(t, p)
		}
	}
	m.assigned = kept
	m.pendingRevocation = Assignment{}
	m.settle(g.assignmentEpoch, unreleased)
	m.updateEpochs()
}

// updateEpochs keeps the assignment epoch of the partitions the member
// still has, stamps new ones with its current epoch and forgets the rest.
func (m *cgMember) updateEpochs() {
	next := make(map[assignTP]int32, m.assigned.count()+m.pendingRevocation.count())
	for _, a := range []Assignment{m.assigned, m.pendingRevocation} {
		for t, ps := range a {
			for _, p := range ps {
				tp := assignTP{t, p}
				if e, ok := m.epochs[tp]; ok {
					next[tp] = e
				} else {
					next[tp] = m.epoch
				}
			}
		}
	}
	m.epochs = next
}

// Tick removes members whose session expired or who did not revoke within
// their rebalance timeout, and returns the records to write.
func (g *ConsumerGroup) Tick(now time.Time) []wire.Record {
	var recs []wire.Record
	for _, f := range g.due(now) {
		recs = append(recs, g.removeMember(now, f.member)...)
	}
	return recs
}

// OffsetCommitCheck is CommitCheck with KIP-1251's relaxation for
// OffsetCommit: an epoch older than the member's passes here, and then
// each partition must pass PartitionCommitCheck.
func (g *ConsumerGroup) OffsetCommitCheck(version int16, epoch int32, memberID string) int16 {
	if m := g.members[memberID]; m != nil && version >= 9 && epoch >= 0 && epoch < m.epoch {
		return 0
	}
	return g.CommitCheck(version, epoch, memberID)
}

// PartitionCommitCheck validates one partition of an OffsetCommit that
// passed OffsetCommitCheck: with an epoch older than the member's, the
// partition must have been the member's at that epoch (assignment epoch <=
// epoch), else STALE_MEMBER_EPOCH. A nil group checks nothing.
func (g *ConsumerGroup) PartitionCommitCheck(epoch int32, memberID, topic string, partition int32) int16 {
	if g == nil {
		return 0
	}
	m := g.members[memberID]
	if m == nil || epoch >= m.epoch {
		return 0
	}
	t, ok := g.meta[topic]
	if !ok {
		return kerr.StaleMemberEpoch.Code
	}
	if e, ok := m.epochs[assignTP{t.id, partition}]; !ok || e > epoch {
		return kerr.StaleMemberEpoch.Code
	}
	return 0
}

// Describe returns the group as ConsumerGroupDescribe reports it. names
// maps topic IDs to names for the assignments.
func (g *ConsumerGroup) Describe(names func([16]byte) string) kmsg.ConsumerGroupDescribeResponseGroup {
	d := kmsg.NewConsumerGroupDescribeResponseGroup()
	d.Group = g.id
	d.State = g.StateName()
	d.Epoch = g.epoch
	d.AssignmentEpoch = g.assignmentEpoch
	d.AssignorName = g.assignorName()
	toKmsg := func(a Assignment) kmsg.Assignment {
		out := kmsg.NewAssignment()
		for _, id := range a.topicIDs() {
			tp := kmsg.NewAssignmentTopicPartition()
			tp.TopicID = id
			tp.Topic = names(id)
			tp.Partitions = slices.Clone(a[id])
			out.TopicPartitions = append(out.TopicPartitions, tp)
		}
		return out
	}
	for _, id := range slices.Sorted(maps.Keys(g.members)) {
		m := g.members[id]
		dm := kmsg.NewConsumerGroupDescribeResponseGroupMember()
		dm.MemberID = m.id
		dm.InstanceID = m.instanceID
		dm.RackID = m.rackID
		dm.MemberEpoch = m.epoch
		dm.ClientID = m.clientID
		dm.ClientHost = m.clientHost
		dm.SubscribedTopics = slices.Clone(m.topicNames)
		if dm.SubscribedTopics == nil {
			dm.SubscribedTopics = []string{}
		}
		// "" rather than null without a regex, as Kafka 4.4 sends it
		// (compat-tests/diff).
		regex := m.regex
		dm.SubscribedTopicRegex = &regex
		dm.Assignment = toKmsg(m.assigned)
		dm.TargetAssignment = toKmsg(g.target[id])
		dm.MemberType = 1 // consumer protocol
		if m.classic != nil {
			dm.MemberType = 0 // classic protocol (online migration)
		}
		d.Members = append(d.Members, dm)
	}
	return d
}

// topicName maps a topic ID back to its name through the subscription
// metadata.
func (g *ConsumerGroup) topicName(id [16]byte) string {
	for n, t := range g.meta {
		if t.id == id {
			return n
		}
	}
	return ""
}

// restoreConsumerGroup rebuilds a group from its records. Sessions restart
// at now, as Kafka reschedules them when it loads a partition.
func restoreConsumerGroup(cfg *ConsumerGroupConfig, id string, l *cgLoad, now time.Time) *ConsumerGroup {
	g := NewConsumerGroup(cfg, id, now)
	g.epoch = l.epoch
	g.assignmentEpoch = l.targetEpoch
	if l.meta != nil {
		g.meta = l.meta
	}
	for mid, m := range l.members {
		var curModern *modernMember
		if cur := l.current[mid]; cur != nil {
			curModern = &cur.modernMember
			m.assigned, m.pendingRevocation = cur.assigned, cur.pendingRevocation
			m.epochs = cur.epochs
		}
		if m.assigned == nil {
			m.assigned = Assignment{}
		}
		if m.pendingRevocation == nil {
			m.pendingRevocation = Assignment{}
		}
		session := cfg.SessionTimeout
		if m.classic != nil {
			session = m.classic.sessionTimeout
		}
		g.restoreMember(m, curModern, now, session)
		m.updateEpochs() // partitions without a stored epoch count from the current one
	}
	for mid, a := range l.targets {
		if _, ok := g.members[mid]; ok {
			g.target[mid] = a
		}
	}
	return g
}

// validateHeartbeat checks the request fields that do not depend on the
// group, as Kafka's throwIfConsumerGroupHeartbeatRequestIsInvalid does, and
// returns the error and message to answer, or nil.
func validateHeartbeat(cfg *ConsumerGroupConfig, req *kmsg.ConsumerGroupHeartbeatRequest) (*kerr.Error, string) {
	switch {
	case req.Group == "":
		return kerr.InvalidRequest, "GroupId can't be empty."
	case req.RackID != nil && *req.RackID == "":
		return kerr.InvalidRequest, "RackId can't be empty."
	}
	if req.Version >= 1 || req.MemberEpoch != 0 {
		if strings.TrimSpace(req.MemberID) == "" {
			return kerr.InvalidRequest, "MemberId can't be empty."
		}
	}
	switch {
	case req.MemberEpoch == 0:
		// Only -1 (not provided): Kafka 4.4 takes 0 and other values
		// (GroupCoordinatorService, compat-tests/diff fuzzing).
		if req.RebalanceTimeoutMillis == -1 {
			return kerr.InvalidRequest, "RebalanceTimeoutMs must be provided in first request."
		}
		if len(req.Topics) > 0 || req.Topics == nil {
			return kerr.InvalidRequest, "TopicPartitions must be empty when (re-)joining."
		}
		if req.SubscribedTopicNames == nil && (req.SubscribedTopicRegex == nil || *req.SubscribedTopicRegex == "") {
			return kerr.InvalidRequest, "SubscribedTopicNames or SubscribedTopicRegex must be set in first request."
		}
	case req.MemberEpoch == leaveStaticGroupEpoch:
		if req.InstanceID == nil {
			return kerr.InvalidRequest, "InstanceId can't be null."
		}
	case req.MemberEpoch < leaveStaticGroupEpoch:
		return kerr.InvalidRequest, "MemberEpoch is invalid."
	}
	if req.ServerAssignor != nil && req.MemberEpoch >= 0 {
		known := false
		for _, a := range cfg.Assignors {
			if strings.EqualFold(a, *req.ServerAssignor) {
				known = true
			}
		}
		if _, ok := assignorByName(*req.ServerAssignor); !ok || !known {
			return kerr.UnsupportedAssignor, "ServerAssignor " + *req.ServerAssignor + " is not supported. Supported assignors: " + strings.Join(cfg.Assignors, ", ") + "."
		}
	}
	return nil, ""
}
