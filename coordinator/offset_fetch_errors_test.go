package coordinator

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestOffsetFetchErrorShapes: a group this node does not coordinate, at
// each OffsetFetch version, answered as Kafka 4.4's
// OffsetFetchResponse.groupError: v0-v1 carry NOT_COORDINATOR on every
// requested partition at offset -1; from v2 the error is top-level (v2-v7)
// or the group's (v8+) and no partition is listed. samsa listed every
// partition at offset -1 with no partition error from v2 on too: a client
// that reads the partitions before the error starts them from its reset
// offset (docs/DURABILITY.md finding 16).
func TestOffsetFetchErrorShapes(t *testing.T) {
	c, err := New(Options{NumPartitions: testPartitions, OpenLog: newLogs().open})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close) // nothing loaded: every group is NOT_COORDINATOR
	ctx := t.Context()
	for v := int16(0); v <= 9; v++ {
		req := kmsg.NewPtrOffsetFetchRequest()
		req.Version = v
		if v >= 8 {
			g := kmsg.NewOffsetFetchRequestGroup()
			g.Group = "g"
			g.Topics = []kmsg.OffsetFetchRequestGroupTopic{{Topic: "orders", Partitions: []int32{0, 1}}}
			req.Groups = []kmsg.OffsetFetchRequestGroup{g}
			req.RequireStable = true
			resp := c.OffsetFetch(ctx, req)
			if len(resp.Groups) != 1 {
				t.Fatalf("v%d: %d groups", v, len(resp.Groups))
			}
			g0 := resp.Groups[0]
			wantCode(t, "group error", g0.ErrorCode, kerr.NotCoordinator)
			if len(g0.Topics) != 0 {
				t.Fatalf("v%d: group error with topics %+v, want none", v, g0.Topics)
			}
			continue
		}
		req.Group = "g"
		req.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: "orders", Partitions: []int32{0, 1}}}
		req.RequireStable = v >= 7
		resp := c.OffsetFetch(ctx, req)
		if v >= 2 {
			wantCode(t, "top-level error", resp.ErrorCode, kerr.NotCoordinator)
			if len(resp.Topics) != 0 {
				t.Fatalf("v%d: top-level error with topics %+v, want none", v, resp.Topics)
			}
			continue
		}
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 2 {
			t.Fatalf("v%d: topics %+v, want both partitions", v, resp.Topics)
		}
		for _, p := range resp.Topics[0].Partitions {
			if p.ErrorCode != kerr.NotCoordinator.Code || p.Offset != -1 {
				t.Fatalf("v%d: partition %+v, want NOT_COORDINATOR at offset -1", v, p)
			}
		}
	}
}
