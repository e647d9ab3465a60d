package coordinator

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// TestConsumerGroupSessionsRestartAtLoad replays, at the coordinator, what
// TestKIP848RestartWithLiveMembersConfluent saw once under load: three
// stable members, the coordinator restarts (its group rebuilt from the
// records), two members heartbeat again in time and the third, whose
// client's reconnect backoff kept it away, only after its session. The
// late one is fenced at load time + session timeout, not before (Kafka's
// onLoaded reschedules every session at load), the partitions it held go
// to the others at once (it owns nothing any more: no revocation to wait
// for), and its late heartbeat is UNKNOWN_MEMBER_ID. A member back one
// tick before the deadline keeps its epoch and partitions.
func TestConsumerGroupSessionsRestartAtLoad(t *testing.T) {
	for _, late := range []bool{false, true} {
		name := "in-time"
		if late {
			name = "late"
		}
		t.Run(name, func(t *testing.T) {
			now := time.Unix(1000, 0)
			img := fakeImage{"orders": 12}
			g := NewConsumerGroup(&testCGConfig, "g", now)
			ls := newLoadState()
			apply := loadApplier(t, ls)
			a, b, c := &cgClient{id: "a"}, &cgClient{id: "b"}, &cgClient{id: "c"}
			clients := []*cgClient{a, b, c}
			for round := 0; round < 6; round++ {
				for _, cl := range clients {
					_, recs := cl.hb(t, g, now, img, "orders")
					apply(recs)
				}
			}
			for _, cl := range clients {
				if cl.owned.count() != 4 || cl.epoch != g.assignmentEpoch {
					t.Fatalf("before the restart %s owns %d at epoch %d, want 4 at %d", cl.id, cl.owned.count(), cl.epoch, g.assignmentEpoch)
				}
			}
			epoch := g.epoch
			cOwned := c.owned

			// The coordinator comes back: load at loadAt.
			loadAt := now.Add(3 * time.Second)
			r := restoreConsumerGroup(&testCGConfig, "g", ls.consumerGroups["g"], loadAt)
			if d, ok := r.NextDeadline(); !ok || !d.Equal(loadAt.Add(testCGConfig.SessionTimeout)) {
				t.Fatalf("next deadline after load %v %v, want load time + session", d, ok)
			}
			// a and b heartbeat soon; c is away until cBack.
			soon := loadAt.Add(500 * time.Millisecond)
			for _, cl := range []*cgClient{a, b} {
				if resp, _ := cl.hb(t, r, soon, img); resp.ErrorCode != 0 || cl.epoch != epoch {
					t.Fatalf("%s after the load: code %d epoch %d, want 0 and %d", cl.id, resp.ErrorCode, cl.epoch, epoch)
				}
			}
			deadline := loadAt.Add(testCGConfig.SessionTimeout)
			if f := r.due(deadline.Add(-time.Millisecond)); len(f) != 0 {
				t.Fatalf("due before c's deadline: %+v", f)
			}
			if !late {
				if resp, _ := c.hb(t, r, deadline.Add(-time.Millisecond), img); resp.ErrorCode != 0 || c.epoch != epoch || !c.owned.equal(cOwned) {
					t.Fatalf("c back just in time: code %d epoch %d owns %v, want 0, %d, %v", resp.ErrorCode, c.epoch, c.owned, epoch, cOwned)
				}
				if recs := r.Tick(deadline); len(recs) != 0 || r.epoch != epoch {
					t.Fatalf("tick at c's old deadline wrote %d records, epoch %d", len(recs), r.epoch)
				}
				return
			}
			f := r.due(deadline)
			if len(f) != 1 || f[0].member != "c" || !f[0].expired || f[0].epoch != epoch || f[0].clientID != "client-c" {
				t.Fatalf("due at c's deadline: %+v, want c's session expired", f)
			}
			if recs := r.Tick(deadline); len(recs) == 0 || r.members["c"] != nil || r.epoch != epoch+1 {
				t.Fatalf("c not fenced at its deadline: %d records, epoch %d", len(recs), r.epoch)
			}
			// a and b take c's partitions on their next heartbeats, without
			// waiting for c, which owns nothing now.
			for i := 0; i < 2; i++ {
				a.hb(t, r, deadline, img)
				b.hb(t, r, deadline, img)
			}
			if n := a.owned.count() + b.owned.count(); n != 12 || a.epoch != r.epoch || b.epoch != r.epoch {
				t.Fatalf("after c's fence a and b own %d at epochs %d/%d, want 12 at %d", n, a.epoch, b.epoch, r.epoch)
			}
			checkDisjoint(t, a, b)
			resp, _ := c.hb(t, r, deadline.Add(5*time.Second), img)
			if resp.ErrorCode != kerr.UnknownMemberID.Code {
				t.Fatalf("c's heartbeat after its fence: code %d, want UNKNOWN_MEMBER_ID", resp.ErrorCode)
			}
			// c rejoins as librdkafka does (epoch 0, same member id) and
			// gets partitions only as a and b give them up.
			c.epoch, c.owned, c.sent = 0, nil, false
			at := deadline.Add(5 * time.Second)
			if join, _ := c.hb(t, r, at, img, "orders"); join.ErrorCode != 0 {
				t.Fatalf("c rejoining: code %d", join.ErrorCode)
			}
			for round := 0; round < 6; round++ {
				for _, cl := range clients {
					if resp, _ := cl.hb(t, r, at, img); resp.ErrorCode != 0 {
						t.Fatalf("%s settling after c rejoined: code %d", cl.id, resp.ErrorCode)
					}
					checkDisjoint(t, a, b, c)
				}
			}
			for _, cl := range clients {
				if cl.owned.count() != 4 || cl.epoch != r.assignmentEpoch {
					t.Fatalf("after c rejoined %s owns %d at epoch %d, want 4 at %d", cl.id, cl.owned.count(), cl.epoch, r.assignmentEpoch)
				}
			}
		})
	}
}
