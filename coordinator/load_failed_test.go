package coordinator

import (
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestLoadFailedNotCoordinator: a partition whose load failed answers
// NOT_COORDINATOR, as Kafka 4.4's CoordinatorRuntime answers for a
// coordinator in state FAILED (a failed load, kept until a later leader
// epoch loads the partition again), not COORDINATOR_NOT_AVAILABLE: Java
// consumers before 3.9 do not retry the latter on OffsetFetch, so one
// failed load failed their group's start instead of sending them to look
// the coordinator up again.
func TestLoadFailedNotCoordinator(t *testing.T) {
	c, err := New(Options{NumPartitions: 1, InitialRebalanceDelay: -1,
		OpenLog: func(int32) (Log, error) { return nil, errors.New("disk gone") }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	if err := c.LoadPartition(0); err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	if err := c.WaitLoaded(ctx); err != nil {
		t.Fatal(err)
	}
	wantCode(t, "OffsetCommit", commitCodes(c.OffsetCommit(ctx, commitReq("g", "", -1, "orders", map[int32]int64{0: 10})))[0], kerr.NotCoordinator)
	of := kmsg.NewPtrOffsetFetchRequest()
	of.Version = 1
	of.Group = "g"
	of.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: "orders", Partitions: []int32{0}}}
	if r := c.OffsetFetch(ctx, of); len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 {
		t.Fatalf("OffsetFetch v1: %+v", r)
	} else {
		wantCode(t, "OffsetFetch v1", r.Topics[0].Partitions[0].ErrorCode, kerr.NotCoordinator)
	}
	hb := kmsg.NewPtrHeartbeatRequest()
	hb.Group, hb.MemberID = "g", "m"
	wantCode(t, "Heartbeat", c.Heartbeat(ctx, hb).ErrorCode, kerr.NotCoordinator)
}
