package coordinator

import (
	"cmp"
	"slices"
)

// assignShare is samsa's share assignor, with the promises of Kafka's
// "simple" share assignor: every partition of a subscribed topic goes to
// at least one member subscribing to it; when a topic has more
// subscribers than partitions, members share partitions; loads are
// balanced per topic (counts differ by at most one). It is sticky: a
// member keeps the partitions it had in prev as far as balance allows,
// so a joining or leaving member moves few partitions (a moved
// share-partition costs its old member's in-flight records a lock
// timeout or release before others get them).
//
// Per topic, with n partitions and s subscribers (sorted by id):
//   - s <= n: each subscriber gets n/s partitions, n%s of them one more
//     (those that held the most before, then the least loaded with other
//     topics); first each keeps what it held up to its quota, then the
//     rest go out in order.
//   - s > n: each subscriber gets one partition, each partition s/n or
//     s/n+1 subscribers; a subscriber keeps its previous partition while
//     that one has fewer than s/n, the others go to the least shared.
func assignShare(members []string, subs map[string][][16]byte, parts map[[16]byte][]int32, prev map[string]Assignment) map[string]Assignment {
	out := make(map[string]Assignment, len(members))
	for _, m := range members {
		out[m] = Assignment{}
	}
	load := map[string]int{} // partitions given so far, across topics
	subscribers := map[[16]byte][]string{}
	for _, m := range members {
		for _, t := range subs[m] {
			subscribers[t] = append(subscribers[t], m)
		}
	}
	for _, tid := range sortedIDs(parts) {
		ss, ps := subscribers[tid], parts[tid]
		if len(ss) == 0 || len(ps) == 0 {
			continue
		}
		had := func(m string) []int32 {
			var keep []int32
			for _, p := range prev[m][tid] {
				if _, ok := slices.BinarySearch(ps, p); ok {
					keep = append(keep, p)
				}
			}
			return keep
		}
		if len(ss) <= len(ps) {
			assignSpread(out, tid, ss, ps, had, load)
		} else {
			assignShared(out, tid, ss, ps, had)
		}
		for _, m := range ss {
			load[m] = out[m].count()
		}
	}
	return out
}

// assignSpread gives the partitions ps of one topic to its subscribers ss
// (no more subscribers than partitions), each partition to one.
func assignSpread(out map[string]Assignment, tid [16]byte, ss []string, ps []int32, had func(string) []int32, load map[string]int) {
	base, extra := len(ps)/len(ss), len(ps)%len(ss)
	// The extra partitions go to the members that held the most of this
	// topic, then to the least loaded with other topics' partitions.
	order := slices.Clone(ss)
	slices.SortStableFunc(order, func(a, b string) int {
		if c := cmp.Compare(len(had(b)), len(had(a))); c != 0 {
			return c
		}
		return cmp.Compare(load[a], load[b])
	})
	quota := make(map[string]int, len(ss))
	for i, m := range order {
		quota[m] = base
		if i < extra {
			quota[m]++
		}
	}
	taken := map[int32]bool{}
	for _, m := range ss {
		for _, p := range had(m) {
			if quota[m] == 0 || taken[p] {
				continue
			}
			out[m].add(tid, p)
			taken[p] = true
			quota[m]--
		}
	}
	i := 0
	for _, p := range ps {
		if taken[p] {
			continue
		}
		for quota[ss[i%len(ss)]] == 0 {
			i++
		}
		m := ss[i%len(ss)]
		out[m].add(tid, p)
		quota[m]--
	}
}

// assignShared gives each subscriber ss of one topic one of its partitions
// ps (more subscribers than partitions), spreading them evenly.
func assignShared(out map[string]Assignment, tid [16]byte, ss []string, ps []int32, had func(string) []int32) {
	floor := len(ss) / len(ps)
	count := make(map[int32]int, len(ps))
	var rest []string
	for _, m := range ss {
		kept := false
		for _, p := range had(m) {
			if count[p] < floor {
				out[m].add(tid, p)
				count[p]++
				kept = true
				break
			}
		}
		if !kept {
			rest = append(rest, m)
		}
	}
	for _, m := range rest {
		best := ps[0]
		for _, p := range ps[1:] {
			if count[p] < count[best] {
				best = p
			}
		}
		out[m].add(tid, best)
		count[best]++
	}
}
