package handlers

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/controller"
	"github.com/samsa-broker/samsa/replica"
	"github.com/samsa-broker/samsa/storage"
)

// Fetch from the closest replica (KIP-392), as Kafka 4.4's ReplicaManager
// does it:
//
//   - A consumer's Fetch v11+ carries client metadata (its rack, "" when
//     client.rack is unset). Kafka then reads the partition from any local
//     replica, leader or follower (FetchParams.fetchOnlyLeader is false),
//     so a follower serves it up to its own high watermark (the last
//     stable offset for read_committed), never beyond; an offset above
//     its log end is OFFSET_OUT_OF_RANGE (the clients go back to the
//     leader), one between its high watermark and log end an empty
//     answer that waits. A node that holds no replica of the partition
//     answers NOT_LEADER_OR_FOLLOWER. Fetch v4-v10 reads the leader only.
//   - The leader asks replica.selector.class (findPreferredReadReplica)
//     for every such fetch: when it picks another replica, the partition
//     is answered with PreferredReadReplica, the leader's high watermark,
//     last stable and log start offsets and no records, at once (no long
//     poll). Only followers in the ISR that hold the fetch offset and are
//     registered and unfenced are candidates (replica.Partition.
//     PreferredReadReplica); RackAwareReplicaSelector picks the most
//     caught-up one in the client's rack unless the leader is in it.
//   - ListOffsets and OffsetForLeaderEpoch stay leader-only, as in Kafka.
//
// A follower that falls out of the ISR is no longer chosen: a consumer that
// comes back to the leader (an error at the follower, or its preferred
// replica's expiry: metadata.max.age.ms in the Java client, franz-go's
// RecheckPreferredReplicaInterval) stays with the leader.

// fetchClient is what a consumer's fetch says about where it may read.
type fetchClient struct {
	// anyReplica: Fetch v11+ (Kafka's ClientMetadata is present), which a
	// follower may serve.
	anyReplica bool
	// rack is the fetch's RackID (client.rack).
	rack string
}

// newFetchClient is the client metadata of a consumer's fetch.
func newFetchClient(req *kmsg.FetchRequest, version int16) fetchClient {
	if version < 11 {
		return fetchClient{}
	}
	return fetchClient{anyReplica: true, rack: req.Rack}
}

// lookupFetchPartition resolves the partition a consumer's fetch reads:
// lookupPartitionEpoch's leader check, relaxed to any local replica for
// Fetch v11+ (ref.log is then set on followers too). On the leader it
// returns preferred >= 0 when replica.selector.class sends the consumer
// to that replica instead (-1: read here).
func (d *Deps) lookupFetchPartition(img *controller.Image, t *controller.Topic, partition int32, sp *sessionPartition, c fetchClient) (ref partitionRef, preferred int32) {
	ref = d.lookupPartitionEpoch(img, t, partition, sp.currentLeaderEpoch)
	if !c.anyReplica {
		return ref, -1
	}
	if ref.code == kerr.NotLeaderForPartition.Code && ref.replica != nil {
		// lookupPartitionEpoch checked the epochs first: only the role
		// is left, which a follower passes.
		if ref.code = ref.replica.CheckReplica(sp.currentLeaderEpoch); ref.code == 0 {
			ref.log = ref.replica.Log()
		}
		return ref, -1
	}
	if ref.code != 0 || c.rack == "" {
		return ref, -1
	}
	sel, err := replica.ParseReplicaSelector(d.Config.ReplicaSelectorClass)
	if err != nil || sel == replica.SelectorNone {
		// config validated the class; none is Kafka's default.
		return ref, -1
	}
	id, ok := ref.replica.PreferredReadReplica(sel, c.rack, sp.fetchOffset, func(id int32) (string, bool) {
		b, ok := img.Brokers[id]
		if !ok || b.Fenced {
			return "", false
		}
		if b.Rack == nil {
			return "", true
		}
		return *b.Rack, true
	})
	if !ok {
		return ref, -1
	}
	return ref, id
}

// redirectResult is a leader's answer for a partition whose consumer it
// sends to the preferred read replica id: no records, the leader's
// offsets (Kafka's LogReadResult for a preferred replica).
func redirectResult(l *storage.Log, id int32) fetchResult {
	return fetchResult{highWatermark: l.HighWatermark(), lastStable: min(l.LastStableOffset(), l.HighWatermark()), logStart: l.LogStartOffset(),
		leader: -1, leaderEpoch: -1, redirect: true, readReplica: id}
}
