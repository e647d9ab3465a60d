package coordinator

import (
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// taskSet is a set of Kafka Streams tasks: partitions by subtopology id,
// each slice sorted and without duplicates.
type taskSet map[string][]int32

func (t taskSet) clone() taskSet {
	out := make(taskSet, len(t))
	for s, ps := range t {
		out[s] = slices.Clone(ps)
	}
	return out
}

func (t taskSet) has(sub string, p int32) bool {
	_, ok := slices.BinarySearch(t[sub], p)
	return ok
}

func (t taskSet) add(sub string, p int32) {
	ps := t[sub]
	i, ok := slices.BinarySearch(ps, p)
	if !ok {
		t[sub] = slices.Insert(ps, i, p)
	}
}

func (t taskSet) count() int {
	n := 0
	for _, ps := range t {
		n += len(ps)
	}
	return n
}

func (t taskSet) equal(o taskSet) bool {
	if t.count() != o.count() {
		return false
	}
	for s, ps := range t {
		if len(ps) > 0 && !slices.Equal(ps, o[s]) {
			return false
		}
	}
	return true
}

// each calls f for every task in subtopology then partition order.
func (t taskSet) each(f func(sub string, p int32)) {
	for _, s := range slices.Sorted(maps.Keys(t)) {
		for _, p := range t[s] {
			f(s, p)
		}
	}
}

// toKmsg returns the tasks as the protocol lists them, by subtopology id.
func (t taskSet) toKmsg() []kmsg.TaskIDs {
	out := []kmsg.TaskIDs{}
	for _, s := range slices.Sorted(maps.Keys(t)) {
		if len(t[s]) == 0 {
			continue
		}
		ti := kmsg.NewTaskIDs()
		ti.SubtopologyID = s
		ti.Partitions = slices.Clone(t[s])
		out = append(out, ti)
	}
	return out
}

// taskSetFrom reads tasks as a member reports them.
func taskSetFrom(ids []kmsg.TaskIDs) taskSet {
	out := taskSet{}
	for _, ti := range ids {
		for _, p := range ti.Partitions {
			out.add(ti.SubtopologyID, p)
		}
	}
	return out
}

// streamsTasks is a member's tasks of the three kinds.
type streamsTasks struct {
	active, standby, warmup taskSet
}

func newStreamsTasks() streamsTasks {
	return streamsTasks{active: taskSet{}, standby: taskSet{}, warmup: taskSet{}}
}

func (a streamsTasks) clone() streamsTasks {
	return streamsTasks{active: a.active.clone(), standby: a.standby.clone(), warmup: a.warmup.clone()}
}

func (a streamsTasks) equal(o streamsTasks) bool {
	return a.active.equal(o.active) && a.standby.equal(o.standby) && a.warmup.equal(o.warmup)
}

func (a streamsTasks) toKmsg() kmsg.StreamsAssignment {
	out := kmsg.NewStreamsAssignment()
	out.ActiveTasks = a.active.toKmsg()
	out.StandbyTasks = a.standby.toKmsg()
	out.WarmupTasks = a.warmup.toKmsg()
	return out
}

// streamsAssignMember is one member as the streams assignor sees it.
type streamsAssignMember struct {
	id, process string
	prev        streamsTasks // the member's previous target
}

// assignStreamsTasks computes a target assignment of the tasks (partition
// count by subtopology) to the members, with the observable properties of
// Kafka's sticky task assignor: each active task goes to exactly one
// member; members' active task counts differ by at most one; a task stays
// with its previous owner when that keeps the balance; new tasks go to the
// least loaded process, then its least loaded member, so that processes
// with as many members get as many tasks. standbys copies of each task go
// to members of other processes (never the active one's), as many as there
// are such processes, preferring the task's previous active and standby
// owners while they hold fewer than their share of all tasks.
func assignStreamsTasks(members []streamsAssignMember, tasks map[string]int32, standbys int) map[string]streamsTasks {
	out := make(map[string]streamsTasks, len(members))
	if len(members) == 0 {
		return out
	}
	slices.SortFunc(members, func(a, b streamsAssignMember) int {
		if a.id < b.id {
			return -1
		}
		if a.id > b.id {
			return 1
		}
		return 0
	})
	byID := map[string]*streamsAssignMember{}
	load := map[string]int{}        // active tasks per member
	procLoad := map[string]int{}    // active tasks per process
	procMembers := map[string]int{} // members per process
	for i := range members {
		m := &members[i]
		byID[m.id] = m
		out[m.id] = newStreamsTasks()
		procMembers[m.process]++
	}
	var all []struct {
		sub string
		p   int32
	}
	for _, s := range slices.Sorted(maps.Keys(tasks)) {
		for p := range tasks[s] {
			all = append(all, struct {
				sub string
				p   int32
			}{s, p})
		}
	}
	total := len(all)
	quota := (total + len(members) - 1) / len(members) // most tasks a member may keep
	owner := map[string]string{}                       // "sub/p" -> member
	key := func(s string, p int32) string { return s + "/" + itoa32(p) }
	give := func(id, s string, p int32) {
		out[id].active.add(s, p)
		load[id]++
		procLoad[byID[id].process]++
		owner[key(s, p)] = id
	}
	// Sticky: previous owners keep what fits in the quota, in task
	// order so that the result does not depend on map order.
	for _, t := range all {
		for _, m := range members {
			if m.prev.active.has(t.sub, t.p) && load[m.id] < quota {
				give(m.id, t.sub, t.p)
				break
			}
		}
	}
	// The rest to the least loaded member of the least loaded process
	// (load per member of the process).
	for _, t := range all {
		if _, ok := owner[key(t.sub, t.p)]; ok {
			continue
		}
		best := ""
		for _, m := range members {
			if best == "" {
				best = m.id
				continue
			}
			b := byID[best]
			// Compare process loads per member, then member loads.
			lm := procLoad[m.process] * procMembers[b.process]
			lb := procLoad[b.process] * procMembers[m.process]
			if load[m.id] < load[best] || (load[m.id] == load[best] && lm < lb) {
				best = m.id
			}
		}
		give(best, t.sub, t.p)
	}
	// Members whose load is more than one above another's (sticky
	// keeps can do that when members join): move tasks from the most to
	// the least loaded until balanced.
	for range total {
		hi, lo := "", ""
		for _, m := range members {
			if hi == "" || load[m.id] > load[hi] {
				hi = m.id
			}
			if lo == "" || load[m.id] < load[lo] {
				lo = m.id
			}
		}
		if load[hi]-load[lo] <= 1 {
			break
		}
		var moved bool
		out[hi].active.each(func(s string, p int32) {
			if moved {
				return
			}
			moved = true
			ps := out[hi].active[s]
			i, _ := slices.BinarySearch(ps, p)
			out[hi].active[s] = slices.Delete(ps, i, i+1)
			load[hi]--
			procLoad[byID[hi].process]--
			give(lo, s, p)
		})
	}
	if standbys <= 0 {
		return out
	}
	// Standby tasks, as Kafka's sticky assignor places them: a task's
	// previous active owner (whose process no longer holds the task) and
	// then its least loaded previous standby owner keep a copy only while
	// their total of active and standby tasks is under the per-member
	// quota of all tasks; the other copies go to the least loaded process
	// (tasks per member) without the task, to its least loaded member.
	tload := maps.Clone(load) // active plus standby tasks per member
	ptload := maps.Clone(procLoad)
	tquota := (total*(1+standbys) + len(members) - 1) / len(members)
	holds := func(proc, s string, p int32) bool {
		for _, m := range members {
			if m.process == proc && (out[m.id].active.has(s, p) || out[m.id].standby.has(s, p)) {
				return true
			}
		}
		return false
	}
	giveStandby := func(id, s string, p int32) {
		out[id].standby.add(s, p)
		tload[id]++
		ptload[byID[id].process]++
	}
	type leftover struct {
		sub string
		p   int32
		n   int
	}
	var left []leftover
	for _, t := range all {
		for i := range standbys {
			placed := false
			for _, m := range members {
				if m.prev.active.has(t.sub, t.p) && !holds(m.process, t.sub, t.p) && tload[m.id] < tquota {
					giveStandby(m.id, t.sub, t.p)
					placed = true
					break
				}
			}
			if !placed {
				best := ""
				for _, m := range members {
					if !m.prev.standby.has(t.sub, t.p) || holds(m.process, t.sub, t.p) {
						continue
					}
					if best == "" || tload[m.id] < tload[best] {
						best = m.id
					}
				}
				if best != "" && tload[best] < tquota {
					giveStandby(best, t.sub, t.p)
					placed = true
				}
			}
			if !placed {
				left = append(left, leftover{t.sub, t.p, standbys - i})
				break
			}
		}
	}
	for _, l := range left {
		for range l.n {
			best := ""
			for _, m := range members {
				if holds(m.process, l.sub, l.p) {
					continue
				}
				if best == "" {
					best = m.id
					continue
				}
				b := byID[best]
				// Least loaded process (tasks per member), then member.
				lm := ptload[m.process] * procMembers[b.process]
				lb := ptload[b.process] * procMembers[m.process]
				if lm < lb || (lm == lb && tload[m.id] < tload[best]) {
					best = m.id
				}
			}
			if best == "" {
				break // fewer other processes than standbys
			}
			giveStandby(best, l.sub, l.p)
		}
	}
	return out
}

func itoa32(v int32) string {
	if v == 0 {
		return "0"
	}
	neg := v < 0
	var b [12]byte
	i := len(b)
	u := int64(v)
	if neg {
		u = -u
	}
	for u > 0 {
		i--
		b[i] = byte('0' + u%10)
		u /= 10
	}
	if neg {
		i--
		b[i] = '-'
	}
	return string(b[i:])
}
