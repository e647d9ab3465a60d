package coordinator

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// shapeFetchGroupError makes a failed group of an OffsetFetch answer look
// as Kafka 4.4 answers it (GroupCoordinatorService.handleOffsetFetchException
// and OffsetFetchResponse.groupError):
//
//   - From v2 on the error is the group's alone and the group carries no
//     topics. Before, samsa also listed every requested partition at
//     offset -1 with no partition error, and a client that reads the
//     partitions without the group's (top-level before v8) error takes
//     -1 for "no committed offset" and starts from its reset offset, as
//     finding 16 of docs/DURABILITY.md looked for. v0-v1 have no
//     top-level error: each partition carries it, at offset -1.
//   - A require_stable fetch is a write operation, and one whose wait for
//     the shard's earlier writes failed (timed out, or too few replicas)
//     answers NOT_COORDINATOR, not COORDINATOR_NOT_AVAILABLE: consumers
//     before 3.9 do not retry the latter on OffsetFetch, and the former
//     makes a client that is talking to a cut-off ("zombie")
//     coordinator look the coordinator up again.
func shapeFetchGroupError(version int16, requireStable bool, g *kmsg.OffsetFetchResponseGroup) {
	if g.ErrorCode == 0 {
		return
	}
	if requireStable && g.ErrorCode == kerr.CoordinatorNotAvailable.Code {
		g.ErrorCode = kerr.NotCoordinator.Code
	}
	if version >= 2 {
		g.Topics = nil
		return
	}
	for i := range g.Topics {
		for j := range g.Topics[i].Partitions {
			p := &g.Topics[i].Partitions[j]
			p.Offset, p.LeaderEpoch, p.ErrorCode = -1, -1, g.ErrorCode
		}
	}
}
