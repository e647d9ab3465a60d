// Package replica is samsa's replication data path (Kafka's ReplicaManager
// and Partition): it hosts this node's partitions, makes each one a leader
// or a follower as the published metadata image says, copies the leaders'
// logs to the followers with Kafka's pull model, and owns every change of
// the high watermark.
//
// # Pieces
//
//   - rules.go: the decisions as pure functions with now passed in —
//     HighWatermark (min LEO over the maximal ISR, never backwards),
//     UpdateFollowerFetch (lastCaughtUpTimeMs), OutOfSyncReplicas
//     (replica.lag.time.max.ms), CanJoinISR (LEO >= HW and >= the leader
//     epoch's start offset), DivergingEpoch and TruncationOffset. Table
//     tests in rules_test.go; golden scripts in testdata/*.txt
//     (datadriven_test.go, -rewrite regenerates them).
//   - Partition: one per hosted partition, wrapping its *storage.Log. It
//     holds role, leader, leader epoch, partition epoch, replicas, ISR, an
//     AlterPartition in flight (the high watermark honours the union of
//     both ISRs meanwhile) and each follower's state. Handlers write only
//     through it: AppendAsLeader (acks=-1: NOT_ENOUGH_REPLICAS below
//     min.insync.replicas), WaitForHighWatermark (acks=-1: woken by the
//     log's notification and the partition's state changes; it answers
//     REQUEST_TIMED_OUT and NOT_ENOUGH_REPLICAS_AFTER_APPEND), CheckLeader
//     (NOT_LEADER_OR_FOLLOWER, FENCED_LEADER_EPOCH, UNKNOWN_LEADER_EPOCH),
//     DeleteRecords and CoordinatorLog (the coordinators' acks=-1 log).
//   - Manager: hosts the Partitions. Apply is the controller's OnChange
//     (after broker.LogSyncer created the logs): it moves every hosted
//     partition to the role of the image, synchronously, so a published
//     image never says "leader" for a Partition that does not know it; the
//     fetchers are started, moved and stopped on the Manager's goroutine.
//     ServeReplicaFetch answers followers' fetches (up to the log end,
//     DivergingEpoch, long poll on the logs' notifications; with
//     ServeReplicaFetchRanges the records as segment file ranges, which
//     the broker sends with sendfile as for consumers). A parked
//     follower fetch is also answered when the high watermark moves past
//     what that follower was sent, so followers hold a high watermark at
//     most one round trip old; Kafka 4.4 completes a follower's fetch only
//     on new records, and its followers learn the high watermark with the
//     next records or after replica.fetch.wait.max.ms. The cost is one more
//     fetch per follower and commit at low rates (four fetches for an
//     acks=-1 commit instead of two: TestAcksAllCommitFetches,
//     BenchmarkAcksAllCommit). Every
//     replica.lag.time.max.ms/2 each led partition drops lagging followers
//     through the ISRChanger; a follower that caught up is proposed back
//     on its fetch.
//   - read_replica.go: fetch from the closest replica (KIP-392): the
//     replica.selector.class decision (SelectReadReplica, a pure function,
//     and Partition.PreferredReadReplica, which takes its candidates from
//     the ISR followers holding the fetch offset) and CheckReplica, the
//     epoch and role check of a consumer's read from a follower.
//   - fetcher.go: one goroutine per source broker, sessionless Fetch v12+
//     with ReplicaID / ReplicaState set, read_uncommitted, max wait
//     replica.fetch.wait.max.ms; the leader's batches are appended with
//     storage.Log.AppendAsFollower (leader's offsets and epochs), the
//     follower's high watermark is min(leader HW, own LEO), a
//     DivergingEpoch truncates (TruncationOffset), OFFSET_OUT_OF_RANGE
//     below the leader's log start restarts the log there, other errors
//     back off (replica.fetch.backoff.ms) until the next image. kgo.go is
//     the default transport (a kgo client per leader, seeded with the
//     leader's address from the image or Options.BrokerAddr); tests pass
//     Options.Fetch.
//
// # Usage
//
//	var ctrl *controller.Controller
//	replicas := replica.NewManager(replica.Options{
//		NodeID: cfg.NodeID, Logs: logs,
//		ISR: replica.LocalISRChanger{Controller: func() *controller.Controller { return ctrl }},
//		MinInsyncReplicas: func(t *controller.Topic) int { return minISR(t) },
//	})
//	defer replicas.Close()
//	syncer := &broker.LogSyncer{..., Replicas: replicas} // creates logs, then replicas.Apply
//	ctrl, _ = controller.New(controller.Options{..., OnChange: syncer.Apply})
//
//	// Produce, acks=-1:
//	p, _ := replicas.Lookup(img, topic, partition)
//	info, epoch, code, err := p.AppendAsLeader(-1, func(l *storage.Log, e int32) (storage.AppendInfo, error) {
//		wire.SetPartitionLeaderEpoch(batch, e)
//		return l.Append(batch)
//	})
//	if code == 0 && err == nil {
//		code = p.WaitForHighWatermark(ctx, epoch, info.LastOffset+1)
//	}
//
// # Locks
//
// Manager.mu guards the partition map and is never held while calling a
// Partition. Partition.roleMu (held for reading across log writes, for
// writing across role changes, like Kafka's leaderIsrUpdateLock), then
// Partition.mu, then the storage.Log's locks. No lock is held across a
// network call or a wait.
//
// # Restarts and reassignment
//
// The high watermark a restarted replica starts from is the storage
// Manager's replication-offset-checkpoint (written every 5 s by the
// broker, replica.high.watermark.checkpoint.interval.ms, and at Close);
// it is at most the high watermark exposed before, so a restart neither
// exposes an uncommitted record nor hides a committed one for longer
// than the followers take to fetch. A leader whose replicas change in
// the same leader epoch (a reassignment adding replicas; one that removes
// a replica comes with a new leader epoch, as in Kafka, and the leader
// starts every follower's state afresh) gives the new ones a follower
// state and drops the old ones'; the new
// ones join the ISR by the usual rule (CanJoinISR), which is what
// completes the reassignment at the controller.
//
// # Not yet
//
// No follower fetch sessions: followers send sessionless Fetch requests.
// Of eligible leader replicas (KIP-966, on by default in Kafka 4.4) the
// strict min ISR rule is here (UnderMinISR: a leader whose ISR is below
// min.insync.replicas keeps its high watermark); the controller keeps the
// ELR and elects from it (controller/elr.go).
//
// # Restarts
//
// The node publishes metadata to the Manager only once it caught up with
// the quorum (controller Options.CaughtUp: its own registration is in the
// image), so a restarting broker never takes a role from the images it
// replays from its own metadata log (docs/DURABILITY.md, finding 3); the
// first Apply goes from the empty image to the caught-up one.
package replica
