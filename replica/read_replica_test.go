package replica

import (
	"errors"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

func TestParseReplicaSelector(t *testing.T) {
	for _, tc := range []struct {
		class string
		want  Selector
		err   bool
	}{
		{"", SelectorNone, false},
		{"org.apache.kafka.common.replica.LeaderSelector", SelectorLeader, false},
		{"org.apache.kafka.common.replica.RackAwareReplicaSelector", SelectorRackAware, false},
		{"RackAwareReplicaSelector", SelectorNone, true},
		{"com.example.MySelector", SelectorNone, true},
	} {
		got, err := ParseReplicaSelector(tc.class)
		if got != tc.want || (err != nil) != tc.err || (err != nil && !errors.Is(err, ErrUnknownSelector)) {
			t.Errorf("ParseReplicaSelector(%q) = %v, %v; want %v, error %v", tc.class, got, err, tc.want, tc.err)
		}
	}
}

// TestSelectReadReplica is RackAwareReplicaSelector's rule: the leader
// unless the client names a rack the leader is not in and some candidate
// is; then the most caught-up candidate of that rack (log end offset, then
// the shortest time since caught up, then the highest id).
func TestSelectReadReplica(t *testing.T) {
	leader := ReplicaView{ID: 1, Rack: "r1", LogEndOffset: 100}
	f := func(id int32, rack string, leo int64, since time.Duration) ReplicaView {
		return ReplicaView{ID: id, Rack: rack, LogEndOffset: leo, SinceCaughtUp: since}
	}
	for _, tc := range []struct {
		name      string
		sel       Selector
		rack      string
		leader    ReplicaView
		followers []ReplicaView
		want      int32
	}{
		{"no selector", SelectorNone, "r2", leader, []ReplicaView{f(2, "r2", 100, 0)}, 1},
		{"leader selector", SelectorLeader, "r2", leader, []ReplicaView{f(2, "r2", 100, 0)}, 1},
		{"no client rack", SelectorRackAware, "", leader, []ReplicaView{f(2, "", 100, 0)}, 1},
		{"same rack follower", SelectorRackAware, "r2", leader, []ReplicaView{f(2, "r2", 90, 0), f(3, "r3", 100, 0)}, 2},
		{"leader in the rack", SelectorRackAware, "r1", leader, []ReplicaView{f(2, "r1", 100, 0)}, 1},
		{"no replica in the rack", SelectorRackAware, "r9", leader, []ReplicaView{f(2, "r2", 100, 0), f(3, "r3", 100, 0)}, 1},
		{"no candidates", SelectorRackAware, "r2", leader, nil, 1},
		{"follower without rack", SelectorRackAware, "r2", leader, []ReplicaView{f(2, "", 100, 0)}, 1},
		{"higher log end wins", SelectorRackAware, "r2", leader, []ReplicaView{f(3, "r2", 90, 0), f(2, "r2", 95, time.Second)}, 2},
		{"more recently caught up wins", SelectorRackAware, "r2", leader, []ReplicaView{f(2, "r2", 95, time.Second), f(3, "r2", 95, 2*time.Second)}, 2},
		{"higher id breaks the tie", SelectorRackAware, "r2", leader, []ReplicaView{f(3, "r2", 95, time.Second), f(2, "r2", 95, time.Second)}, 3},
		{"leader without rack", SelectorRackAware, "r2", ReplicaView{ID: 1, LogEndOffset: 100}, []ReplicaView{f(2, "r2", 100, 0)}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := SelectReadReplica(tc.sel, tc.rack, tc.leader, tc.followers); got != tc.want {
				t.Fatalf("got %d, want %d", got, tc.want)
			}
			// The order of the candidates does not matter.
			rev := slices.Clone(tc.followers)
			slices.Reverse(rev)
			if got := SelectReadReplica(tc.sel, tc.rack, tc.leader, rev); got != tc.want {
				t.Fatalf("reversed candidates: got %d, want %d", got, tc.want)
			}
		})
	}
}

// TestPreferredReadReplica: the leader's candidates are the followers in
// the ISR whose log holds the fetch offset and whose broker is known
// (registered, unfenced); a follower that falls out of the ISR is no
// longer chosen, so a consumer that comes back to the leader stays there.
func TestPreferredReadReplica(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t, 1)
		synctest.Wait()
		c.produce(1, -1, 5)
		synctest.Wait()
		racks := map[int32]string{1: "r1", 2: "r2", 3: "r3"}
		brokerOf := func(id int32) (string, bool) { r, ok := racks[id]; return r, ok }
		ask := func(sel Selector, rack string, offset int64) int32 {
			t.Helper()
			id, ok := c.part(1).PreferredReadReplica(sel, rack, offset, brokerOf)
			if !ok {
				return -1
			}
			return id
		}
		if got := ask(SelectorRackAware, "r2", 0); got != 2 {
			t.Fatalf("client in r2 at 0: sent to %d, want 2", got)
		}
		if got := ask(SelectorRackAware, "r3", 5); got != 3 {
			t.Fatalf("client in r3 at the log end: sent to %d, want 3", got)
		}
		for _, tc := range []struct {
			name   string
			sel    Selector
			rack   string
			offset int64
		}{
			{"leader's rack", SelectorRackAware, "r1", 0},
			{"unknown rack", SelectorRackAware, "r9", 0},
			{"no rack", SelectorRackAware, "", 0},
			{"no selector", SelectorNone, "r2", 0},
			{"leader selector", SelectorLeader, "r2", 0},
			{"beyond the followers' log end", SelectorRackAware, "r2", 6},
		} {
			if got := ask(tc.sel, tc.rack, tc.offset); got != -1 {
				t.Errorf("%s: sent to %d, want the leader", tc.name, got)
			}
		}
		// A follower only the leader would ask: not a leader, no answer.
		if id, ok := c.part(2).PreferredReadReplica(SelectorRackAware, "r3", 0, brokerOf); ok {
			t.Fatalf("follower 2 sent a consumer to %d", id)
		}
		// A fenced (unknown) broker is not named to clients.
		delete(racks, 2)
		if got := ask(SelectorRackAware, "r2", 0); got != -1 {
			t.Fatalf("unknown broker 2 chosen")
		}
		racks[2] = "r2"
		// A follower whose log starts after the fetch offset (its own
		// retention) is not a candidate (Kafka checks the follower's
		// log start offset from its fetches).
		p := c.part(1)
		p.mu.Lock()
		f := p.mu.followers[2]
		f.LogStartOffset = 3
		p.mu.followers[2] = f
		p.mu.Unlock()
		if got := ask(SelectorRackAware, "r2", 2); got != -1 {
			t.Fatalf("follower 2 (log start 3) chosen for offset 2")
		}
		if got := ask(SelectorRackAware, "r2", 3); got != 2 {
			t.Fatalf("follower 2 (log start 3) not chosen for offset 3: %d", got)
		}

		// Two followers in the consumer's rack: the most caught up.
		racks[3] = "r2"
		c.net.setDown(3, true)
		c.produce(1, 1, 2) // node 2 fetches them, node 3 cannot
		synctest.Wait()
		if c.leo(2) != 7 || c.leo(3) != 5 {
			t.Fatalf("LEOs: node 2 %d, node 3 %d", c.leo(2), c.leo(3))
		}
		if got := ask(SelectorRackAware, "r2", 5); got != 2 {
			t.Fatalf("two followers in r2: sent to %d, want 2 (log end 7 over 5)", got)
		}
		// Node 2 falls out of the ISR too: its consumer goes back to the
		// leader, although node 2 still holds the offset.
		c.net.setDown(2, true)
		time.Sleep(16 * time.Second) // replica.lag.time.max.ms (fake clock)
		synctest.Wait()
		if isr := c.image().ISR; !slices.Equal(isr, []int32{1}) {
			t.Fatalf("image ISR %v, want [1]", isr)
		}
		if got := ask(SelectorRackAware, "r2", 5); got != -1 {
			t.Fatalf("followers out of the ISR: sent to %d, want the leader", got)
		}
		// Back in sync: chosen again.
		c.net.setDown(2, false)
		c.settle()
		if isr := c.image().ISR; !slices.Contains(isr, 2) {
			t.Fatalf("image ISR %v without 2 after it caught up", isr)
		}
		if got := ask(SelectorRackAware, "r2", 7); got != 2 {
			t.Fatalf("follower 2 back in the ISR: sent to %d, want 2", got)
		}
	})
}

// TestCheckReplica: a consumer's fetch may read any local replica (Fetch
// v11+) with the leader epoch checks of CheckLeader; a node that stopped
// hosting the partition answers NOT_LEADER_OR_FOLLOWER.
func TestCheckReplica(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t, 1)
		synctest.Wait()
		epoch := c.image().LeaderEpoch
		for id := int32(1); id <= 3; id++ {
			p := c.part(id)
			for _, tc := range []struct {
				epoch int32
				want  int16
			}{
				{-1, 0},
				{epoch, 0},
				{epoch + 1, kerr.UnknownLeaderEpoch.Code},
			} {
				if got := p.CheckReplica(tc.epoch); got != tc.want {
					t.Errorf("node %d, epoch %d: %d, want %d", id, tc.epoch, got, tc.want)
				}
			}
			if epoch > 0 {
				if got := p.CheckReplica(epoch - 1); got != kerr.FencedLeaderEpoch.Code {
					t.Errorf("node %d, old epoch: %d", id, got)
				}
			}
		}
		if got := c.part(2).CheckLeader(-1); got != kerr.NotLeaderForPartition.Code {
			t.Fatalf("follower CheckLeader %d", got)
		}
		c.part(3).stop()
		if got := c.part(3).CheckReplica(-1); got != kerr.NotLeaderForPartition.Code {
			t.Fatalf("stopped replica: %d, want NOT_LEADER_OR_FOLLOWER", got)
		}
	})
}
