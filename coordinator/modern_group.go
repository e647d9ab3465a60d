package coordinator

import (
	"maps"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// modernMember is what every member of a KIP-848 consumer group and of a
// KIP-1071 streams group has (the shape of Kafka's ModernGroupMember):
// identity, client metadata, epochs, reconciliation state and deadlines.
// cgMember and stMember embed it and add what their protocol assigns.
type modernMember struct {
	id         string
	instanceID *string
	rackID     *string
	clientID   string
	clientHost string

	rebalanceTimeout time.Duration

	epoch     int32
	prevEpoch int32
	state     memberState

	sessionDeadline time.Time
	// revokeDeadline is set while the member must revoke what it holds:
	// it is fenced if it has not by then (its rebalance timeout).
	revokeDeadline time.Time
}

// modern returns the shared part of a member.
func (m *modernMember) modern() *modernMember { return m }

// checkEpoch validates the epoch of a heartbeat from an existing member
// (Kafka's throwIfMemberEpochIsInvalid): a newer epoch than ours is fenced;
// an older one is accepted only when it is the previous epoch (our answer
// bumping it was lost), the member said what it owns (reported), and it
// owns nothing it should not (ownsOnlyAssigned).
func (m *modernMember) checkEpoch(received int32, reported bool, ownsOnlyAssigned func() bool) *kerr.Error {
	if received > m.epoch {
		return kerr.FencedMemberEpoch
	}
	if received < m.epoch && (received != m.prevEpoch || !reported || !ownsOnlyAssigned()) {
		return kerr.FencedMemberEpoch
	}
	return nil
}

// setClient records the client metadata a heartbeat carries: the client's
// id and host always, instance id and rebalance timeout when sent.
func (m *modernMember) setClient(c Client, instanceID *string, rebalanceTimeoutMillis int32) {
	m.clientID, m.clientHost = c.ID, c.Host
	if instanceID != nil {
		m.instanceID = instanceID
	}
	if rebalanceTimeoutMillis > 0 {
		m.rebalanceTimeout = time.Duration(rebalanceTimeoutMillis) * time.Millisecond
	}
}

// startRevocation puts the member in UNREVOKED, starting its rebalance
// timeout unless it was already revoking.
func (m *modernMember) startRevocation(now time.Time) {
	if m.state != memberUnrevoked {
		m.revokeDeadline = now.Add(m.rebalanceTimeout)
	}
	m.state = memberUnrevoked
}

// settle moves the member to the target's epoch once it revoked all it
// had to: STABLE, or UNRELEASED while some of its target is still held by
// others.
func (m *modernMember) settle(assignmentEpoch int32, unreleased bool) {
	m.revokeDeadline = time.Time{}
	if m.epoch != assignmentEpoch {
		m.prevEpoch, m.epoch = m.epoch, assignmentEpoch
	}
	if unreleased {
		m.state = memberUnreleased
	} else {
		m.state = memberStable
	}
}

// leaveStatic marks a static member as gone for now (epoch -2): it keeps
// its assignment until its session expires or its instance rejoins. It
// reports whether the member changed.
func (m *modernMember) leaveStatic() bool {
	if m.epoch == leaveStaticGroupEpoch {
		return false
	}
	m.prevEpoch, m.epoch = m.epoch, leaveStaticGroupEpoch
	m.revokeDeadline = time.Time{}
	return true
}

// modernMemberOf is a member type of a modern group: a pointer to a
// struct embedding modernMember.
type modernMemberOf[M any] interface {
	modern() *modernMember
	clone() M
}

// cloner is a target assignment type of a modern group.
type cloner[A any] interface {
	clone() A
}

// modernGroup is the state and the rules KIP-848 consumer groups and
// KIP-1071 streams groups share (the shape of Kafka's ModernGroup): the
// group epoch, the target assignment and its epoch, the members with
// their static instance ids, session and revocation deadlines, and the
// member checks of offset commits and fetches. M is the member type and
// A the assignment type; ConsumerGroup and StreamsGroup embed it and keep
// only what their protocol adds.
type modernGroup[M modernMemberOf[M], A cloner[A]] struct {
	id string

	epoch           int32 // group epoch
	assignmentEpoch int32 // epoch of target
	members         map[string]M
	static          map[string]string // instance id -> member id
	target          map[string]A
	emptySince      time.Time
}

func newModernGroup[M modernMemberOf[M], A cloner[A]](id string, epoch int32, now time.Time) modernGroup[M, A] {
	return modernGroup[M, A]{
		id:         id,
		epoch:      epoch,
		members:    map[string]M{},
		static:     map[string]string{},
		target:     map[string]A{},
		emptySince: now,
	}
}

// ID returns the group id.
func (g *modernGroup[M, A]) ID() string { return g.id }

// Epoch returns the group epoch.
func (g *modernGroup[M, A]) Epoch() int32 { return g.epoch }

// AssignmentEpoch returns the epoch of the target assignment.
func (g *modernGroup[M, A]) AssignmentEpoch() int32 { return g.assignmentEpoch }

// Empty tells whether the group has no member.
func (g *modernGroup[M, A]) Empty() bool { return len(g.members) == 0 }

// cloneModern returns a deep copy of the shared state.
func (g *modernGroup[M, A]) cloneModern() modernGroup[M, A] {
	c := *g
	c.members = make(map[string]M, len(g.members))
	for id, m := range g.members {
		c.members[id] = m.clone()
	}
	c.static = maps.Clone(g.static)
	c.target = make(map[string]A, len(g.target))
	for id, a := range g.target {
		c.target[id] = a.clone()
	}
	return c
}

// progressState names the state of a group with members and a usable
// assignment: Assigning (the target lags the group epoch), Reconciling (a
// member has not reached the target) or Stable. Static members away for
// now (epoch -2) do not count.
func (g *modernGroup[M, A]) progressState() string {
	if g.epoch != g.assignmentEpoch {
		return "Assigning"
	}
	for _, m := range g.members {
		mm := m.modern()
		if mm.epoch == leaveStaticGroupEpoch {
			continue
		}
		if mm.epoch != g.assignmentEpoch || mm.state != memberStable {
			return "Reconciling"
		}
	}
	return "Stable"
}

// staticHolder returns the member that holds instanceID under another
// member id than memberID (ok false when none does).
func (g *modernGroup[M, A]) staticHolder(instanceID *string, memberID string) (prevID string, prev M, ok bool) {
	if instanceID == nil {
		return "", prev, false
	}
	prevID, ok = g.static[*instanceID]
	if !ok || prevID == memberID {
		return "", prev, false
	}
	return prevID, g.members[prevID], true
}

// takeOver makes m, a static member back under a new member id, the
// member prevID was: m starts over at epoch 0 with prevID's assignment,
// and prevID's target becomes m's. It returns that target (moved false
// when prevID had none).
func (g *modernGroup[M, A]) takeOver(m M, prevID string) (target A, moved bool) {
	mm := m.modern()
	mm.epoch, mm.state = 0, memberStable
	delete(g.members, prevID)
	if target, moved = g.target[prevID]; moved {
		g.target[mm.id] = target
		delete(g.target, prevID)
	}
	return target, moved
}

// leaving returns the member a leave heartbeat names, by member id or
// else by static instance id.
func (g *modernGroup[M, A]) leaving(memberID string, instanceID *string) (M, bool) {
	m, ok := g.members[memberID]
	if !ok && instanceID != nil {
		if id, found := g.static[*instanceID]; found {
			m, ok = g.members[id]
		}
	}
	return m, ok
}

// putMember stores m and its static instance id.
func (g *modernGroup[M, A]) putMember(m M) {
	mm := m.modern()
	g.members[mm.id] = m
	if mm.instanceID != nil {
		g.static[*mm.instanceID] = mm.id
	}
}

// dropMember removes a member (left, expired or fenced) with its target
// and static instance id, and bumps the group epoch; the next heartbeat
// computes the new target. It reports whether there was such a member.
func (g *modernGroup[M, A]) dropMember(now time.Time, id string) bool {
	m, ok := g.members[id]
	if !ok {
		return false
	}
	delete(g.members, id)
	delete(g.target, id)
	if in := m.modern().instanceID; in != nil && g.static[*in] == id {
		delete(g.static, *in)
	}
	if len(g.members) == 0 {
		g.emptySince = now
	}
	g.epoch++
	return true
}

// reconcile moves a member one step towards its target, the state
// machine of Kafka's CurrentAssignmentBuilder: a STABLE member behind the
// target epoch and an UNRELEASED one take their next assignment; an
// UNREVOKED one does once revoked tells that it no longer holds what it
// had to give up. next computes the next assignment, setting the member's
// pending revocation anew.
func (g *modernGroup[M, A]) reconcile(m *modernMember, revoked func() bool, next func()) {
	switch m.state {
	case memberStable:
		if m.epoch != g.assignmentEpoch {
			next()
		}
	case memberUnrevoked:
		if !revoked() {
			return
		}
		// Revoked: what comes next (maybe another revocation, with a
		// fresh rebalance timeout) starts from a settled member.
		m.state, m.revokeDeadline = memberStable, time.Time{}
		next()
	case memberUnreleased:
		next()
	}
}

// NextDeadline returns the earliest session or revocation deadline.
func (g *modernGroup[M, A]) NextDeadline() (time.Time, bool) {
	var next time.Time
	for _, m := range g.members {
		mm := m.modern()
		next = earliestDeadline(next, mm.sessionDeadline, mm.revokeDeadline)
	}
	return next, !next.IsZero()
}

// cgFence is a member that Tick removes, and why.
type cgFence struct {
	member   string
	clientID string
	epoch    int32
	expired  bool // its session expired (else it did not revoke in time)
}

// due returns the members whose session expired or who did not revoke
// within their rebalance timeout, sorted by member id.
func (g *modernGroup[M, A]) due(now time.Time) []cgFence {
	var out []cgFence
	for _, id := range slices.Sorted(maps.Keys(g.members)) {
		m := g.members[id].modern()
		if due, expired := memberDue(now, m.sessionDeadline, m.revokeDeadline); due {
			out = append(out, cgFence{member: id, clientID: m.clientID, epoch: m.epoch, expired: expired})
		}
	}
	return out
}

// memberEpoch returns a member's epoch, and whether it is a member.
func (g *modernGroup[M, A]) memberEpoch(id string) (int32, bool) {
	m, ok := g.members[id]
	if !ok {
		return 0, false
	}
	return m.modern().epoch, true
}

// CommitCheck validates an offset commit to the group (Kafka's
// validateOffsetCommit of ConsumerGroup and StreamsGroup): with no member
// id and a negative epoch only an empty group accepts commits; a member
// must commit with its current epoch, and with OffsetCommit v9+.
func (g *modernGroup[M, A]) CommitCheck(version int16, epoch int32, memberID string) int16 {
	memberEpoch, found := g.memberEpoch(memberID)
	return memberCommitCheck(version, epoch, memberID, len(g.members) == 0, found, memberEpoch)
}

// FetchCheck validates an OffsetFetch v9+ naming a member: an admin fetch
// (no member id, negative epoch) is always fine.
func (g *modernGroup[M, A]) FetchCheck(memberID *string, epoch int32) int16 {
	id, admin := fetchMemberID(memberID, epoch)
	if admin {
		return 0
	}
	memberEpoch, found := g.memberEpoch(id)
	return memberFetchCheck(epoch, found, memberEpoch)
}

// restoreMember installs a member read at load, with the epochs and state
// of its current assignment record (cur, nil when there was none). Its
// session restarts at now, as Kafka reschedules sessions when it loads a
// partition, and so does its rebalance timeout if it was revoking.
func (g *modernGroup[M, A]) restoreMember(m M, cur *modernMember, now time.Time, session time.Duration) {
	mm := m.modern()
	if cur != nil {
		mm.epoch, mm.prevEpoch, mm.state = cur.epoch, cur.prevEpoch, cur.state
	}
	mm.sessionDeadline = now.Add(session)
	if mm.state == memberUnrevoked {
		mm.revokeDeadline = now.Add(mm.rebalanceTimeout)
	}
	g.putMember(m)
}
