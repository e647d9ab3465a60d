package coordinator

import (
	"cmp"
	"math"
	"slices"
)

// This file is the streams group task assignor: Kafka 4.4's StickyTaskAssignor
// (org.apache.kafka.coordinator.group.streams.assignor, read with javap -c -p of
// kafka-group-coordinator-4.4.0.jar), rewritten step by step so that samsa gives
// every member the tasks Kafka 4.4 gives it, ties included:
//
//   - Quotas: activeTasksPerMember is ceil(active tasks / members) and
//     totalTasksPerMember ceil((active + standby tasks) / members), where only
//     stateful subtopologies (with changelog topics) have standby tasks. Each time
//     a member reaches a quota exactly, the member and its tasks leave the count
//     and the quota is recomputed for the others (maybeUpdate*TasksPerMember).
//   - Active tasks, in (partition, subtopology) order: first to the member that
//     holds the task now, while under the active quota; then to the best ranked
//     standby candidate (below) with the least load, while under the quota; the
//     rest, in (subtopology, partition) order, to the process with the least load
//     (tasks per member) and there to its member with the fewest tasks.
//   - Standby tasks, stateful subtopologies only, in descending (partition,
//     subtopology) order, numStandbyReplicas copies each: the task's current active
//     owner if its process no longer holds the task, then the least loaded standby
//     candidate whose process does not hold it, each while under the total quota;
//     the copies left over, in descending (subtopology, partition) order, to the
//     least loaded process without the task and its least loaded member.
//   - Standby candidates of a task (rankStandbyCandidates): the members that hold it
//     as a standby now, then the members that reported offsets for it
//     (StreamsGroupHeartbeat TaskOffsets), each group by reported offset sum,
//     highest first (reportedOffsetSum: 0 when not reported).
//   - "Least load" among candidates (findPrevMemberWithLeastLoad): the first one,
//     replaced only by one whose process load and member task count are both
//     strictly lower.
//
// Kafka's ties fall to the iteration order of java.util.HashMaps (member ids,
// process ids, a process's members) and to java.util.PriorityQueue's binary heap;
// javaHashMapOrder and javaPriorityQueue reproduce both. The one input samsa cannot
// see is the order Kafka inserts member ids into its HashMap (its group's own member
// table), which only matters between two ids of one hash bucket: samsa inserts them
// in id order.

// streamsTaskID is one task: a subtopology's partition.
type streamsTaskID struct {
	sub string
	p   int32
}

// streamsAssignMember is one member as the streams assignor sees it.
type streamsAssignMember struct {
	id, process string
	// prev is the member's current assignment (Kafka 4.4 passes
	// StreamsGroupMember.assignedTasks, not the previous target).
	prev streamsTasks
	// offsets are the task offsets the member reported (TaskOffsets), by
	// subtopology and partition.
	offsets map[string]map[int32]int64
}

type stickyMember struct {
	id, process string
}

// stickyProcess is Kafka's ProcessState: the members of one Streams process and
// the tasks given to them.
type stickyProcess struct {
	id        string
	capacity  int // members
	taskCount int // active and standby tasks
	load      float64
	counts    map[string]int // tasks by member (memberToTaskCounts)
	order     []string       // counts' java.util.HashMap iteration order
	tasks     map[streamsTaskID]bool
	active    map[string]taskSet
	standby   map[string]taskSet
	byLoad    *javaPriorityQueue[*memberCount] // nil until needed, reset by addTask
}

type memberCount struct {
	id    string
	count int
}

func newStickyProcess(id string) *stickyProcess {
	return &stickyProcess{id: id, load: math.MaxFloat64, counts: map[string]int{}, tasks: map[streamsTaskID]bool{},
		active: map[string]taskSet{}, standby: map[string]taskSet{}}
}

func (p *stickyProcess) computeLoad() {
	if p.capacity <= 0 {
		p.load = -1
		return
	}
	p.load = float64(p.taskCount) / float64(p.capacity)
}

func (p *stickyProcess) addMember(id string) {
	p.counts[id] = 0
	p.capacity++
	p.computeLoad()
}

// addTask gives the task to a chosen member and returns its task count.
func (p *stickyProcess) addTask(member string, t streamsTaskID, active bool) int {
	n := p.addTaskInternal(member, t, active)
	p.byLoad = nil
	return n
}

func (p *stickyProcess) addTaskInternal(member string, t streamsTaskID, active bool) int {
	p.taskCount++
	p.tasks[t] = true
	sets := p.standby
	if active {
		sets = p.active
	}
	if sets[member] == nil {
		sets[member] = taskSet{}
	}
	sets[member].add(t.sub, t.p)
	p.counts[member]++
	p.computeLoad()
	return p.counts[member]
}

// addTaskToLeastLoadedMember gives the task to the member with the fewest
// tasks; -1 when the process has no member.
func (p *stickyProcess) addTaskToLeastLoadedMember(t streamsTaskID, active bool) int {
	switch len(p.counts) {
	case 0:
		return -1
	case 1:
		return p.addTaskInternal(p.order[0], t, active)
	}
	if p.byLoad == nil {
		p.byLoad = newJavaPriorityQueue(func(a, b *memberCount) int { return cmp.Compare(a.count, b.count) })
		for _, id := range p.order {
			p.byLoad.add(&memberCount{id: id, count: p.counts[id]})
		}
	}
	e, ok := p.byLoad.poll()
	if !ok {
		return -1
	}
	n := p.addTaskInternal(e.id, t, active)
	e.count = n
	p.byLoad.add(e)
	return n
}

// stickyState is Kafka's StickyTaskAssignor.LocalState.
type stickyState struct {
	standbys                 int
	totalActiveTasks         int
	totalTasks               int
	membersWithActiveCap     int
	membersWithTaskCap       int
	activeTasksPerMember     int
	totalTasksPerMember      int
	processes                map[string]*stickyProcess
	processOrder             []string // processes' java.util.HashMap iteration order
	activeTaskToPrevMember   map[streamsTaskID]stickyMember
	standbyTaskToPrevMembers map[streamsTaskID][]stickyMember
}

func computeTasksPerMember(tasks, members int) int {
	if members == 0 {
		return 0
	}
	n := tasks / members
	if tasks%members > 0 {
		n++
	}
	return n
}

func (s *stickyState) maybeUpdateActiveTasksPerMember(n int) {
	if n == s.activeTasksPerMember {
		s.membersWithActiveCap--
		s.totalActiveTasks -= n
		s.activeTasksPerMember = computeTasksPerMember(s.totalActiveTasks, s.membersWithActiveCap)
	}
}

func (s *stickyState) maybeUpdateTotalTasksPerMember(n int) {
	if n == s.totalTasksPerMember {
		s.membersWithTaskCap--
		s.totalTasks -= n
		s.totalTasksPerMember = computeTasksPerMember(s.totalTasks, s.membersWithTaskCap)
	}
}

func (s *stickyState) underActiveQuota(m stickyMember) bool {
	return s.processes[m.process].counts[m.id] < s.activeTasksPerMember
}

func (s *stickyState) underTaskQuota(m stickyMember) bool {
	return s.processes[m.process].counts[m.id] < s.totalTasksPerMember
}

// prevMemberWithLeastLoad is findPrevMemberWithLeastLoad: the first candidate,
// replaced by a later one only when both its process load and its own task
// count are lower; candidates whose process holds exclude are skipped.
func (s *stickyState) prevMemberWithLeastLoad(candidates []stickyMember, exclude *streamsTaskID) (stickyMember, bool) {
	var best stickyMember
	found := false
	minLoad, minCount := math.MaxFloat64, math.MaxFloat64
	for _, m := range candidates {
		p := s.processes[m.process]
		if exclude != nil && p.tasks[*exclude] {
			continue
		}
		load, count := p.load, float64(p.counts[m.id])
		if !found || (load < minLoad && count < minCount) {
			best, found, minLoad, minCount = m, true, load, count
		}
	}
	return best, found
}

func (s *stickyState) processQueue() *javaPriorityQueue[*stickyProcess] {
	q := newJavaPriorityQueue(func(a, b *stickyProcess) int { return cmp.Compare(a.load, b.load) })
	for _, id := range s.processOrder {
		q.add(s.processes[id])
	}
	return q
}

// assignStreamsTasks computes a target assignment of the tasks (partition
// count by subtopology) to the members as Kafka 4.4's sticky task assignor
// (see the top of this file); stateful names the subtopologies with changelog
// topics, the only ones with standby tasks, standbys copies each on other
// processes.
func assignStreamsTasks(members []streamsAssignMember, tasks map[string]int32, stateful map[string]bool, standbys int) map[string]streamsTasks {
	out := make(map[string]streamsTasks, len(members))
	if len(members) == 0 {
		return out
	}
	for _, m := range members {
		out[m.id] = newStreamsTasks()
	}
	s := &stickyState{standbys: standbys, processes: map[string]*stickyProcess{},
		activeTaskToPrevMember: map[streamsTaskID]stickyMember{}, standbyTaskToPrevMembers: map[streamsTaskID][]stickyMember{}}
	subs := slices.Sorted(func(yield func(string) bool) {
		for sub := range tasks {
			if !yield(sub) {
				return
			}
		}
	})
	for _, sub := range subs {
		n := int(tasks[sub])
		s.totalTasks += n
		s.totalActiveTasks += n
		if stateful[sub] {
			s.totalTasks += n * standbys
		}
	}
	s.membersWithActiveCap, s.membersWithTaskCap = len(members), len(members)
	s.activeTasksPerMember = computeTasksPerMember(s.totalActiveTasks, s.membersWithActiveCap)
	s.totalTasksPerMember = computeTasksPerMember(s.totalTasks, s.membersWithTaskCap)

	// The members in the order Kafka iterates GroupSpec.memberIds (a HashMap).
	byID := map[string]*streamsAssignMember{}
	var ids []string
	for i := range members {
		byID[members[i].id] = &members[i]
		ids = append(ids, members[i].id)
	}
	slices.Sort(ids)
	ids = javaHashMapOrder(ids, 0)
	type candidate struct {
		m           stickyMember
		prevStandby bool
		offsetSum   int64
	}
	cands := map[streamsTaskID][]candidate{}
	var procsSeen []string
	procMembers := map[string][]string{}
	for _, id := range ids {
		am := byID[id]
		m := stickyMember{id: id, process: am.process}
		p := s.processes[am.process]
		if p == nil {
			p = newStickyProcess(am.process)
			s.processes[am.process] = p
			procsSeen = append(procsSeen, am.process)
		}
		p.addMember(id)
		procMembers[am.process] = append(procMembers[am.process], id)
		am.prev.active.each(func(sub string, part int32) {
			s.activeTaskToPrevMember[streamsTaskID{sub, part}] = m
		})
		am.prev.standby.each(func(sub string, part int32) {
			t := streamsTaskID{sub, part}
			cands[t] = append(cands[t], candidate{m: m, prevStandby: true, offsetSum: am.offsets[sub][part]})
		})
		for sub, parts := range am.offsets {
			for part, off := range parts {
				if am.prev.standby.has(sub, part) {
					continue
				}
				t := streamsTaskID{sub, part}
				cands[t] = append(cands[t], candidate{m: m, offsetSum: off})
			}
		}
	}
	// processIdToState is a new HashMap<>(members) filled by
	// computeIfAbsent.
	procs := newJavaHashMap(len(members))
	for _, id := range procsSeen {
		procs.computeIfAbsent(id)
	}
	s.processOrder = procs.keys()
	for id, p := range s.processes {
		p.order = javaHashMapOrder(procMembers[id], 0)
	}
	// rankStandbyCandidates: current standbys first, then by offset sum,
	// highest first; a stable sort, so ties keep the members' order. (A
	// member adds at most one candidate per task, so the map's iteration
	// order above does not matter.)
	for t, cs := range cands {
		slices.SortStableFunc(cs, func(a, b candidate) int {
			if a.prevStandby != b.prevStandby {
				if a.prevStandby {
					return -1
				}
				return 1
			}
			return cmp.Compare(b.offsetSum, a.offsetSum)
		})
		ranked := make([]stickyMember, len(cs))
		for i, c := range cs {
			ranked[i] = c.m
		}
		s.standbyTaskToPrevMembers[t] = ranked
	}

	var all, statefulTasks []streamsTaskID
	for _, sub := range subs {
		for part := range tasks[sub] {
			all = append(all, streamsTaskID{sub, part})
			if stateful[sub] {
				statefulTasks = append(statefulTasks, streamsTaskID{sub, part})
			}
		}
	}
	s.assignActive(all)
	if standbys > 0 {
		s.assignStandby(statefulTasks)
	}
	for _, p := range s.processes {
		for id, ts := range p.active {
			out[id] = streamsTasks{active: ts, standby: out[id].standby, warmup: out[id].warmup}
		}
		for id, ts := range p.standby {
			out[id] = streamsTasks{active: out[id].active, standby: ts, warmup: out[id].warmup}
		}
	}
	return out
}

func byPartitionThenSub(a, b streamsTaskID) int {
	if c := cmp.Compare(a.p, b.p); c != 0 {
		return c
	}
	return cmp.Compare(a.sub, b.sub)
}

func bySubThenPartition(a, b streamsTaskID) int {
	if c := cmp.Compare(a.sub, b.sub); c != 0 {
		return c
	}
	return cmp.Compare(a.p, b.p)
}

// assignActive is StickyTaskAssignor.assignActive.
func (s *stickyState) assignActive(tasks []streamsTaskID) {
	tasks = slices.Clone(tasks)
	slices.SortStableFunc(tasks, byPartitionThenSub)
	give := func(p *stickyProcess, member string, t streamsTaskID) {
		n := p.addTask(member, t, true)
		s.maybeUpdateActiveTasksPerMember(n)
		s.maybeUpdateTotalTasksPerMember(n)
	}
	// The current owner keeps the task while under the quota.
	tasks = slices.DeleteFunc(tasks, func(t streamsTaskID) bool {
		m, ok := s.activeTaskToPrevMember[t]
		if !ok || !s.underActiveQuota(m) {
			return false
		}
		give(s.processes[m.process], m.id, t)
		return true
	})
	// Then the least loaded of its ranked standby candidates.
	tasks = slices.DeleteFunc(tasks, func(t streamsTaskID) bool {
		m, ok := s.prevMemberWithLeastLoad(s.standbyTaskToPrevMembers[t], nil)
		if !ok || !s.underActiveQuota(m) {
			return false
		}
		give(s.processes[m.process], m.id, t)
		return true
	})
	// The rest to the least loaded process and its least loaded member.
	slices.SortStableFunc(tasks, bySubThenPartition)
	q := s.processQueue()
	for _, t := range tasks {
		p, ok := q.poll()
		if !ok {
			return // no process: Kafka throws; there is always one here
		}
		if n := p.addTaskToLeastLoadedMember(t, true); n != -1 {
			s.maybeUpdateActiveTasksPerMember(n)
			s.maybeUpdateTotalTasksPerMember(n)
		}
		q.add(p)
	}
}

// assignStandby is StickyTaskAssignor.assignStandby.
func (s *stickyState) assignStandby(tasks []streamsTaskID) {
	tasks = slices.Clone(tasks)
	slices.SortStableFunc(tasks, func(a, b streamsTaskID) int { return byPartitionThenSub(b, a) })
	type toAssign struct {
		t         streamsTaskID
		remaining int
	}
	var left []toAssign
	for _, t := range tasks {
		for i := range s.standbys {
			if m, ok := s.activeTaskToPrevMember[t]; ok {
				p := s.processes[m.process]
				if !p.tasks[t] && s.underTaskQuota(m) {
					s.maybeUpdateTotalTasksPerMember(p.addTask(m.id, t, false))
					continue
				}
			}
			if cs := s.standbyTaskToPrevMembers[t]; len(cs) > 0 {
				if m, ok := s.prevMemberWithLeastLoad(cs, &t); ok && s.underTaskQuota(m) {
					s.maybeUpdateTotalTasksPerMember(s.processes[m.process].addTask(m.id, t, false))
					continue
				}
			}
			left = append(left, toAssign{t, s.standbys - i})
			break
		}
	}
	slices.SortStableFunc(left, func(a, b toAssign) int { return bySubThenPartition(b.t, a.t) })
	q := s.processQueue()
	for _, l := range left {
		for range l.remaining {
			if !s.assignStandbyToMemberWithLeastLoad(q, l.t) {
				break // fewer processes without the task than copies: Kafka logs a warning
			}
		}
	}
}

// assignStandbyToMemberWithLeastLoad gives a copy of t to the least loaded
// process that does not hold it yet, taking processes off the queue until
// one fits and putting them back afterwards, as Kafka's recursion does.
func (s *stickyState) assignStandbyToMemberWithLeastLoad(q *javaPriorityQueue[*stickyProcess], t streamsTaskID) bool {
	p, ok := q.poll()
	if !ok {
		return false
	}
	found := false
	if !p.tasks[t] {
		if n := p.addTaskToLeastLoadedMember(t, false); n != -1 {
			found = true
			s.maybeUpdateTotalTasksPerMember(n)
		}
	} else if q.len() > 0 {
		found = s.assignStandbyToMemberWithLeastLoad(q, t)
	}
	q.add(p)
	return found
}

// javaPriorityQueue is java.util.PriorityQueue's binary heap (offer's siftUp,
// poll's siftDown), so that equal elements come out in the order Kafka's do.
type javaPriorityQueue[T any] struct {
	q   []T
	cmp func(a, b T) int
}

func newJavaPriorityQueue[T any](cmp func(a, b T) int) *javaPriorityQueue[T] {
	return &javaPriorityQueue[T]{cmp: cmp}
}

func (h *javaPriorityQueue[T]) len() int { return len(h.q) }

func (h *javaPriorityQueue[T]) add(x T) {
	k := len(h.q)
	h.q = append(h.q, x)
	for k > 0 {
		parent := (k - 1) / 2
		e := h.q[parent]
		if h.cmp(x, e) >= 0 {
			break
		}
		h.q[k] = e
		k = parent
	}
	h.q[k] = x
}

func (h *javaPriorityQueue[T]) poll() (T, bool) {
	var zero T
	if len(h.q) == 0 {
		return zero, false
	}
	result := h.q[0]
	n := len(h.q) - 1
	x := h.q[n]
	h.q[n] = zero
	h.q = h.q[:n]
	if n > 0 {
		k, half := 0, n/2
		for k < half {
			child := 2*k + 1
			c := h.q[child]
			if right := child + 1; right < n && h.cmp(c, h.q[right]) > 0 {
				child = right
				c = h.q[child]
			}
			if h.cmp(x, c) <= 0 {
				break
			}
			h.q[k] = c
			k = child
		}
		h.q[k] = x
	}
	return result, true
}
