package coordinator

import (
	"bytes"
	"cmp"
	"slices"
	"strings"
)

// Assignment is a set of partitions by topic ID, each list sorted and
// without duplicates: a KIP-848 member's current or target assignment.
type Assignment map[[16]byte][]int32

// clone returns a deep copy.
func (a Assignment) clone() Assignment {
	out := make(Assignment, len(a))
	for id, ps := range a {
		out[id] = slices.Clone(ps)
	}
	return out
}

// count returns how many partitions a holds.
func (a Assignment) count() int {
	n := 0
	for _, ps := range a {
		n += len(ps)
	}
	return n
}

// equal tells whether a and b hold the same partitions (empty lists and
// missing topics are the same).
func (a Assignment) equal(b Assignment) bool {
	if a.count() != b.count() {
		return false
	}
	for id, ps := range a {
		if !slices.Equal(ps, b[id]) {
			return false
		}
	}
	return true
}

// has tells whether a holds partition p of topic id.
func (a Assignment) has(id [16]byte, p int32) bool {
	_, ok := slices.BinarySearch(a[id], p)
	return ok
}

// add puts partition p of topic id into a, keeping the list sorted.
func (a Assignment) add(id [16]byte, p int32) {
	ps := a[id]
	i, ok := slices.BinarySearch(ps, p)
	if !ok {
		a[id] = slices.Insert(ps, i, p)
	}
}

// topicIDs returns the topics of a with at least one partition, sorted.
func (a Assignment) topicIDs() [][16]byte {
	out := make([][16]byte, 0, len(a))
	for id, ps := range a {
		if len(ps) > 0 {
			out = append(out, id)
		}
	}
	slices.SortFunc(out, func(x, y [16]byte) int { return bytes.Compare(x[:], y[:]) })
	return out
}

// AssignorMember is one member as a server-side assignor sees it.
type AssignorMember struct {
	ID         string
	InstanceID *string
	// Topics are the IDs of the existing topics the member subscribes to.
	Topics [][16]byte
	// Current is the member's current target assignment, for stickiness.
	Current Assignment
}

// Assignor is a KIP-848 server-side partition assignor. Assign is a pure
// function: the members (sorted by ID) and the subscribed topics' partition
// counts in, a target assignment for every member out.
type Assignor interface {
	Name() string
	Assign(members []AssignorMember, partitions map[[16]byte]int32) map[string]Assignment
}

// assignorByName returns the built-in assignor of that name: "uniform" or
// "range", or Kafka's class names for them.
func assignorByName(name string) (Assignor, bool) {
	switch strings.ToLower(name) {
	case "uniform", "org.apache.kafka.coordinator.group.assignor.uniformassignor":
		return uniformAssignor{}, true
	case "range", "org.apache.kafka.coordinator.group.assignor.rangeassignor":
		return rangeAssignor{}, true
	}
	return nil, false
}

// sortedTopics returns the keys of partitions sorted by ID.
func sortedTopics(partitions map[[16]byte]int32) [][16]byte {
	ids := make([][16]byte, 0, len(partitions))
	for id := range partitions {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(x, y [16]byte) int { return bytes.Compare(x[:], y[:]) })
	return ids
}

// uniformAssignor spreads partitions as evenly as the subscriptions allow
// and moves as few as it can: every member keeps what it had and still
// subscribes to, free partitions go to the least loaded eligible member,
// and then partitions move one at a time from the most to the least loaded
// member until no eligible pair differs by more than one. It serves
// homogeneous and heterogeneous subscriptions alike (Kafka has a fast path
// for the homogeneous case; the outcome is the same balance).
type uniformAssignor struct{}

func (uniformAssignor) Name() string { return "uniform" }

type assignTP struct {
	id [16]byte
	p  int32
}

func (uniformAssignor) Assign(members []AssignorMember, partitions map[[16]byte]int32) map[string]Assignment {
	out := make(map[string]Assignment, len(members))
	if len(members) == 0 {
		return out
	}
	subscribed := make([]map[[16]byte]bool, len(members))
	for i, m := range members {
		subscribed[i] = map[[16]byte]bool{}
		for _, id := range m.Topics {
			if _, ok := partitions[id]; ok {
				subscribed[i][id] = true
			}
		}
	}
	owner := map[assignTP]int{}
	owned := make([][]assignTP, len(members))
	give := func(tp assignTP, i int) {
		owner[tp] = i
		owned[i] = append(owned[i], tp)
	}
	if homogeneous(subscribed) {
		return assignHomogeneous(members, subscribed[0], partitions)
	}
	// Keep what is still valid, first claim wins.
	for i, m := range members {
		for _, id := range m.Current.topicIDs() {
			if !subscribed[i][id] {
				continue
			}
			for _, p := range m.Current[id] {
				tp := assignTP{id, p}
				if _, taken := owner[tp]; taken || p < 0 || p >= partitions[id] {
					continue
				}
				give(tp, i)
			}
		}
	}
	// Free partitions to the least loaded eligible member.
	for _, id := range sortedTopics(partitions) {
		for p := range partitions[id] {
			tp := assignTP{id, p}
			if _, taken := owner[tp]; taken {
				continue
			}
			best := -1
			for i := range members {
				if subscribed[i][id] && (best < 0 || len(owned[i]) < len(owned[best])) {
					best = i
				}
			}
			if best >= 0 {
				give(tp, best)
			}
		}
	}
	// Balance: move from the most loaded member to the least loaded
	// eligible one while they differ by more than one.
	order := make([]int, len(members))
	for i := range order {
		order[i] = i
	}
	for range len(owner) + 1 {
		slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(len(owned[b]), len(owned[a])) })
		moved := false
		for _, from := range order {
			list := owned[from]
			for k := len(list) - 1; k >= 0 && !moved; k-- {
				tp := list[k]
				to := -1
				for i := range members {
					if i != from && subscribed[i][tp.id] && len(owned[i]) < len(list)-1 &&
						(to < 0 || len(owned[i]) < len(owned[to])) {
						to = i
					}
				}
				if to >= 0 {
					owned[from] = slices.Delete(list, k, k+1)
					give(tp, to)
					moved = true
				}
			}
			if moved {
				break
			}
		}
		if !moved {
			break
		}
	}
	for i, m := range members {
		a := Assignment{}
		for _, tp := range owned[i] {
			a.add(tp.id, tp.p)
		}
		out[m.ID] = a
	}
	return out
}

// homogeneous tells whether every member subscribes to the same topics.
func homogeneous(subscribed []map[[16]byte]bool) bool {
	for _, s := range subscribed[1:] {
		if len(s) != len(subscribed[0]) {
			return false
		}
		for id := range s {
			if !subscribed[0][id] {
				return false
			}
		}
	}
	return true
}

// assignHomogeneous is the uniform assignor when every member subscribes
// to the same topics, in O(P log P): quotas of floor(P/N) or one more (the
// extra slots going to the members that hold the most already), each
// member keeps its quota of what it had, and the rest is dealt out in
// topic and partition order.
func assignHomogeneous(members []AssignorMember, subscribed map[[16]byte]bool, partitions map[[16]byte]int32) map[string]Assignment {
	taken := map[assignTP]bool{}
	kept := make([][]assignTP, len(members))
	for i, m := range members {
		for _, id := range m.Current.topicIDs() {
			if !subscribed[id] {
				continue
			}
			for _, p := range m.Current[id] {
				tp := assignTP{id, p}
				if taken[tp] || p < 0 || p >= partitions[id] {
					continue
				}
				taken[tp] = true
				kept[i] = append(kept[i], tp)
			}
		}
	}
	total := 0
	for id := range subscribed {
		total += int(partitions[id])
	}
	base, extra := total/len(members), total%len(members)
	order := make([]int, len(members))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(len(kept[b]), len(kept[a])) })
	quota := make([]int, len(members))
	for rank, i := range order {
		quota[i] = base
		if rank < extra {
			quota[i]++
		}
	}
	for i := range members {
		if len(kept[i]) > quota[i] {
			for _, tp := range kept[i][quota[i]:] {
				delete(taken, tp)
			}
			kept[i] = kept[i][:quota[i]]
		}
	}
	next := 0
	for _, id := range sortedTopics(partitions) {
		if !subscribed[id] {
			continue
		}
		for p := range partitions[id] {
			tp := assignTP{id, p}
			if taken[tp] {
				continue
			}
			for len(kept[order[next]]) >= quota[order[next]] {
				next++
			}
			kept[order[next]] = append(kept[order[next]], tp)
		}
	}
	out := make(map[string]Assignment, len(members))
	for i, m := range members {
		a := Assignment{}
		for _, tp := range kept[i] {
			a.add(tp.id, tp.p)
		}
		out[m.ID] = a
	}
	return out
}

// rangeAssignor gives every member a contiguous range of each topic it
// subscribes to, members in ID order, the first ones one extra partition
// when the count does not divide: co-partitioned topics line up.
type rangeAssignor struct{}

func (rangeAssignor) Name() string { return "range" }

func (rangeAssignor) Assign(members []AssignorMember, partitions map[[16]byte]int32) map[string]Assignment {
	out := make(map[string]Assignment, len(members))
	for _, m := range members {
		out[m.ID] = Assignment{}
	}
	for _, id := range sortedTopics(partitions) {
		var subs []string
		for _, m := range members {
			if slices.Contains(m.Topics, id) {
				subs = append(subs, m.ID)
			}
		}
		if len(subs) == 0 {
			continue
		}
		slices.Sort(subs)
		n := int(partitions[id])
		per, extra := n/len(subs), n%len(subs)
		next := 0
		for i, mid := range subs {
			k := per
			if i < extra {
				k++
			}
			for p := next; p < next+k; p++ {
				out[mid].add(id, int32(p))
			}
			next += k
		}
	}
	return out
}
