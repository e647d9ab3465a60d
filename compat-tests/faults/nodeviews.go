package faults

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// partitionView is one node's idea of a partition's leader.
type partitionView struct {
	leader, epoch int32
}

// nodeView asks the node at addr itself (not whichever broker a client
// picks) for the topic's metadata: what that node tells clients about
// each partition's leader and leader epoch.
func nodeView(ctx context.Context, addr, topic string) (map[int32]partitionView, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RequestRetries(0),
		kgo.DialTimeout(2*time.Second), kgo.RequestTimeoutOverhead(3*time.Second))
	if err != nil {
		return nil, fmt.Errorf("faults: node view: %w", err)
	}
	defer cl.Close()
	req := kmsg.NewPtrMetadataRequest()
	t := kmsg.NewMetadataRequestTopic()
	t.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, t)
	seeds := cl.SeedBrokers()
	if len(seeds) != 1 {
		return nil, fmt.Errorf("faults: node view of %s: %d seed brokers", addr, len(seeds))
	}
	r, err := seeds[0].Request(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("faults: node view of %s: %w", addr, err)
	}
	out := map[int32]partitionView{}
	for _, t := range r.(*kmsg.MetadataResponse).Topics {
		for _, p := range t.Partitions {
			if p.ErrorCode == 0 {
				out[p.Partition] = partitionView{p.Leader, p.LeaderEpoch}
			}
		}
	}
	return out, nil
}

// staleViews compares the nodes' views (by node id) and describes, per
// node, the partitions for which it names an older leader epoch than
// another node does: a node whose metadata has not caught up with the
// quorum, which still tells clients it leads a partition it lost
// (finding 16 of docs/DURABILITY.md: a healed node's image stayed stale
// for 4.4 s after the heal, and a member that took its metadata reset
// its committed offset). "" when every node agrees.
func staleViews(views map[int]map[int32]partitionView) string {
	newest := map[int32]partitionView{}
	for _, v := range views {
		for p, pv := range v {
			if n, ok := newest[p]; !ok || pv.epoch > n.epoch {
				newest[p] = pv
			}
		}
	}
	ids := make([]int, 0, len(views))
	for id := range views {
		ids = append(ids, id)
	}
	sort.Ints(ids)
	var b strings.Builder
	for _, id := range ids {
		ps := make([]int32, 0, len(views[id]))
		for p := range views[id] {
			ps = append(ps, p)
		}
		sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
		for _, p := range ps {
			pv, n := views[id][p], newest[p]
			if pv.epoch < n.epoch {
				fmt.Fprintf(&b, " node %d: p%d leader=%d epoch=%d (newest: leader=%d epoch=%d);", id, p, pv.leader, pv.epoch, n.leader, n.epoch)
			}
		}
	}
	return strings.TrimSuffix(b.String(), ";")
}

// staleViewsBound bounds how long recovery waits for every node's own
// metadata to agree.
const staleViewsBound = 10 * time.Second

// logStaleViews asks every running node for its own view of the workload
// topic and, when some node still names an older leader epoch than
// another (recovery's isrFull asks one broker, which may not be the one
// behind), waits until they agree, at most staleViewsBound, and logs how
// long that took: how long a healed node went on telling clients it led
// partitions it had lost (finding 16). It only logs; the workloads and
// checkers judge the outcome.
func (nm *Nemesis) logStaleViews(ctx context.Context) {
	begin := time.Now()
	first := nm.staleNow(ctx)
	if first == "" {
		return
	}
	last := first
	err := pollUntil(ctx, staleViewsBound, func(ctx context.Context) (bool, error) {
		last = nm.staleNow(ctx)
		return last == "", nil
	})
	if err != nil {
		nm.logf("nemesis: after recovery, nodes still behind the quorum's leader epochs %v later:%s (first seen:%s)",
			staleViewsBound, last, first)
		return
	}
	nm.logf("nemesis: after recovery, nodes behind the quorum's leader epochs caught up in %v:%s",
		time.Since(begin).Round(100*time.Millisecond), first)
}

// staleNow is staleViews of the running nodes' own answers now.
func (nm *Nemesis) staleNow(ctx context.Context) string {
	views := map[int]map[int32]partitionView{}
	for _, n := range nm.C.Nodes {
		if !n.Running() {
			continue
		}
		vctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		v, err := nodeView(vctx, n.Addr, nm.Topic)
		cancel()
		if err != nil {
			continue
		}
		views[n.ID] = v
	}
	return staleViews(views)
}
