package quorum

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

// TestStatus: the leader reports every voter's log end offset from their
// answers (DescribeQuorum). Followers report ErrNotLeader. An isolated
// voter's log end offset stays where it was while the others follow the
// leader's log end.
func TestStatus(t *testing.T) {
	tc := newTestCluster(t, 3, testTimeout, nil)
	tc.mustRegister(1)
	l := tc.leader()
	for _, n := range tc.nodes {
		if n != l {
			if _, err := n.q.Status(); !errors.Is(err, ErrNotLeader) {
				t.Fatalf("Status on follower %d: %v, want ErrNotLeader", n.id, err)
			}
		}
	}
	var st Status
	waitFor(t, 30*time.Second, "every voter caught up", func() bool {
		var err error
		if st, err = l.q.Status(); err != nil || len(st.Voters) != 3 {
			return false
		}
		for _, v := range st.Voters {
			if v.LogEndOffset != int64(l.q.raft.LastIndex()) || v.LastCaughtUp.IsZero() {
				return false
			}
		}
		return st.HighWatermark == int64(l.q.raft.LastIndex())
	})
	if st.LeaderID != l.id || st.LeaderEpoch < 1 || len(st.Observers) != 0 {
		t.Fatalf("status %+v", st)
	}
	var cut int32
	for id := range tc.nodes {
		if id != l.id {
			cut = id
			break
		}
	}
	tc.isolate(cut)
	before := int64(l.q.raft.LastIndex())
	for i := range 3 {
		tc.mustCreate(fmt.Sprintf("s%d", i), l.id, 6-l.id-cut)
	}
	l = tc.leader(l.id, 6-l.id-cut) // may have moved to the other connected voter
	waitFor(t, 30*time.Second, "the connected voters to follow and the cut one to stay behind", func() bool {
		var err error
		if st, err = l.q.Status(); err != nil || len(st.Voters) != 3 {
			return false
		}
		last := int64(l.q.raft.LastIndex())
		for _, v := range st.Voters {
			switch {
			case v.ID == cut && v.LogEndOffset > before:
				t.Fatalf("isolated voter %d reported %+v (log end before the cut %d)", cut, v, before)
			case v.ID != cut && v.LogEndOffset != last:
				return false
			}
		}
		return last > before
	})
}
