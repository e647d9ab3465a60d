package coordinator

import (
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// StreamsGroupConfig holds the broker settings of KIP-1071 streams groups.
type StreamsGroupConfig struct {
	SessionTimeout        time.Duration // group.streams.session.timeout.ms
	HeartbeatInterval     time.Duration // group.streams.heartbeat.interval.ms
	MaxSize               int           // group.streams.max.size
	NumStandbyReplicas    int           // group.streams.num.standby.replicas
	AcceptableRecoveryLag int64         // group.streams.acceptable.recovery.lag
	TaskOffsetInterval    time.Duration // group.streams.task.offset.interval.ms
	// InitialRebalanceDelay (group.streams.initial.rebalance.delay.ms)
	// holds a new group's first assignment back, for more members to
	// join; members are told ASSIGNMENT_DELAYED meanwhile.
	InitialRebalanceDelay time.Duration
}

// stMember is one member of a streams group.
type stMember struct {
	modernMember
	processID     string
	userEndpoint  *kmsg.StreamsGroupHeartbeatRequestUserEndpoint
	clientTags    []kmsg.StreamsGroupHeartbeatRequestClientTag
	taskOffsets   []kmsg.TaskOffset
	taskEndOffset []kmsg.TaskOffset
	topologyEpoch int32

	assigned          streamsTasks
	pendingRevocation taskSet // active tasks the member must give up
}

func (m *stMember) clone() *stMember {
	c := *m
	c.clientTags = slices.Clone(m.clientTags)
	c.assigned = m.assigned.clone()
	c.pendingRevocation = m.pendingRevocation.clone()
	return &c
}

// StreamsGroup is the KIP-1071 state machine of one streams group, shaped
// as ConsumerGroup: member epochs, a group epoch bumped by membership,
// topology or task changes, a target assignment of tasks, and each
// member's reconciliation towards it, an active task going to a member
// only once its previous owner stopped reporting it. The topology is the
// first joining member's; the tasks come from resolving it against the
// cluster at every heartbeat. It does no IO and reads no clock. The shard
// goroutine owns it. The shard writes what changed as Kafka 4.4's records
// (streams_group_records.go), so a restarted or failed-over coordinator
// keeps the group, its epochs and assignments.
type StreamsGroup struct {
	modernGroup[*stMember, streamsTasks]
	cfg *StreamsGroupConfig

	topology      *kmsg.StreamsGroupHeartbeatRequestTopology
	configured    *configuredTopology
	endpointEpoch int32
	shutdown      string    // detail of a member's shutdown request, "" for none
	delayUntil    time.Time // the first assignment's, once a member joined
}

// NewStreamsGroup returns an empty streams group at epoch 0.
func NewStreamsGroup(cfg *StreamsGroupConfig, id string, now time.Time) *StreamsGroup {
	return &StreamsGroup{
		modernGroup: newModernGroup[*stMember, streamsTasks](id, 0, now),
		cfg:         cfg,
	}
}

func (g *StreamsGroup) clone() *StreamsGroup {
	c := *g
	c.modernGroup = g.cloneModern()
	return &c
}

// StateName returns the state as Kafka names it: Empty, NotReady (no
// usable topology: topics missing or wrongly partitioned), Assigning,
// Reconciling or Stable.
func (g *StreamsGroup) StateName() string {
	switch {
	case len(g.members) == 0:
		return "Empty"
	case !g.configured.ready():
		return "NotReady"
	}
	return g.progressState()
}

func stError(resp *kmsg.StreamsGroupHeartbeatResponse, e *kerr.Error, msg string) {
	resp.ErrorCode = e.Code
	if msg == "" {
		msg = e.Message
	}
	resp.ErrorMessage = &msg
}

// validateStreamsHeartbeat checks the fields that do not depend on the
// group, in the order and with the messages of Kafka 4.4's
// throwIfStreamsGroupHeartbeatRequestIsInvalid.
func validateStreamsHeartbeat(req *kmsg.StreamsGroupHeartbeatRequest) string {
	empty := func(s *string) bool { return s != nil && strings.TrimSpace(*s) == "" }
	switch {
	case strings.TrimSpace(req.MemberID) == "":
		return "MemberId can't be empty."
	case strings.TrimSpace(req.Group) == "":
		return "GroupId can't be empty."
	case empty(req.InstanceID):
		return "InstanceId can't be empty."
	case empty(req.RackID):
		return "RackId can't be empty."
	}
	switch {
	case req.MemberEpoch == 0:
		switch {
		case req.RebalanceTimeoutMillis == -1:
			return "RebalanceTimeoutMs must be provided in first request."
		case len(req.ActiveTasks) > 0:
			return "ActiveTasks must be empty when (re-)joining."
		case len(req.StandbyTasks) > 0:
			return "StandbyTasks must be empty when (re-)joining."
		case len(req.WarmupTasks) > 0:
			return "WarmupTasks must be empty when (re-)joining."
		case req.Topology == nil:
			return "Topology must be non-null when (re-)joining."
		}
		for _, st := range req.Topology.Subtopologies {
			if st.SubtopologyID == "" {
				return "Subtopology ID must be non-empty."
			}
		}
	case req.MemberEpoch == leaveStaticGroupEpoch:
		if req.InstanceID == nil {
			return "InstanceId can't be null."
		}
	case req.MemberEpoch < leaveStaticGroupEpoch:
		return "MemberEpoch is " + itoa32(req.MemberEpoch) + ", but must be greater than or equal to -2."
	}
	if req.ActiveTasks != nil || req.StandbyTasks != nil || req.WarmupTasks != nil {
		if req.ActiveTasks == nil || req.StandbyTasks == nil || req.WarmupTasks == nil {
			return "If one task-type is non-null, all must be non-null."
		}
	}
	if req.MemberEpoch != 0 && req.Topology != nil {
		return "Topology can only be provided when (re-)joining."
	}
	return ""
}

// Heartbeat runs one validated StreamsGroupHeartbeat against the group and
// fills resp. It returns the internal topics to create (the broker creates
// them); on an error in resp nothing changed.
func (g *StreamsGroup) Heartbeat(now time.Time, c Client, img TopicImage, req *kmsg.StreamsGroupHeartbeatRequest, resp *kmsg.StreamsGroupHeartbeatResponse) []StreamsInternalTopic {
	if req.MemberEpoch < 0 {
		g.leave(now, req, resp)
		return nil
	}
	old := g.members[req.MemberID]
	var m *stMember
	bump := false
	if req.MemberEpoch == 0 {
		if g.topology != nil && req.Topology.Epoch == g.topology.Epoch && !sameTopology(g.topology, req.Topology) {
			stError(resp, kerr.InvalidRequest, "Topology updates are not supported yet.")
			return nil
		}
		if prevID, prev, ok := g.staticHolder(req.InstanceID, req.MemberID); ok {
			if prev.epoch != leaveStaticGroupEpoch {
				stError(resp, kerr.UnreleasedInstanceID, "Static member "+*req.InstanceID+" with member id "+prevID+" is still in use.")
				return nil
			}
			m = prev.clone()
			m.id = req.MemberID
			m.pendingRevocation = taskSet{}
			g.takeOver(m, prevID)
			old = prev
		}
		if m == nil && old != nil {
			m = old.clone()
		}
		if m == nil {
			if g.cfg.MaxSize > 0 && len(g.members) >= g.cfg.MaxSize {
				stError(resp, kerr.GroupMaxSizeReached, "The streams group has reached its maximum capacity of "+itoa32(int32(min(g.cfg.MaxSize, math.MaxInt32)))+" members.")
				return nil
			}
			m = &stMember{modernMember: modernMember{id: req.MemberID}, assigned: newStreamsTasks(), pendingRevocation: taskSet{}}
			bump = true
		}
		m.topologyEpoch = req.Topology.Epoch
		if g.topology == nil {
			g.topology = req.Topology
			bump = true
		}
	} else {
		if old == nil {
			stError(resp, kerr.UnknownMemberID, "Member "+req.MemberID+" is not a member of group "+g.id+".")
			return nil
		}
		if e := old.checkEpoch(req.MemberEpoch, req.ActiveTasks); e != nil {
			stError(resp, e, "")
			return nil
		}
		m = old.clone()
	}

	m.setClient(c, req.InstanceID, req.RebalanceTimeoutMillis)
	if req.RackID != nil {
		if m.rackID == nil || *m.rackID != *req.RackID {
			bump = bump || old != nil
		}
		m.rackID = req.RackID
	}
	if req.ProcessID != nil && *req.ProcessID != m.processID {
		m.processID = *req.ProcessID
		bump = true
	}
	if req.UserEndpoint != nil {
		ep := *req.UserEndpoint
		if m.userEndpoint == nil || m.userEndpoint.Host != ep.Host || m.userEndpoint.Port != ep.Port {
			g.endpointEpoch++
		}
		m.userEndpoint = &ep
	}
	if req.ClientTags != nil {
		m.clientTags = slices.Clone(req.ClientTags)
	}
	if req.TaskOffsets != nil {
		m.taskOffsets = slices.Clone(req.TaskOffsets)
	}
	if req.TaskEndOffsets != nil {
		m.taskEndOffset = slices.Clone(req.TaskEndOffsets)
	}
	if req.ShutdownApplication && g.shutdown == "" {
		g.shutdown = "Streams group member " + m.id + " encountered a fatal error and requested a shutdown for the entire application."
	}
	g.putMember(m)

	// The topology against the cluster's topics, at every heartbeat, so
	// that created topics are picked up.
	// (A group just loaded has no resolution yet: its stored target is
	// kept unless the tasks really changed, which its next heartbeat
	// after this one would see.)
	conf := configureTopology(g.topology, img)
	if g.configured != nil && !sameTasks(conf, g.configured) {
		bump = true
	}
	g.configured = conf
	if bump {
		g.epoch++
	}
	if g.epoch > g.assignmentEpoch && g.assignmentEpoch == 0 && g.cfg.InitialRebalanceDelay > 0 && g.delayUntil.IsZero() {
		// A new group's first assignment waits for more members, as
		// Kafka 4.4's: an empty target at the current epoch now (the
		// members take it), the real one at the next epoch once the
		// delay is over.
		g.delayUntil = now.Add(g.cfg.InitialRebalanceDelay)
		g.target = map[string]streamsTasks{}
		for id := range g.members {
			g.target[id] = newStreamsTasks()
		}
		g.assignmentEpoch = g.epoch
		g.epoch++
	}
	delayed := now.Before(g.delayUntil)
	if g.epoch > g.assignmentEpoch && !delayed {
		g.computeTarget()
	}

	before := old
	if before == nil {
		before = &stMember{modernMember: modernMember{epoch: -1}, assigned: newStreamsTasks()}
	}
	g.reconcile(now, m, req.ActiveTasks)
	m.sessionDeadline = now.Add(g.cfg.SessionTimeout)
	changed := !m.assigned.equal(before.assigned)
	if changed {
		g.endpointEpoch++
	}

	resp.MemberID = m.id
	resp.MemberEpoch = m.epoch
	resp.HeartbeatIntervalMillis = int32(g.cfg.HeartbeatInterval / time.Millisecond)
	resp.AcceptableRecoveryLag = g.cfg.AcceptableRecoveryLag
	resp.TaskOffsetIntervalMillis = int32(g.cfg.TaskOffsetInterval / time.Millisecond)
	var status []kmsg.StreamsGroupHeartbeatResponseStatus
	addStatus := func(code int8, detail string) {
		st := kmsg.NewStreamsGroupHeartbeatResponseStatus()
		st.StatusCode, st.StatusDetail = code, detail
		status = append(status, st)
	}
	if delayed {
		addStatus(streamsStatusAssignmentDelayed, "Assignment delayed due to the configured initial rebalance delay.")
	}
	if g.topology != nil && m.topologyEpoch < g.topology.Epoch {
		addStatus(streamsStatusStaleTopology, "The member's topology epoch "+itoa32(m.topologyEpoch)+" is behind the group's topology epoch "+itoa32(g.topology.Epoch)+".")
	}
	if conf.status >= 0 {
		addStatus(conf.status, conf.detail)
	}
	if g.shutdown != "" {
		addStatus(streamsStatusShutdownApplication, g.shutdown)
	}
	resp.Status = status
	if req.MemberEpoch == 0 || changed || req.ActiveTasks == nil && old == nil {
		resp.ActiveTasks = m.assigned.active.toKmsg()
		resp.StandbyTasks = m.assigned.standby.toKmsg()
		resp.WarmupTasks = m.assigned.warmup.toKmsg()
	}
	resp.EndpointInformationEpoch = g.endpointEpoch
	if req.EndpointInformationEpoch < g.endpointEpoch {
		resp.PartitionsByUserEndpoint = g.endpointPartitions()
	}
	return conf.missing
}

// sameTopology compares two topologies field by field.
func sameTopology(a, b *kmsg.StreamsGroupHeartbeatRequestTopology) bool {
	if a.Epoch != b.Epoch || len(a.Subtopologies) != len(b.Subtopologies) {
		return false
	}
	byID := map[string]*kmsg.StreamsGroupHeartbeatRequestTopologySubtopology{}
	for i := range a.Subtopologies {
		byID[a.Subtopologies[i].SubtopologyID] = &a.Subtopologies[i]
	}
	infos := func(ts []kmsg.TopicInfo) []string {
		var out []string
		for _, t := range ts {
			s := t.Topic + "/" + itoa32(t.NumPartitions) + "/" + itoa32(int32(t.ReplicationFactor))
			for _, c := range t.Configs {
				s += "/" + c.Key + "=" + c.Value
			}
			out = append(out, s)
		}
		slices.Sort(out)
		return out
	}
	sorted := func(s []string) []string { return slices.Sorted(slices.Values(s)) }
	for i := range b.Subtopologies {
		y := &b.Subtopologies[i]
		x := byID[y.SubtopologyID]
		if x == nil || !slices.Equal(sorted(x.SourceTopics), sorted(y.SourceTopics)) ||
			!slices.Equal(sorted(x.SourceTopicRegex), sorted(y.SourceTopicRegex)) ||
			!slices.Equal(sorted(x.RepartitionSinkTopics), sorted(y.RepartitionSinkTopics)) ||
			!slices.Equal(infos(x.StateChangelogTopics), infos(y.StateChangelogTopics)) ||
			!slices.Equal(infos(x.RepartitionSourceTopics), infos(y.RepartitionSourceTopics)) {
			return false
		}
	}
	return true
}

// checkEpoch validates a heartbeat's epoch as the consumer protocol does:
// newer than the member's is fenced; older only when it is the previous
// epoch and the member owns no active task it should not.
func (m *stMember) checkEpoch(received int32, owned []kmsg.TaskIDs) *kerr.Error {
	return m.modernMember.checkEpoch(received, owned != nil, func() bool {
		for _, t := range owned {
			for _, p := range t.Partitions {
				if !m.assigned.active.has(t.SubtopologyID, p) {
					return false
				}
			}
		}
		return true
	})
}

// leave handles member epochs -1 and -2.
func (g *StreamsGroup) leave(now time.Time, req *kmsg.StreamsGroupHeartbeatRequest, resp *kmsg.StreamsGroupHeartbeatResponse) {
	m, ok := g.leaving(req.MemberID, req.InstanceID)
	if !ok {
		stError(resp, kerr.UnknownMemberID, "Member "+req.MemberID+" is not a member of group "+g.id+".")
		return
	}
	resp.MemberID = req.MemberID
	resp.MemberEpoch = req.MemberEpoch
	if req.MemberEpoch == leaveStaticGroupEpoch && m.instanceID != nil {
		m.leaveStatic()
		return
	}
	g.removeMember(now, m.id)
}

// removeMember drops a member and bumps the group epoch.
func (g *StreamsGroup) removeMember(now time.Time, id string) {
	if !g.dropMember(now, id) {
		return
	}
	if len(g.members) == 0 {
		g.shutdown = ""
	}
	g.endpointEpoch++
}

// computeTarget assigns the configured tasks to the members at the group
// epoch; nothing when the topology is not ready.
func (g *StreamsGroup) computeTarget() {
	ids := slices.Sorted(maps.Keys(g.members))
	next := map[string]streamsTasks{}
	if g.configured.ready() {
		in := make([]streamsAssignMember, 0, len(ids))
		for _, id := range ids {
			m := g.members[id]
			proc := m.processID
			if proc == "" {
				proc = id
			}
			// Kafka 4.4's TargetAssignmentBuilder gives the assignor each
			// member's current assignment (assignedTasks) and the task
			// offsets it reported.
			var offsets map[string]map[int32]int64
			for _, to := range m.taskOffsets {
				if offsets == nil {
					offsets = map[string]map[int32]int64{}
				}
				if offsets[to.SubtopologyID] == nil {
					offsets[to.SubtopologyID] = map[int32]int64{}
				}
				offsets[to.SubtopologyID][to.Partition] = to.Offset
			}
			in = append(in, streamsAssignMember{id: id, process: proc, prev: m.assigned.clone(), offsets: offsets})
		}
		next = assignStreamsTasks(in, g.configured.tasks, g.configured.stateful, g.cfg.NumStandbyReplicas)
	}
	for _, id := range ids {
		if _, ok := next[id]; !ok {
			next[id] = newStreamsTasks()
		}
	}
	g.target = next
	g.assignmentEpoch = g.epoch
}

// activeOwnedByOthers returns the active tasks members other than id hold
// or still have to revoke.
func (g *StreamsGroup) activeOwnedByOthers(id string) map[string]bool {
	out := map[string]bool{}
	for mid, m := range g.members {
		if mid == id {
			continue
		}
		for _, ts := range []taskSet{m.assigned.active, m.pendingRevocation} {
			ts.each(func(s string, p int32) { out[s+"/"+itoa32(p)] = true })
		}
	}
	return out
}

// reconcile moves a member towards its target (Kafka's streams
// CurrentAssignmentBuilder): active tasks it must give up are revoked
// first, at its current epoch; once it no longer reports them it takes the
// target epoch with every active task nobody else holds.
func (g *StreamsGroup) reconcile(now time.Time, m *stMember, owned []kmsg.TaskIDs) {
	revoked := func() bool {
		if owned == nil {
			return false
		}
		for _, t := range owned {
			for _, p := range t.Partitions {
				if m.pendingRevocation.has(t.SubtopologyID, p) {
					return false
				}
			}
		}
		return true
	}
	g.modernGroup.reconcile(&m.modernMember, revoked, func() { g.nextAssignment(now, m) })
}

func (g *StreamsGroup) nextAssignment(now time.Time, m *stMember) {
	target, ok := g.target[m.id]
	if !ok {
		target = newStreamsTasks()
	}
	kept, revoke := taskSet{}, taskSet{}
	m.assigned.active.each(func(s string, p int32) {
		if target.active.has(s, p) {
			kept.add(s, p)
		} else {
			revoke.add(s, p)
		}
	})
	if revoke.count() > 0 {
		m.assigned.active = kept
		m.pendingRevocation = revoke
		standby, warmup := taskSet{}, taskSet{}
		m.assigned.standby.each(func(s string, p int32) {
			if target.standby.has(s, p) {
				standby.add(s, p)
			}
		})
		m.assigned.warmup.each(func(s string, p int32) {
			if target.warmup.has(s, p) {
				warmup.add(s, p)
			}
		})
		m.assigned.standby, m.assigned.warmup = standby, warmup
		m.startRevocation(now)
		return
	}
	var others map[string]bool
	unreleased := false
	target.active.each(func(s string, p int32) {
		if kept.has(s, p) {
			return
		}
		if others == nil {
			others = g.activeOwnedByOthers(m.id)
		}
		if others[s+"/"+itoa32(p)] {
			unreleased = true
			return
		}
		kept.add(s, p)
	})
	m.assigned = streamsTasks{active: kept, standby: target.standby.clone(), warmup: target.warmup.clone()}
	m.pendingRevocation = taskSet{}
	m.settle(g.assignmentEpoch, unreleased)
}

// endpointPartitions maps each member's user endpoint to the partitions
// of the source and repartition source topics of its current active and
// standby tasks, for interactive queries.
func (g *StreamsGroup) endpointPartitions() []kmsg.StreamsGroupHeartbeatResponsePartitionsByUserEndpoint {
	out := []kmsg.StreamsGroupHeartbeatResponsePartitionsByUserEndpoint{}
	if g.topology == nil {
		return out
	}
	topics := map[string][]string{}
	for _, st := range g.topology.Subtopologies {
		var ts []string
		if g.configured != nil {
			ts = slices.Clone(g.configured.sources[st.SubtopologyID])
		}
		if ts == nil {
			ts = slices.Clone(st.SourceTopics)
		}
		for _, r := range st.RepartitionSourceTopics {
			ts = append(ts, r.Topic)
		}
		topics[st.SubtopologyID] = ts
	}
	parts := func(t taskSet) map[string][]int32 {
		byTopic := map[string][]int32{}
		t.each(func(s string, p int32) {
			for _, n := range topics[s] {
				byTopic[n] = append(byTopic[n], p)
			}
		})
		return byTopic
	}
	for _, id := range slices.Sorted(maps.Keys(g.members)) {
		m := g.members[id]
		if m.userEndpoint == nil {
			continue
		}
		e := kmsg.NewStreamsGroupHeartbeatResponsePartitionsByUserEndpoint()
		e.UserEndpoint.Host, e.UserEndpoint.Port = m.userEndpoint.Host, m.userEndpoint.Port
		act, sby := parts(m.assigned.active), parts(m.assigned.standby)
		e.ActivePartitions = []kmsg.StreamsGroupHeartbeatResponsePartitionsByUserEndpointActivePartition{}
		for _, n := range slices.Sorted(maps.Keys(act)) {
			ap := kmsg.NewStreamsGroupHeartbeatResponsePartitionsByUserEndpointActivePartition()
			ap.Topic, ap.Partitions = n, slices.Sorted(slices.Values(act[n]))
			e.ActivePartitions = append(e.ActivePartitions, ap)
		}
		e.StandbyPartitions = []kmsg.StreamsGroupHeartbeatResponsePartitionsByUserEndpointStandbyPartition{}
		for _, n := range slices.Sorted(maps.Keys(sby)) {
			sp := kmsg.NewStreamsGroupHeartbeatResponsePartitionsByUserEndpointStandbyPartition()
			sp.Topic, sp.Partitions = n, slices.Sorted(slices.Values(sby[n]))
			e.StandbyPartitions = append(e.StandbyPartitions, sp)
		}
		out = append(out, e)
	}
	return out
}

// Tick removes the members whose session expired or who did not revoke in
// their rebalance timeout, and returns them (member id, and whether the
// session expired).
func (g *StreamsGroup) Tick(now time.Time) []cgFence {
	out := g.due(now)
	for _, f := range out {
		g.removeMember(now, f.member)
	}
	return out
}

// SourceTopics returns the topics the group reads, whose offsets are not
// expired or deleted while it has members.
func (g *StreamsGroup) SourceTopics() map[string]bool {
	out := map[string]bool{}
	if g.topology == nil {
		return out
	}
	for _, st := range g.topology.Subtopologies {
		for _, n := range st.SourceTopics {
			out[n] = true
		}
		for _, t := range st.RepartitionSourceTopics {
			out[t.Topic] = true
		}
	}
	if g.configured != nil {
		for _, ts := range g.configured.sources {
			for _, n := range ts {
				out[n] = true
			}
		}
	}
	return out
}

// Describe returns the group as StreamsGroupDescribe reports it.
func (g *StreamsGroup) Describe(includeDescription bool) kmsg.StreamsGroupDescribeResponseGroup {
	d := kmsg.NewStreamsGroupDescribeResponseGroup()
	d.Group = g.id
	d.State = g.StateName()
	d.Epoch = g.epoch
	d.AssignmentEpoch = g.assignmentEpoch
	assignor := "sticky"
	d.AssignorName = &assignor
	if includeDescription {
		d.TopologyDescriptionStatus = 1 // NOT_STORED
	}
	if g.topology != nil {
		t := kmsg.NewStreamsGroupDescribeResponseGroupTopology()
		t.Epoch = g.topology.Epoch
		// The topology as the members sent it, as Kafka 4.4 shows it
		// whether or not its topics exist.
		t.Subtopologies = []kmsg.StreamsGroupDescribeResponseGroupTopologySubtopology{}
		nonNil := func(ts []kmsg.TopicInfo) []kmsg.TopicInfo {
			out := []kmsg.TopicInfo{}
			for _, ti := range ts {
				if ti.Configs == nil {
					ti.Configs = []kmsg.TopicInfoConfig{}
				}
				out = append(out, ti)
			}
			return out
		}
		strs := func(s []string) []string {
			if s == nil {
				return []string{}
			}
			return slices.Clone(s)
		}
		for _, st := range g.topology.Subtopologies {
			ds := kmsg.NewStreamsGroupDescribeResponseGroupTopologySubtopology()
			ds.SubtopologyID = st.SubtopologyID
			ds.SourceTopics = strs(st.SourceTopics)
			ds.RepartitionSinkTopics = strs(st.RepartitionSinkTopics)
			ds.StateChangelogTopics = nonNil(st.StateChangelogTopics)
			ds.RepartitionSourceTopics = nonNil(st.RepartitionSourceTopics)
			t.Subtopologies = append(t.Subtopologies, ds)
		}
		d.Topology = &t
	}
	for _, id := range slices.Sorted(maps.Keys(g.members)) {
		m := g.members[id]
		dm := kmsg.NewStreamsGroupDescribeResponseGroupMember()
		dm.MemberID = m.id
		dm.MemberEpoch = m.epoch
		dm.InstanceID = m.instanceID
		dm.RackID = m.rackID
		dm.ClientID = m.clientID
		dm.ClientHost = m.clientHost
		dm.TopologyEpoch = m.topologyEpoch
		dm.ProcessID = m.processID
		if m.userEndpoint != nil {
			dm.UserEndpoint = &kmsg.StreamsGroupDescribeResponseGroupMemberUserEndpoint{Host: m.userEndpoint.Host, Port: m.userEndpoint.Port}
		}
		dm.ClientTags = []kmsg.StreamsGroupDescribeResponseGroupMemberClientTag{}
		for _, ct := range m.clientTags {
			dm.ClientTags = append(dm.ClientTags, kmsg.StreamsGroupDescribeResponseGroupMemberClientTag{Key: ct.Key, Value: ct.Value})
		}
		dm.TaskOffsets = slices.Clone(m.taskOffsets)
		if dm.TaskOffsets == nil {
			dm.TaskOffsets = []kmsg.TaskOffset{}
		}
		dm.TaskEndOffsets = slices.Clone(m.taskEndOffset)
		if dm.TaskEndOffsets == nil {
			dm.TaskEndOffsets = []kmsg.TaskOffset{}
		}
		dm.Assignment = m.assigned.toKmsg()
		tgt, ok := g.target[id]
		if !ok {
			tgt = newStreamsTasks()
		}
		dm.TargetAssignment = tgt.toKmsg()
		d.Members = append(d.Members, dm)
	}
	if d.Members == nil {
		d.Members = []kmsg.StreamsGroupDescribeResponseGroupMember{}
	}
	return d
}
