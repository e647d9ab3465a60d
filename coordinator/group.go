package coordinator

import (
	"bytes"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Waiter names a blocked JoinGroup or SyncGroup request. The group's owner
// maps it to the request's reply channel; the state machine only hands
// Replies back. Zero means "no request is waiting".
type Waiter uint64

// Reply is a response the owner must deliver to a blocked request. Exactly
// one of Join and Sync is set.
type Reply struct {
	To   Waiter
	Join *kmsg.JoinGroupResponse
	Sync *kmsg.SyncGroupResponse
}

// Client is who sent a request, as DescribeGroups reports members.
type Client struct {
	ID   string
	Host string
}

// GroupConfig holds the broker settings a group's decisions depend on.
type GroupConfig struct {
	MinSessionTimeout     time.Duration // group.min.session.timeout.ms
	MaxSessionTimeout     time.Duration // group.max.session.timeout.ms
	InitialRebalanceDelay time.Duration // group.initial.rebalance.delay.ms
	MaxSize               int           // group.max.size
	// NewMemberID returns a fresh member id starting with prefix (the
	// client id, or the group.instance.id of a static member), as Kafka's
	// "prefix-UUID".
	NewMemberID func(prefix string) string
}

// member is one member of a classic group.
type member struct {
	id               string
	instanceID       *string
	clientID         string
	clientHost       string
	sessionTimeout   time.Duration
	rebalanceTimeout time.Duration
	protocols        []kmsg.JoinGroupRequestProtocol
	assignment       []byte

	joinWaiter        Waiter
	syncWaiter        Waiter
	heartbeatDeadline time.Time
}

// metadataFor returns the member's metadata for the named protocol.
func (m *member) metadataFor(protocol string) []byte {
	for _, p := range m.protocols {
		if p.Name == protocol {
			return p.Metadata
		}
	}
	return nil
}

// supports tells whether the member lists the named protocol.
func (m *member) supports(protocol string) bool {
	for _, p := range m.protocols {
		if p.Name == protocol {
			return true
		}
	}
	return false
}

// pendingStore is a write of the group's metadata that the owner must do
// before the replies in it go out (and then call Group.Stored).
type pendingStore struct {
	// sync is set when the leader's SyncGroup is waiting for the write:
	// success moves the group to Stable and answers every SyncGroup.
	sync    bool
	replies []Reply
	// undo reverts what the group did before asking for the store, when
	// the write fails.
	undo func()
}

// Group is the classic rebalance protocol state machine of one group. It
// does no IO and reads no clock: every method takes now, and time-driven
// work happens when the owner calls Tick at or after NextDeadline. Blocked
// JoinGroup and SyncGroup requests are named by Waiters and answered through
// the returned Replies. Group is not safe for concurrent use; it has one
// owner goroutine (STYLE rule 12).
type Group struct {
	cfg *GroupConfig

	id           string
	state        State
	stateSince   time.Time
	protocolType string
	protocol     string
	generation   int32
	leader       string

	members     []*member            // in join order; the first is leader by default
	static      map[string]string    // group.instance.id -> member id
	pending     map[string]time.Time // member ids given out with MEMBER_ID_REQUIRED -> expiry
	pendingSync map[string]bool      // members that have not sent SyncGroup this generation

	// joinDeadline ends PreparingRebalance. While initialDelay is set it
	// is group.initial.rebalance.delay.ms for a new group, extended by
	// further delays (up to the rebalance timeout in all) while new
	// members keep arriving.
	joinDeadline     time.Time
	initialDelay     bool
	initialRemaining time.Duration
	newMemberAdded   bool
	// syncDeadline removes members that did not send SyncGroup within the
	// rebalance timeout after the join phase.
	syncDeadline time.Time

	store *pendingStore

	offsets map[topicPartition]offsetEntry
}

// NewGroup returns an Empty group.
func NewGroup(cfg *GroupConfig, id string, now time.Time) *Group {
	return &Group{
		cfg:        cfg,
		id:         id,
		state:      Empty,
		stateSince: now,
		static:     map[string]string{},
		pending:    map[string]time.Time{},
		offsets:    map[topicPartition]offsetEntry{},
	}
}

// ID returns the group id.
func (g *Group) ID() string { return g.id }

// State returns the group's state.
func (g *Group) State() State { return g.state }

// Generation returns the group's generation.
func (g *Group) Generation() int32 { return g.generation }

func (g *Group) setState(s State, now time.Time) {
	g.state = s
	g.stateSince = now
}

func (g *Group) member(id string) *member {
	for _, m := range g.members {
		if m.id == id {
			return m
		}
	}
	return nil
}

// fenced tells whether a request naming instanceID comes from a member id
// other than the one that instance currently has (Kafka's
// isStaticMemberFenced).
func (g *Group) fenced(instanceID *string, memberID string) bool {
	if instanceID == nil {
		return false
	}
	cur, ok := g.static[*instanceID]
	return ok && cur != memberID
}

// rebalanceTimeout is the longest rebalance timeout of the members.
func (g *Group) rebalanceTimeout() time.Duration {
	var d time.Duration
	for _, m := range g.members {
		d = max(d, m.rebalanceTimeout)
	}
	return d
}

func (g *Group) full() bool {
	return g.cfg.MaxSize > 0 && len(g.members)+len(g.pending) >= g.cfg.MaxSize
}

// supportsProtocols tells whether a member with these protocols can be in
// the group: an empty group takes any non-empty type and list; otherwise
// the type must match and one protocol must be supported by every other
// member.
func (g *Group) supportsProtocols(memberID, protocolType string, protocols []kmsg.JoinGroupRequestProtocol) bool {
	if protocolType == "" || len(protocols) == 0 {
		return false
	}
	others := 0
	for _, m := range g.members {
		if m.id != memberID {
			others++
		}
	}
	if others == 0 {
		return true
	}
	if protocolType != g.protocolType {
		return false
	}
	for _, p := range protocols {
		all := true
		for _, m := range g.members {
			if m.id != memberID && !m.supports(p.Name) {
				all = false
				break
			}
		}
		if all {
			return true
		}
	}
	return false
}

// selectProtocol picks the protocol every member supports that most members
// list first among those; ties go to the earlier one in the leader's list.
func (g *Group) selectProtocol() string {
	if len(g.members) == 0 {
		return ""
	}
	ref := g.member(g.leader)
	if ref == nil {
		ref = g.members[0]
	}
	var candidates []string
	for _, p := range ref.protocols {
		all := true
		for _, m := range g.members {
			if !m.supports(p.Name) {
				all = false
				break
			}
		}
		if all {
			candidates = append(candidates, p.Name)
		}
	}
	votes := map[string]int{}
	for _, m := range g.members {
		for _, p := range m.protocols {
			if slices.Contains(candidates, p.Name) {
				votes[p.Name]++
				break
			}
		}
	}
	best := ""
	for _, c := range candidates {
		if best == "" || votes[c] > votes[best] {
			best = c
		}
	}
	return best
}

func joinError(w Waiter, code int16, memberID string) []Reply {
	resp := kmsg.NewPtrJoinGroupResponse()
	resp.ErrorCode = code
	resp.Generation = -1
	resp.MemberID = memberID
	return []Reply{{To: w, Join: resp}}
}

func syncError(w Waiter, code int16) []Reply {
	resp := kmsg.NewPtrSyncGroupResponse()
	resp.ErrorCode = code
	return []Reply{{To: w, Sync: resp}}
}

func ptr[T any](v T) *T { return &v }

// joinResponse is the current generation as member m sees it; the leader
// also gets every member's metadata for the chosen protocol.
func (g *Group) joinResponse(m *member, withMembers bool) *kmsg.JoinGroupResponse {
	resp := kmsg.NewPtrJoinGroupResponse()
	resp.Generation = g.generation
	resp.ProtocolType = ptr(g.protocolType)
	resp.Protocol = ptr(g.protocol)
	resp.LeaderID = g.leader
	resp.MemberID = m.id
	if withMembers {
		for _, o := range g.members {
			resp.Members = append(resp.Members, kmsg.JoinGroupResponseMember{
				MemberID:         o.id,
				InstanceID:       o.instanceID,
				ProtocolMetadata: o.metadataFor(g.protocol),
			})
		}
	}
	return resp
}

// Join handles a JoinGroup request whose reply goes to w. The reply may be
// in the returned Replies (an error, MEMBER_ID_REQUIRED, a rejoin that
// changes nothing) or come later, when the join phase completes.
func (g *Group) Join(now time.Time, w Waiter, c Client, req *kmsg.JoinGroupRequest) []Reply {
	if g.state == Dead {
		return joinError(w, kerr.CoordinatorNotAvailable.Code, req.MemberID)
	}
	session := time.Duration(req.SessionTimeoutMillis) * time.Millisecond
	if session < g.cfg.MinSessionTimeout || session > g.cfg.MaxSessionTimeout {
		return joinError(w, kerr.InvalidSessionTimeout.Code, req.MemberID)
	}
	rebalance := time.Duration(req.RebalanceTimeoutMillis) * time.Millisecond
	if req.Version == 0 || req.RebalanceTimeoutMillis < 0 {
		rebalance = session
	}
	if !g.supportsProtocols(req.MemberID, req.ProtocolType, req.Protocols) {
		return joinError(w, kerr.InconsistentGroupProtocol.Code, req.MemberID)
	}
	fresh := &member{
		instanceID:       req.InstanceID,
		clientID:         c.ID,
		clientHost:       c.Host,
		sessionTimeout:   session,
		rebalanceTimeout: rebalance,
		protocols:        slices.Clone(req.Protocols),
	}

	if req.MemberID == "" {
		if req.InstanceID != nil {
			if old, ok := g.static[*req.InstanceID]; ok {
				return g.replaceStatic(now, w, g.member(old), fresh, req.Version)
			}
			if g.full() {
				return joinError(w, kerr.GroupMaxSizeReached.Code, "")
			}
			fresh.id = g.cfg.NewMemberID(*req.InstanceID)
			return g.addMember(now, w, fresh, req.ProtocolType)
		}
		if g.full() {
			return joinError(w, kerr.GroupMaxSizeReached.Code, "")
		}
		id := g.cfg.NewMemberID(c.ID)
		if req.Version >= 4 {
			// KIP-394: hand out the id first, so that a client that
			// times out and retries reuses it instead of leaving a
			// ghost member behind.
			g.pending[id] = now.Add(session)
			return joinError(w, kerr.MemberIDRequired.Code, id)
		}
		fresh.id = id
		return g.addMember(now, w, fresh, req.ProtocolType)
	}

	if g.fenced(req.InstanceID, req.MemberID) {
		return joinError(w, kerr.FencedInstanceID.Code, req.MemberID)
	}
	if _, ok := g.pending[req.MemberID]; ok {
		delete(g.pending, req.MemberID)
		fresh.id = req.MemberID
		return g.addMember(now, w, fresh, req.ProtocolType)
	}
	m := g.member(req.MemberID)
	if m == nil {
		return joinError(w, kerr.UnknownMemberID.Code, req.MemberID)
	}
	return g.rejoin(now, w, m, fresh)
}

// addMember adds a new member, whose JoinGroup waits for the join phase.
func (g *Group) addMember(now time.Time, w Waiter, m *member, protocolType string) []Reply {
	if len(g.members) == 0 {
		g.protocolType = protocolType
	}
	m.joinWaiter = w
	m.heartbeatDeadline = now.Add(m.sessionTimeout)
	g.members = append(g.members, m)
	if m.instanceID != nil {
		g.static[*m.instanceID] = m.id
	}
	if g.leader == "" {
		g.leader = m.id
	}
	if g.state == PreparingRebalance {
		g.newMemberAdded = true
		return g.maybeCompleteJoin(now)
	}
	return g.prepareRebalance(now)
}

// rejoin handles JoinGroup from a known member.
func (g *Group) rejoin(now time.Time, w Waiter, m *member, fresh *member) []Reply {
	changed := !sameProtocols(m.protocols, fresh.protocols)
	update := func() {
		m.protocols = fresh.protocols
		m.sessionTimeout = fresh.sessionTimeout
		m.rebalanceTimeout = fresh.rebalanceTimeout
		m.clientID, m.clientHost = fresh.clientID, fresh.clientHost
		m.heartbeatDeadline = now.Add(m.sessionTimeout)
	}
	var out []Reply
	if m.joinWaiter != 0 {
		// A second JoinGroup from the same member: the first one's
		// connection is gone or the client gave up; answer it so that
		// nothing stays blocked.
		out = joinError(m.joinWaiter, kerr.RebalanceInProgress.Code, m.id)
		m.joinWaiter = 0
	}
	switch g.state {
	case PreparingRebalance:
		update()
		m.joinWaiter = w
		return append(out, g.maybeCompleteJoin(now)...)
	case CompletingRebalance:
		if !changed {
			m.heartbeatDeadline = now.Add(m.sessionTimeout)
			return append(out, Reply{To: w, Join: g.joinResponse(m, m.id == g.leader)})
		}
	case Stable:
		if !changed && m.id != g.leader {
			m.heartbeatDeadline = now.Add(m.sessionTimeout)
			return append(out, Reply{To: w, Join: g.joinResponse(m, false)})
		}
	default:
		return append(out, joinError(w, kerr.UnknownMemberID.Code, m.id)...)
	}
	update()
	m.joinWaiter = w
	return append(out, g.prepareRebalance(now)...)
}

// replaceStatic handles JoinGroup with a known group.instance.id and no
// member id: the instance restarted. The old member id is fenced and the
// member takes a new id; in Stable with unchanged protocols there is no
// rebalance (KIP-345), the member resumes its assignment.
func (g *Group) replaceStatic(now time.Time, w Waiter, m *member, fresh *member, version int16) []Reply {
	var out []Reply
	if m.joinWaiter != 0 {
		out = append(out, joinError(m.joinWaiter, kerr.FencedInstanceID.Code, m.id)...)
		m.joinWaiter = 0
	}
	if m.syncWaiter != 0 {
		out = append(out, syncError(m.syncWaiter, kerr.FencedInstanceID.Code)...)
		m.syncWaiter = 0
	}
	oldID := m.id
	m.id = g.cfg.NewMemberID(*fresh.instanceID)
	g.static[*fresh.instanceID] = m.id
	if g.leader == oldID {
		g.leader = m.id
	}
	if g.pendingSync[oldID] {
		delete(g.pendingSync, oldID)
		g.pendingSync[m.id] = true
	}
	oldProtocols, oldSession, oldRebalance := m.protocols, m.sessionTimeout, m.rebalanceTimeout
	m.protocols = fresh.protocols
	m.sessionTimeout = fresh.sessionTimeout
	m.rebalanceTimeout = fresh.rebalanceTimeout
	m.clientID, m.clientHost = fresh.clientID, fresh.clientHost
	m.heartbeatDeadline = now.Add(m.sessionTimeout)

	switch g.state {
	case Stable:
		// Kafka 4.4 (GroupMetadataManager.
		// updateStaticMemberThenRebalanceOrCompleteJoin) rebalances only
		// when the new protocols change the protocol the group would
		// select, not when their metadata differs: a restarted consumer's
		// subscription always differs (no owned partitions, generation
		// -1), and comparing bytes rebalanced the group on every static
		// member bounce, the revocations static membership exists to
		// avoid (consumer_test.py's static bounce, TestSystestConsumer).
		if g.selectProtocol() == g.protocol {
			// Kafka persists the new member id before answering. A v9+
			// leader gets the members with SkipAssignment so it
			// does not recompute; an older leader gets none and
			// its SyncGroup just returns its current assignment.
			skip := version >= 9 && m.id == g.leader
			resp := g.joinResponse(m, skip)
			resp.SkipAssignment = skip
			newID, wasLeader := m.id, g.leader == m.id
			undo := func() {
				// The old member id stays, as in Kafka: the
				// instance retries its JoinGroup.
				m.id = oldID
				m.protocols, m.sessionTimeout, m.rebalanceTimeout = oldProtocols, oldSession, oldRebalance
				g.static[*fresh.instanceID] = oldID
				if wasLeader {
					g.leader = oldID
				}
				if g.pendingSync[newID] {
					delete(g.pendingSync, newID)
					g.pendingSync[oldID] = true
				}
			}
			g.store = &pendingStore{replies: []Reply{{To: w, Join: resp}}, undo: undo}
			return out
		}
	case PreparingRebalance:
		m.joinWaiter = w
		return append(out, g.maybeCompleteJoin(now)...)
	}
	m.joinWaiter = w
	return append(out, g.prepareRebalance(now)...)
}

func sameProtocols(a, b []kmsg.JoinGroupRequestProtocol) bool {
	return slices.EqualFunc(a, b, func(x, y kmsg.JoinGroupRequestProtocol) bool {
		return x.Name == y.Name && bytes.Equal(x.Metadata, y.Metadata)
	})
}

// prepareRebalance starts a join phase. Members waiting in SyncGroup are
// told REBALANCE_IN_PROGRESS.
func (g *Group) prepareRebalance(now time.Time) []Reply {
	var out []Reply
	if g.state == CompletingRebalance {
		out = g.failSyncs(kerr.RebalanceInProgress.Code)
	}
	g.pendingSync = nil
	g.syncDeadline = time.Time{}
	timeout := g.rebalanceTimeout()
	if g.state == Empty && g.cfg.InitialRebalanceDelay > 0 {
		delay := min(g.cfg.InitialRebalanceDelay, timeout)
		g.initialDelay = true
		g.initialRemaining = timeout - delay
		g.newMemberAdded = false
		g.joinDeadline = now.Add(delay)
		g.setState(PreparingRebalance, now)
		return out
	}
	g.initialDelay = false
	g.joinDeadline = now.Add(timeout)
	g.setState(PreparingRebalance, now)
	return append(out, g.maybeCompleteJoin(now)...)
}

// failSyncs answers every waiting SyncGroup with code and forgets the
// assignments of this generation.
func (g *Group) failSyncs(code int16) []Reply {
	var out []Reply
	for _, m := range g.members {
		m.assignment = nil
		if m.syncWaiter != 0 {
			out = append(out, syncError(m.syncWaiter, code)...)
			m.syncWaiter = 0
		}
	}
	return out
}

func (g *Group) allJoined() bool {
	if len(g.pending) > 0 {
		return false
	}
	for _, m := range g.members {
		if m.joinWaiter == 0 {
			return false
		}
	}
	return true
}

func (g *Group) maybeCompleteJoin(now time.Time) []Reply {
	if g.state == PreparingRebalance && !g.initialDelay && g.allJoined() {
		return g.completeJoin(now)
	}
	return nil
}

// removeMember drops a member and answers its blocked requests with code.
// It does not start a rebalance; callers do.
func (g *Group) removeMember(m *member, code int16) []Reply {
	var out []Reply
	if m.joinWaiter != 0 {
		out = append(out, joinError(m.joinWaiter, code, m.id)...)
	}
	if m.syncWaiter != 0 {
		out = append(out, syncError(m.syncWaiter, code)...)
	}
	g.members = slices.DeleteFunc(g.members, func(o *member) bool { return o == m })
	if m.instanceID != nil && g.static[*m.instanceID] == m.id {
		delete(g.static, *m.instanceID)
	}
	delete(g.pendingSync, m.id)
	if g.leader == m.id {
		g.leader = ""
		if len(g.members) > 0 {
			g.leader = g.members[0].id
		}
	}
	return out
}

// completeJoin ends the join phase: members that did not rejoin are
// removed, the generation advances, and every waiting JoinGroup is
// answered.
func (g *Group) completeJoin(now time.Time) []Reply {
	var out []Reply
	for _, m := range slices.Clone(g.members) {
		if m.joinWaiter == 0 {
			out = append(out, g.removeMember(m, kerr.UnknownMemberID.Code)...)
		}
	}
	g.joinDeadline = time.Time{}
	g.initialDelay = false
	g.generation++
	if len(g.members) == 0 {
		g.protocol = ""
		g.leader = ""
		g.setState(Empty, now)
		g.store = &pendingStore{}
		return out
	}
	g.protocol = g.selectProtocol()
	if g.member(g.leader) == nil {
		g.leader = g.members[0].id
	}
	g.setState(CompletingRebalance, now)
	g.pendingSync = map[string]bool{}
	g.syncDeadline = now.Add(g.rebalanceTimeout())
	for _, m := range g.members {
		g.pendingSync[m.id] = true
		out = append(out, Reply{To: m.joinWaiter, Join: g.joinResponse(m, m.id == g.leader)})
		m.joinWaiter = 0
		m.heartbeatDeadline = now.Add(m.sessionTimeout)
	}
	return out
}

// Sync handles a SyncGroup request whose reply goes to w. The leader's
// SyncGroup in CompletingRebalance sets a pending store: the owner writes
// the group and calls Stored, which answers every waiting member.
func (g *Group) Sync(now time.Time, w Waiter, req *kmsg.SyncGroupRequest) []Reply {
	if g.state == Dead {
		return syncError(w, kerr.CoordinatorNotAvailable.Code)
	}
	if g.fenced(req.InstanceID, req.MemberID) {
		return syncError(w, kerr.FencedInstanceID.Code)
	}
	m := g.member(req.MemberID)
	if m == nil {
		return syncError(w, kerr.UnknownMemberID.Code)
	}
	if req.Generation != g.generation {
		return syncError(w, kerr.IllegalGeneration.Code)
	}
	if (req.ProtocolType != nil && *req.ProtocolType != g.protocolType) ||
		(req.Protocol != nil && *req.Protocol != g.protocol) {
		return syncError(w, kerr.InconsistentGroupProtocol.Code)
	}
	switch g.state {
	case PreparingRebalance:
		return syncError(w, kerr.RebalanceInProgress.Code)
	case CompletingRebalance:
		var out []Reply
		if m.syncWaiter != 0 {
			out = syncError(m.syncWaiter, kerr.RebalanceInProgress.Code)
		}
		m.syncWaiter = w
		m.heartbeatDeadline = now.Add(m.sessionTimeout)
		delete(g.pendingSync, m.id)
		if m.id == g.leader {
			for _, o := range g.members {
				o.assignment = []byte{}
			}
			for _, a := range req.GroupAssignment {
				if o := g.member(a.MemberID); o != nil {
					o.assignment = a.MemberAssignment
				}
			}
			g.store = &pendingStore{sync: true}
		}
		return out
	case Stable:
		m.heartbeatDeadline = now.Add(m.sessionTimeout)
		delete(g.pendingSync, m.id)
		return []Reply{{To: w, Sync: g.syncResponse(m)}}
	}
	return syncError(w, kerr.UnknownMemberID.Code)
}

func (g *Group) syncResponse(m *member) *kmsg.SyncGroupResponse {
	resp := kmsg.NewPtrSyncGroupResponse()
	resp.ProtocolType = ptr(g.protocolType)
	resp.Protocol = ptr(g.protocol)
	resp.MemberAssignment = m.assignment
	if resp.MemberAssignment == nil {
		resp.MemberAssignment = []byte{}
	}
	return resp
}

// PendingStore tells whether the owner must write the group's metadata
// and then call Stored.
func (g *Group) PendingStore() bool { return g.store != nil }

// Stored tells the group how the write asked for by PendingStore went.
// err nil: the replies waiting on it go out (the leader's SyncGroup moves
// the group to Stable). Otherwise they get COORDINATOR_NOT_AVAILABLE and a
// SyncGroup write failure starts a new rebalance, as in Kafka.
func (g *Group) Stored(now time.Time, err error) []Reply {
	ps := g.store
	g.store = nil
	if ps == nil {
		return nil
	}
	if err == nil {
		out := ps.replies
		if ps.sync && g.state == CompletingRebalance {
			g.setState(Stable, now)
			for _, m := range g.members {
				if m.syncWaiter != 0 {
					out = append(out, Reply{To: m.syncWaiter, Sync: g.syncResponse(m)})
					m.syncWaiter = 0
				}
			}
		}
		return out
	}
	code := writeError(err).Code
	if ps.undo != nil {
		ps.undo()
	}
	out := ps.replies
	for _, r := range out {
		if r.Join != nil {
			r.Join.ErrorCode = code
		}
		if r.Sync != nil {
			r.Sync.ErrorCode = code
		}
	}
	if ps.sync && g.state == CompletingRebalance {
		out = append(out, g.failSyncs(code)...)
		out = append(out, g.prepareRebalance(now)...)
	}
	return out
}

// Heartbeat handles a Heartbeat request and returns its error code.
func (g *Group) Heartbeat(now time.Time, req *kmsg.HeartbeatRequest) int16 {
	if g.state == Dead {
		return kerr.CoordinatorNotAvailable.Code
	}
	if g.fenced(req.InstanceID, req.MemberID) {
		return kerr.FencedInstanceID.Code
	}
	m := g.member(req.MemberID)
	if m == nil {
		return kerr.UnknownMemberID.Code
	}
	if req.Generation != g.generation {
		return kerr.IllegalGeneration.Code
	}
	m.heartbeatDeadline = now.Add(m.sessionTimeout)
	if g.state == PreparingRebalance {
		return kerr.RebalanceInProgress.Code
	}
	return 0
}

// Leaver is one member leaving, as LeaveGroup names it (v3+ batches them;
// v0-v2 has one, by member id).
type Leaver struct {
	MemberID   string
	InstanceID *string
}

// Leave removes members and returns one error code per leaver.
func (g *Group) Leave(now time.Time, leavers []Leaver) ([]int16, []Reply) {
	codes := make([]int16, len(leavers))
	var out []Reply
	removed, pendingRemoved := false, false
	for i, l := range leavers {
		if g.state == Dead {
			codes[i] = kerr.CoordinatorNotAvailable.Code
			continue
		}
		id := l.MemberID
		if l.InstanceID != nil {
			cur, ok := g.static[*l.InstanceID]
			switch {
			case !ok:
				codes[i] = kerr.UnknownMemberID.Code
				continue
			case id != "" && cur != id:
				codes[i] = kerr.FencedInstanceID.Code
				continue
			}
			id = cur
		}
		if _, ok := g.pending[id]; ok {
			delete(g.pending, id)
			pendingRemoved = true
			continue
		}
		m := g.member(id)
		if m == nil {
			codes[i] = kerr.UnknownMemberID.Code
			continue
		}
		out = append(out, g.removeMember(m, kerr.UnknownMemberID.Code)...)
		removed = true
	}
	out = append(out, g.membersChanged(now, removed, pendingRemoved)...)
	return codes, out
}

// membersChanged starts or finishes a rebalance after members went away.
func (g *Group) membersChanged(now time.Time, removed, pendingRemoved bool) []Reply {
	switch {
	case removed && (g.state == Stable || g.state == CompletingRebalance):
		return g.prepareRebalance(now)
	case (removed || pendingRemoved) && g.state == PreparingRebalance:
		return g.maybeCompleteJoin(now)
	}
	return nil
}

// NextDeadline returns when Tick must next run; ok is false when nothing
// in the group is timed.
func (g *Group) NextDeadline() (t time.Time, ok bool) {
	consider := func(d time.Time) {
		if !d.IsZero() && (!ok || d.Before(t)) {
			t, ok = d, true
		}
	}
	for _, d := range g.pending {
		consider(d)
	}
	for _, m := range g.members {
		if m.joinWaiter == 0 && m.syncWaiter == 0 {
			consider(m.heartbeatDeadline)
		}
	}
	if g.state == PreparingRebalance {
		consider(g.joinDeadline)
	}
	if len(g.pendingSync) > 0 && (g.state == CompletingRebalance || g.state == Stable) {
		consider(g.syncDeadline)
	}
	return t, ok
}

// Tick fires every deadline at or before now: pending member ids and
// sessions expire (a member blocked in JoinGroup or SyncGroup is alive),
// the join phase ends, and members that never sent SyncGroup are removed.
func (g *Group) Tick(now time.Time) []Reply {
	var out []Reply
	pendingRemoved := false
	for id, d := range g.pending {
		if !now.Before(d) {
			delete(g.pending, id)
			pendingRemoved = true
		}
	}
	removed := false
	for _, m := range slices.Clone(g.members) {
		if m.joinWaiter == 0 && m.syncWaiter == 0 && !now.Before(m.heartbeatDeadline) {
			out = append(out, g.removeMember(m, kerr.UnknownMemberID.Code)...)
			removed = true
		}
	}
	if len(g.pendingSync) > 0 && (g.state == CompletingRebalance || g.state == Stable) && !now.Before(g.syncDeadline) {
		for _, m := range slices.Clone(g.members) {
			if g.pendingSync[m.id] {
				out = append(out, g.removeMember(m, kerr.UnknownMemberID.Code)...)
				removed = true
			}
		}
		g.pendingSync = nil
	}
	out = append(out, g.membersChanged(now, removed, pendingRemoved)...)
	if g.state == PreparingRebalance && !g.joinDeadline.IsZero() && !now.Before(g.joinDeadline) {
		if g.initialDelay && g.newMemberAdded && g.initialRemaining > 0 {
			delay := min(g.cfg.InitialRebalanceDelay, g.initialRemaining)
			g.initialRemaining -= delay
			g.newMemberAdded = false
			g.joinDeadline = now.Add(delay)
		} else {
			out = append(out, g.completeJoin(now)...)
		}
	}
	return out
}

// Describe returns the group as DescribeGroups shows it: member metadata
// and assignments only in Stable, as Kafka does.
func (g *Group) Describe() kmsg.DescribeGroupsResponseGroup {
	d := kmsg.NewDescribeGroupsResponseGroup()
	d.Group = g.id
	d.State = g.state.String()
	d.ProtocolType = g.protocolType
	if g.state == Stable {
		d.Protocol = g.protocol
	}
	for _, m := range g.members {
		dm := kmsg.NewDescribeGroupsResponseGroupMember()
		dm.MemberID = m.id
		dm.InstanceID = m.instanceID
		dm.ClientID = m.clientID
		dm.ClientHost = m.clientHost
		if g.state == Stable {
			dm.ProtocolMetadata = m.metadataFor(g.protocol)
			dm.MemberAssignment = m.assignment
		}
		d.Members = append(d.Members, dm)
	}
	return d
}

// Empty tells whether the group has no members (ready to be deleted).
func (g *Group) hasMembers() bool { return len(g.members) > 0 || len(g.pending) > 0 }

// metadataValue is the group's GroupMetadataValue v3 record value.
func (g *Group) metadataValue() *kmsg.GroupMetadataValue {
	vv := kmsg.NewGroupMetadataValue()
	v := &vv
	v.Version = 3
	v.ProtocolType = g.protocolType
	v.Generation = g.generation
	if g.protocol != "" {
		v.Protocol = ptr(g.protocol)
	}
	if g.leader != "" {
		v.Leader = ptr(g.leader)
	}
	v.CurrentStateTimestamp = g.stateSince.UnixMilli()
	for _, m := range g.members {
		vm := kmsg.NewGroupMetadataValueMember()
		vm.MemberID = m.id
		vm.InstanceID = m.instanceID
		vm.ClientID = m.clientID
		vm.ClientHost = m.clientHost
		vm.RebalanceTimeoutMillis = int32(m.rebalanceTimeout / time.Millisecond)
		vm.SessionTimeoutMillis = int32(m.sessionTimeout / time.Millisecond)
		vm.Subscription = m.metadataFor(g.protocol)
		vm.Assignment = m.assignment
		v.Members = append(v.Members, vm)
	}
	return v
}

// restoreGroup rebuilds a group from its last GroupMetadataValue, as on
// coordinator load: Stable when it has members (their sessions restart
// from now), else Empty.
func restoreGroup(cfg *GroupConfig, id string, v *kmsg.GroupMetadataValue, now time.Time) *Group {
	g := NewGroup(cfg, id, now)
	g.protocolType = v.ProtocolType
	g.generation = v.Generation
	if v.Protocol != nil {
		g.protocol = *v.Protocol
	}
	if v.Leader != nil {
		g.leader = *v.Leader
	}
	if v.CurrentStateTimestamp > 0 {
		g.stateSince = time.UnixMilli(v.CurrentStateTimestamp)
	}
	for _, vm := range v.Members {
		m := &member{
			id:               vm.MemberID,
			instanceID:       vm.InstanceID,
			clientID:         vm.ClientID,
			clientHost:       vm.ClientHost,
			sessionTimeout:   time.Duration(vm.SessionTimeoutMillis) * time.Millisecond,
			rebalanceTimeout: time.Duration(vm.RebalanceTimeoutMillis) * time.Millisecond,
			protocols:        []kmsg.JoinGroupRequestProtocol{{Name: g.protocol, Metadata: vm.Subscription}},
			assignment:       vm.Assignment,
		}
		if m.rebalanceTimeout == 0 {
			m.rebalanceTimeout = m.sessionTimeout
		}
		m.heartbeatDeadline = now.Add(m.sessionTimeout)
		g.members = append(g.members, m)
		if m.instanceID != nil {
			g.static[*m.instanceID] = m.id
		}
	}
	if len(g.members) > 0 {
		g.state = Stable
		if g.member(g.leader) == nil {
			g.leader = g.members[0].id
		}
	} else {
		g.state = Empty
	}
	return g
}
