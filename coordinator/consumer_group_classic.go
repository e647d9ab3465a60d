package coordinator

import (
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/wire"
)

// Online migration (KIP-848 "upgrade" and "downgrade"): a consumer group
// may hold members of both protocols while a rolling restart moves
// consumers from group.protocol=classic to consumer or back. The shape is
// Kafka 4.4's (GroupMetadataManager, javap):
//
//   - A ConsumerGroupHeartbeat joining a live classic group of protocol
//     type "consumer" converts it (convertClassicGroup): every classic
//     member becomes a member of the consumer group at the classic
//     generation as its epoch, STABLE, with the partitions its classic
//     assignment gave it, and the group and target epochs are the
//     generation. Pending JoinGroup and SyncGroup answers get
//     REBALANCE_IN_PROGRESS. The offsets stay.
//   - A classic member of a consumer group (cgMember.classic set) is
//     served through JoinGroup, SyncGroup, Heartbeat, LeaveGroup and
//     OffsetCommit: JoinGroup updates its subscription, recomputes the
//     target and reconciles it with the partitions its subscription says
//     it owns, and answers at once with the member epoch as generation and
//     no leader; SyncGroup hands it its assigned partitions; Heartbeat
//     answers REBALANCE_IN_PROGRESS while it has to rejoin (the group epoch
//     moved past it, it must revoke, or partitions it waited for are free).
//   - When the last KIP-848 member leaves and only classic members remain,
//     the group goes back to a classic group (downgradeToClassic).
//
// group.consumer.migration.policy gates each direction.

// Migration policies (group.consumer.migration.policy), case insensitive.
const (
	migrationDisabled      = "disabled"
	migrationUpgrade       = "upgrade"
	migrationDowngrade     = "downgrade"
	migrationBidirectional = "bidirectional"
)

// ValidMigrationPolicy tells whether p names a policy of
// group.consumer.migration.policy.
func ValidMigrationPolicy(p string) bool {
	switch strings.ToLower(p) {
	case migrationDisabled, migrationUpgrade, migrationDowngrade, migrationBidirectional:
		return true
	}
	return false
}

// upgradeEnabled tells whether live classic groups convert to consumer
// groups; an empty policy is Kafka's default, bidirectional.
func (cfg *ConsumerGroupConfig) upgradeEnabled() bool {
	p := strings.ToLower(cfg.MigrationPolicy)
	return p == "" || p == migrationUpgrade || p == migrationBidirectional
}

// downgradeEnabled tells whether a consumer group left with only classic
// members converts back to a classic group.
func (cfg *ConsumerGroupConfig) downgradeEnabled() bool {
	p := strings.ToLower(cfg.MigrationPolicy)
	return p == "" || p == migrationDowngrade || p == migrationBidirectional
}

// classicDisabled tells whether classic members may not join a consumer
// group at all.
func (cfg *ConsumerGroupConfig) classicDisabled() bool {
	return strings.ToLower(cfg.MigrationPolicy) == migrationDisabled
}

// classicMeta is what a member using the classic protocol has beyond a
// KIP-848 member (Kafka's ClassicMemberMetadata, tag 0 of
// ConsumerGroupMemberMetadataValue).
type classicMeta struct {
	sessionTimeout time.Duration
	protocols      []kmsg.JoinGroupRequestProtocol // name and subscription metadata
}

// protocolName is the protocol a classic member's answers name: its first.
func (c *classicMeta) protocolName() string {
	if len(c.protocols) == 0 {
		return ""
	}
	return c.protocols[0].Name
}

// hasKIP848Members tells whether some member uses ConsumerGroupHeartbeat.
func (g *ConsumerGroup) hasKIP848Members() bool {
	for _, m := range g.members {
		if m.classic == nil {
			return true
		}
	}
	return false
}

// decodeSubscription reads the embedded consumer protocol of a classic
// member's metadata.
func decodeSubscription(b []byte) (kmsg.ConsumerMemberMetadata, bool) {
	var md kmsg.ConsumerMemberMetadata
	if err := md.ReadFrom(b); err != nil {
		return md, false
	}
	return md, true
}

// classicOwned turns the owned partitions of a classic subscription into
// the shape of a heartbeat's, by topic id; unknown topics are left out.
func classicOwned(md kmsg.ConsumerMemberMetadata, img TopicImage) []kmsg.ConsumerGroupHeartbeatRequestTopic {
	out := []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	for _, o := range md.OwnedPartitions {
		id, _, ok := img.TopicByName(o.Topic)
		if !ok {
			continue
		}
		t := kmsg.NewConsumerGroupHeartbeatRequestTopic()
		t.TopicID = id
		t.Partitions = slices.Clone(o.Partitions)
		out = append(out, t)
	}
	return out
}

// convertClassicGroup builds the consumer group that a live classic group
// becomes (Kafka's ConsumerGroup.fromClassicGroup), and the records that
// write it. On a refusal it returns the GROUP_ID_NOT_FOUND message Kafka
// 4.4 gives.
func convertClassicGroup(cfg *ConsumerGroupConfig, g *Group, img TopicImage, now time.Time) (*ConsumerGroup, []wire.Record, string) {
	prefix := "Cannot upgrade classic group " + g.id + " to consumer group"
	switch {
	case !cfg.upgradeEnabled():
		return nil, nil, prefix + " because online upgrade is disabled."
	case g.protocolType != "consumer":
		return nil, nil, prefix + " because the group does not use the consumer embedded protocol."
	case cfg.MaxSize > 0 && len(g.members) > cfg.MaxSize:
		return nil, nil, prefix + " because the group size exceeds the consumer group maximum size."
	}
	cg := NewConsumerGroup(cfg, g.id, now)
	cg.epoch, cg.assignmentEpoch = g.generation, g.generation
	for _, cm := range g.members {
		md, ok := decodeSubscription(cm.metadataFor(g.protocol))
		if !ok {
			return nil, nil, prefix + " because the embedded consumer protocol is malformed."
		}
		assigned := Assignment{}
		if len(cm.assignment) > 0 {
			var a kmsg.ConsumerMemberAssignment
			if err := a.ReadFrom(cm.assignment); err != nil {
				return nil, nil, prefix + " because the embedded consumer protocol is malformed."
			}
			if len(a.UserData) > 0 {
				// A custom assignor's user data would be lost.
				return nil, nil, prefix + " because an unsupported custom assignor is in use. Please refer to the documentation or switch to a default assignor before re-attempting the upgrade."
			}
			for _, t := range a.Topics {
				if id, _, ok := img.TopicByName(t.Topic); ok {
					for _, p := range t.Partitions {
						assigned.add(id, p)
					}
				}
			}
		}
		m := &cgMember{
			modernMember: modernMember{
				id: cm.id, instanceID: cm.instanceID, rackID: md.Rack,
				clientID: cm.clientID, clientHost: cm.clientHost,
				rebalanceTimeout: cm.rebalanceTimeout,
				epoch:            g.generation, prevEpoch: g.generation, state: memberStable,
				sessionDeadline: now.Add(cm.sessionTimeout),
			},
			topicNames:        slices.Compact(slices.Sorted(slices.Values(md.Topics))),
			assigned:          assigned,
			pendingRevocation: Assignment{},
			classic:           &classicMeta{sessionTimeout: cm.sessionTimeout, protocols: slices.Clone(cm.protocols)},
		}
		m.updateEpochs()
		cg.putMember(m)
		cg.target[m.id] = assigned.clone()
	}
	cg.meta = cg.subscriptionMetadata(img)
	return cg, cg.groupRecords(), ""
}

// groupRecords are the records that write the whole group (Kafka's
// createConsumerGroupRecords): members, subscription metadata, group
// epoch, target assignment and current assignments.
func (g *ConsumerGroup) groupRecords() []wire.Record {
	ids := slices.Sorted(maps.Keys(g.members))
	var recs []wire.Record
	for _, id := range ids {
		recs = append(recs, recCGMember(g.id, g.members[id]))
	}
	recs = append(recs, recCGPartitionMetadata(g.id, g.meta), recCGMetadata(g.id, g.epoch))
	for _, id := range ids {
		recs = append(recs, recCGTargetMember(g.id, id, g.target[id]))
	}
	recs = append(recs, recCGTargetMetadata(g.id, g.assignmentEpoch))
	for _, id := range ids {
		recs = append(recs, recCGCurrent(g.id, g.members[id]))
	}
	return recs
}

// failPending answers every JoinGroup and SyncGroup a classic group holds
// with code, for a group that converts.
func (g *Group) failPending(code int16) []Reply {
	var out []Reply
	for _, m := range g.members {
		if m.joinWaiter != 0 {
			out = append(out, joinError(m.joinWaiter, code, m.id)...)
			m.joinWaiter = 0
		}
	}
	return append(out, g.failSyncs(code)...)
}

// ClassicJoin serves the JoinGroup of a classic member of the consumer
// group (Kafka's classicGroupJoinToConsumerGroup). newID names a new
// member. It returns the answer and the records to write; an error answer
// changed nothing.
func (g *ConsumerGroup) ClassicJoin(now time.Time, c Client, img TopicImage, req *kmsg.JoinGroupRequest, newID func() string) (*kmsg.JoinGroupResponse, []wire.Record) {
	fail := func(code int16, memberID string) (*kmsg.JoinGroupResponse, []wire.Record) {
		return joinErrorResponse(req.Version, code, memberID), nil
	}
	if g.cfg.classicDisabled() {
		return fail(kerr.InconsistentGroupProtocol.Code, req.MemberID)
	}
	// Kafka's order: a full group, then the protocol, then the member
	// id (classicGroupJoinToConsumerGroup, javap).
	if g.cfg.MaxSize > 0 && len(g.members) >= g.cfg.MaxSize && g.members[req.MemberID] == nil {
		return fail(kerr.GroupMaxSizeReached.Code, req.MemberID)
	}
	if req.ProtocolType != "consumer" || len(req.Protocols) == 0 {
		return fail(kerr.InconsistentGroupProtocol.Code, req.MemberID)
	}
	memberID := req.MemberID
	var old *cgMember
	replaced := false
	switch {
	case req.InstanceID != nil:
		if id, ok := g.static[*req.InstanceID]; ok {
			prev := g.members[id]
			if memberID != "" && memberID != id {
				return fail(kerr.FencedInstanceID.Code, memberID)
			}
			if prev.classic == nil {
				return fail(kerr.UnknownMemberID.Code, memberID)
			}
			if memberID == "" {
				// A static member back under a new member id
				// takes over its assignment.
				memberID, old, replaced = newID(), prev, true
			} else {
				old = prev
			}
		} else if memberID != "" {
			return fail(kerr.UnknownMemberID.Code, memberID)
		} else {
			memberID = newID()
		}
	case memberID == "":
		memberID = newID()
		if req.Version >= 4 {
			// JoinGroup v4+ learns its member id first (KIP-394).
			return fail(kerr.MemberIDRequired.Code, memberID)
		}
	default:
		// An id the group does not know is a new member: a consumer
		// group keeps no pending member ids, and Kafka creates the
		// member (getOrMaybeSubscribeDynamicConsumerGroupMember).
		old = g.members[memberID]
		if old != nil && old.classic == nil {
			return fail(kerr.UnknownMemberID.Code, memberID)
		}
	}
	if old == nil && g.cfg.MaxSize > 0 && len(g.members) >= g.cfg.MaxSize {
		return fail(kerr.GroupMaxSizeReached.Code, memberID)
	}
	md, ok := decodeSubscription(req.Protocols[0].Metadata)
	if !ok {
		return fail(kerr.InconsistentGroupProtocol.Code, memberID)
	}

	var recs []wire.Record
	var m *cgMember
	switch {
	case replaced:
		prevID := old.id
		m = old.clone()
		m.id = memberID
		m.pendingRevocation = Assignment{}
		m.epochs = nil
		recs = append(recs, recsCGMemberGone(g.id, prevID)...)
		if t, moved := g.takeOver(m, prevID); moved {
			recs = append(recs, recCGTargetMember(g.id, m.id, t))
		}
	case old != nil:
		m = old.clone()
	default:
		m = &cgMember{modernMember: modernMember{id: memberID}, assigned: Assignment{}, pendingRevocation: Assignment{}}
	}
	m.setClient(c, req.InstanceID, req.RebalanceTimeoutMillis)
	if md.Rack != nil {
		m.rackID = md.Rack
	}
	m.topicNames = slices.Compact(slices.Sorted(slices.Values(md.Topics)))
	m.regex, m.serverAssignor = "", ""
	m.classic = &classicMeta{
		sessionTimeout: time.Duration(req.SessionTimeoutMillis) * time.Millisecond,
		protocols:      slices.Clone(req.Protocols),
	}
	bump := old == nil || replaced || !slices.Equal(old.topicNames, m.topicNames) || old.regex != "" || old.serverAssignor != ""
	if bump || !sameMemberMetadata(old, m) || !sameClassic(old.classic, m.classic) {
		recs = append(recs, recCGMember(g.id, m))
	}
	g.putMember(m)
	recs = append(recs, g.advanceEpoch(img, bump)...)
	before := previousState(old, replaced)
	owned := classicOwned(md, img)
	g.reconcile(now, m, owned)
	if m.state == memberUnrevoked {
		// A classic member rejoins having revoked what it no longer
		// lists as owned (an eager one revokes everything first).
		g.reconcile(now, m, owned)
	}
	if currentChanged(before, m) {
		recs = append(recs, recCGCurrent(g.id, m))
	}
	m.sessionDeadline = now.Add(m.classic.sessionTimeout)
	if m.state != memberUnrevoked {
		// It rejoined in time (the deadline a Heartbeat's
		// REBALANCE_IN_PROGRESS started is met); now it must send
		// SyncGroup within its rebalance timeout or be fenced, as
		// Kafka's sync timeout of a classic member.
		m.revokeDeadline = now.Add(m.rebalanceTimeout)
	}

	resp := kmsg.NewPtrJoinGroupResponse()
	resp.Version = req.Version
	resp.MemberID = m.id
	resp.Generation = m.epoch
	resp.ProtocolType = ptr("consumer")
	resp.Protocol = ptr(m.classic.protocolName())
	return resp, recs
}

// sameClassic tells whether two classic metadata are equal.
func sameClassic(a, b *classicMeta) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.sessionTimeout == b.sessionTimeout && sameProtocols(a.protocols, b.protocols)
}

// classicMember returns the classic member a classic request names: by
// member id, checked against its static instance id (Kafka's
// validateConsumerGroupMember and throwIfMemberDoesNotUseClassicProtocol).
func (g *ConsumerGroup) classicMember(memberID string, instanceID *string) (*cgMember, int16) {
	if instanceID != nil {
		id, ok := g.static[*instanceID]
		if !ok {
			return nil, kerr.UnknownMemberID.Code
		}
		if id != memberID {
			return nil, kerr.FencedInstanceID.Code
		}
	}
	m := g.members[memberID]
	if m == nil || m.classic == nil {
		return nil, kerr.UnknownMemberID.Code
	}
	return m, 0
}

// mustRejoin tells whether a classic member has to rejoin: the group
// epoch moved past it, it must revoke, or partitions it waits for are
// free now.
func (g *ConsumerGroup) mustRejoin(m *cgMember) bool {
	switch {
	case m.epoch < g.epoch, m.state == memberUnrevoked:
		return true
	case m.state == memberUnreleased:
		others := g.ownedByOthers(m.id)
		for t, ps := range g.target[m.id] {
			for _, p := range ps {
				if !m.assigned.has(t, p) && others[assignTP{t, p}] {
					return false
				}
			}
		}
		return true
	}
	return false
}

// ClassicSync serves the SyncGroup of a classic member (Kafka's
// classicGroupSyncToConsumerGroup): the answer carries the partitions the
// member has now, encoded in the embedded consumer protocol.
func (g *ConsumerGroup) ClassicSync(req *kmsg.SyncGroupRequest) *kmsg.SyncGroupResponse {
	resp := syncErrorResponse(req.Version, 0)
	m, code := g.classicMember(req.MemberID, req.InstanceID)
	switch {
	case code != 0:
	case req.Generation != m.epoch:
		code = kerr.IllegalGeneration.Code
	case (req.ProtocolType != nil && *req.ProtocolType != "consumer") ||
		(req.Protocol != nil && *req.Protocol != m.classic.protocolName()):
		code = kerr.InconsistentGroupProtocol.Code
	case g.mustRejoin(m):
		code = kerr.RebalanceInProgress.Code
	}
	if code != 0 {
		resp.ErrorCode = code
		return resp
	}
	if m.state != memberUnrevoked {
		m.revokeDeadline = time.Time{} // synced in time
	}
	a := kmsg.NewConsumerMemberAssignment()
	names := map[[16]byte]string{}
	for n, t := range g.meta {
		names[t.id] = n
	}
	for _, id := range m.assigned.topicIDs() {
		n, ok := names[id]
		if !ok {
			continue
		}
		t := kmsg.NewConsumerMemberAssignmentTopic()
		t.Topic = n
		t.Partitions = slices.Clone(m.assigned[id])
		a.Topics = append(a.Topics, t)
	}
	slices.SortFunc(a.Topics, func(x, y kmsg.ConsumerMemberAssignmentTopic) int { return strings.Compare(x.Topic, y.Topic) })
	// The assignment is written in the version of the member's
	// subscription, as Kafka's serializeAssignment does.
	if p := m.classic.protocols; len(p) > 0 && len(p[0].Metadata) >= 2 {
		a.Version = min(int16(p[0].Metadata[0])<<8|int16(p[0].Metadata[1]), 3)
	}
	resp.MemberAssignment = a.AppendTo(nil)
	resp.ProtocolType = ptr("consumer")
	resp.Protocol = ptr(m.classic.protocolName())
	return resp
}

// ClassicHeartbeat serves the Heartbeat of a classic member (Kafka's
// classicGroupHeartbeatToConsumerGroup): it keeps the session and asks
// the member to rejoin when it has to.
func (g *ConsumerGroup) ClassicHeartbeat(now time.Time, req *kmsg.HeartbeatRequest) int16 {
	m, code := g.classicMember(req.MemberID, req.InstanceID)
	if code != 0 {
		return code
	}
	if req.Generation != m.epoch {
		return kerr.IllegalGeneration.Code
	}
	m.sessionDeadline = now.Add(m.classic.sessionTimeout)
	if g.mustRejoin(m) {
		if m.revokeDeadline.IsZero() {
			m.revokeDeadline = now.Add(m.rebalanceTimeout)
		}
		return kerr.RebalanceInProgress.Code
	}
	return 0
}

// ClassicLeave serves a LeaveGroup to a consumer group: each leaver that
// is a classic member leaves (Kafka's classicGroupLeaveToConsumerGroup).
func (g *ConsumerGroup) ClassicLeave(now time.Time, leavers []Leaver) ([]int16, []wire.Record) {
	codes := make([]int16, len(leavers))
	var recs []wire.Record
	for i, l := range leavers {
		id := l.MemberID
		if l.InstanceID != nil {
			sid, ok := g.static[*l.InstanceID]
			switch {
			case !ok:
				codes[i] = kerr.UnknownMemberID.Code
				continue
			case id != "" && id != sid:
				codes[i] = kerr.FencedInstanceID.Code
				continue
			}
			id = sid
		}
		m := g.members[id]
		if m == nil || m.classic == nil {
			codes[i] = kerr.UnknownMemberID.Code
			continue
		}
		recs = append(recs, g.removeMember(now, id)...)
	}
	return codes, recs
}

// classicCommitCheck validates an OffsetCommit by a classic member of the
// consumer group (Kafka 4.4's ConsumerGroup.validateOffsetCommit, javap):
// any version; a generation newer than the member epoch is
// ILLEGAL_GENERATION; an older one goes on to PartitionCommitCheck
// (KIP-1251), as a KIP-848 member's.
func (g *ConsumerGroup) classicCommitCheck(m *cgMember, generation int32) int16 {
	if generation > m.epoch {
		return kerr.IllegalGeneration.Code
	}
	return 0
}

// classicTxnCommitCheck tells whether a TxnOffsetCommit names a classic
// member of the consumer group, and then validates it: the generation
// must be its member epoch, else ILLEGAL_GENERATION (Kafka's
// validateMemberEpoch for a member using the classic protocol).
func (g *ConsumerGroup) classicTxnCommitCheck(memberID string, generation int32) (int16, bool) {
	m := g.members[memberID]
	if m == nil || m.classic == nil {
		return 0, false
	}
	if generation != m.epoch {
		return kerr.IllegalGeneration.Code, true
	}
	return 0, true
}

// downgradable tells whether the consumer group, with only classic
// members left, converts back to a classic group.
func (g *ConsumerGroup) downgradable() bool {
	return len(g.members) > 0 && !g.hasKIP848Members() && g.cfg.downgradeEnabled()
}

// toClassicGroup builds the classic group a consumer group with only
// classic members becomes (Kafka's ClassicGroup.fromConsumerGroup): the
// members keep their subscriptions and assignments, the generation is the
// group epoch before the last KIP-848 member left (Kafka converts in
// place of the leave, so the classic members' epochs match it), and the group is Stable with the first member as leader,
// so its members carry on with heartbeats and rebalance as a classic
// group on their next join.
func (g *ConsumerGroup) toClassicGroup(cfg *GroupConfig, generation int32, now time.Time) *Group {
	cl := NewGroup(cfg, g.id, now)
	cl.protocolType = "consumer"
	cl.generation = generation
	ids := slices.Sorted(maps.Keys(g.members))
	names := map[[16]byte]string{}
	for n, t := range g.meta {
		names[t.id] = n
	}
	// The protocol is one every member supports, the first's first.
	for _, p := range g.members[ids[0]].classic.protocols {
		all := true
		for _, id := range ids {
			if !slices.ContainsFunc(g.members[id].classic.protocols, func(q kmsg.JoinGroupRequestProtocol) bool { return q.Name == p.Name }) {
				all = false
				break
			}
		}
		if all {
			cl.protocol = p.Name
			break
		}
	}
	for _, id := range ids {
		m := g.members[id]
		a := kmsg.NewConsumerMemberAssignment()
		for _, tid := range m.assigned.topicIDs() {
			if n, ok := names[tid]; ok {
				t := kmsg.NewConsumerMemberAssignmentTopic()
				t.Topic, t.Partitions = n, slices.Clone(m.assigned[tid])
				a.Topics = append(a.Topics, t)
			}
		}
		cm := &member{
			id: m.id, instanceID: m.instanceID, clientID: m.clientID, clientHost: m.clientHost,
			sessionTimeout: m.classic.sessionTimeout, rebalanceTimeout: m.rebalanceTimeout,
			protocols: slices.Clone(m.classic.protocols), assignment: a.AppendTo(nil),
			heartbeatDeadline: now.Add(m.classic.sessionTimeout),
		}
		cl.members = append(cl.members, cm)
		if m.instanceID != nil {
			cl.static[*m.instanceID] = m.id
		}
	}
	cl.leader = ids[0]
	cl.setState(Stable, now)
	return cl
}

// classicJoin runs a classic member's JoinGroup against a live consumer
// group and writes its records; the answer is
// COORDINATOR_NOT_AVAILABLE-like when the write fails, and nothing
// changed then.
// REQUIRES: on the shard goroutine.
func (s *shard) classicJoin(cg *ConsumerGroup, now time.Time, client Client, req *kmsg.JoinGroupRequest) *kmsg.JoinGroupResponse {
	cg.cfg = s.c.consumerConfigFor(cg.id)
	saved := cg.clone()
	resp, recs := cg.ClassicJoin(now, client, s.c.topicImage(), req, randomUUID)
	if resp.ErrorCode != 0 || len(recs) == 0 {
		return resp
	}
	if err := s.appendLimited(now, recs); err != nil {
		s.logger.Warn("coordinator: writing consumer group failed", "group", cg.id, "err", err)
		*cg = *saved
		return joinErrorResponse(req.Version, writeError(err).Code, req.MemberID)
	}
	s.trackConsumerGroup(cg.id, saved)()
	return resp
}

// classicLeave runs a LeaveGroup against a consumer group and writes its
// records; every leaver that left gets the write's error if it fails.
// REQUIRES: on the shard goroutine.
func (s *shard) classicLeave(cg *ConsumerGroup, now time.Time, leavers []Leaver) []int16 {
	saved := cg.clone()
	codes, recs := cg.ClassicLeave(now, leavers)
	if len(recs) == 0 {
		return codes
	}
	if err := s.appendLimited(now, recs); err != nil {
		s.logger.Warn("coordinator: writing consumer group failed", "group", cg.id, "err", err)
		*cg = *saved
		for i, c := range codes {
			if c == 0 {
				codes[i] = writeError(err).Code
			}
		}
		return codes
	}
	s.trackConsumerGroup(cg.id, saved)()
	return codes
}

// emptyImage is a TopicImage without topics, for a coordinator whose
// Options.Topics does not list them.
type emptyImage struct{}

func (emptyImage) TopicByName(string) ([16]byte, int32, bool) { return [16]byte{}, 0, false }
func (emptyImage) TopicNames() []string                       { return nil }

// topicImage returns the topics classic members of consumer groups are
// resolved against: Options.Topics when it is a TopicImage too.
func (c *Coordinator) topicImage() TopicImage {
	if img, ok := c.opts.Topics.(TopicImage); ok {
		return img
	}
	return emptyImage{}
}
