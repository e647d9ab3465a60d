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
