// Package sharecoord is samsa's share coordinator (KIP-932): it keeps the
// state of share-partitions (share.State) in the internal topic
// __share_group_state and answers Kafka's InitializeShareGroupState,
// ReadShareGroupState, WriteShareGroupState, DeleteShareGroupState and
// ReadShareGroupStateSummary; NewPersister is the share.Persister the rest
// of the broker uses.
//
// # Shape
//
// A Coordinator runs one goroutine (a shard) per loaded
// __share_group_state partition, owning the share-partitions whose
// PartitionFor is that partition; the broker loads a partition when it
// becomes its leader and unloads it when it stops, as it does the group
// and transaction coordinators. Requests meanwhile get
// COORDINATOR_LOAD_IN_PROGRESS, elsewhere NOT_COORDINATOR.
//
//	c, _ := sharecoord.New(sharecoord.Options{NumPartitions: 50, Log: logs})
//	_ = c.LoadPartition(p) // this node leads __share_group_state-p
//	err := c.Initialize(ctx, k, 0, -1)
//	st, ok, err := c.Read(ctx, k, leaderEpoch)
//
// NewPersister wraps it for the rest of the broker: each call goes to the
// local Coordinator when this node leads the key's partition, else to that
// node over the wire, and is retried on NOT_COORDINATOR,
// COORDINATOR_NOT_AVAILABLE and COORDINATOR_LOAD_IN_PROGRESS (and failed
// sends) until the caller's context ends. It asks for __share_group_state
// to be created (RouterOptions.CreateTopic) while the topic does not
// exist, as Kafka creates it on first use.
//
//	p, _ := sharecoord.NewPersister(sharecoord.RouterOptions{Local: c,
//		NodeID: 1, Leaders: leaders, CreateTopic: create, Send: send})
//	err := p.Write(ctx, k, share.State{StateEpoch: 1, LeaderEpoch: 4, StartOffset: 10})
//
// # Writes
//
// Every change is one snapshot of the whole share-partition (Kafka's
// ShareSnapshot record), so compaction keeps exactly one record per
// share-partition. On a replicated partition (a
// coordinator.EpochPipelinedLog) the shard appends the write, installs it
// at once, and goes on serving; the caller's answer waits until the high
// watermark passes the write in the leader epoch it was appended in, so a
// write the node lost as a deposed leader is never reported done. Reads
// wait likewise for the key's last write, so they never show what may be
// lost.
//
// # Fencing
//
// As Kafka 4.4's ShareCoordinatorShard: Initialize with a state epoch
// older than the stored one is FENCED_STATE_EPOCH; Read with a leader
// epoch older than the stored one is FENCED_LEADER_EPOCH, and a newer one
// is recorded (written) before the answer; Write is checked against both.
// Read and Write of a share-partition never initialized are
// INVALID_REQUEST (Read: Persister.Read reports ok false). Initialize
// records leader epoch 0, as Kafka 4.4 does.
//
// The topic is created compacted (cleanup.policy=compact); Kafka 4.4
// creates it with cleanup.policy=delete, retention.ms=-1 and prunes it
// itself with DeleteRecords below the oldest snapshot still needed.
//
// # On-disk format
//
// Records in __share_group_state are Kafka's, so Kafka tools read them:
//
//	key   int16 type (0 ShareSnapshotKey, 1 ShareUpdateKey), group STRING,
//	      topic_id UUID, partition int32
//	value ShareSnapshotValue v0 (flexible): int16 0, snapshot_epoch int32,
//	      state_epoch int32, leader_epoch int32, start_offset int64,
//	      create_timestamp int64, write_timestamp int64,
//	      state_batches [first_offset int64, last_offset int64,
//	      delivery_state int8, delivery_count int16],
//	      tag 0: delivery_complete_count int32 (KIP-1226)
//
// samsa writes only snapshots; a Delete writes tombstones of both keys.
// Load also folds in ShareUpdate records (Kafka's deltas) written after a
// snapshot of the same snapshot epoch.
//
// Not yet here: Kafka's periodic pruning of the state topic below the
// oldest needed snapshot (share.coordinator.state.topic.prune.interval.ms;
// compaction does it here), cold-partition snapshots, metrics.
package sharecoord
