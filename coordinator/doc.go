// Package coordinator is samsa's group coordinator: the classic consumer
// group protocol (JoinGroup, SyncGroup, Heartbeat, LeaveGroup with
// generations, session and rebalance timeouts, static membership), KIP-848
// consumer groups (ConsumerGroupHeartbeat, ConsumerGroupDescribe: member and
// group epochs, server-side "uniform" and "range" assignors, reconciliation
// that hands a partition over only after its owner revoked it),
// transactional offset commits (TxnOffsetCommit, require_stable) and
// committed offsets (OffsetCommit, OffsetFetch, OffsetDelete), kept durable
// in the internal topic __consumer_offsets.
//
// # Shape
//
// Group is a pure state machine: methods take now and return Replies for
// blocked requests; Tick fires deadlines. A Coordinator runs one goroutine
// per loaded __consumer_offsets partition (a shard; the set of them is a
// shards.Set of coordinator/internal/shards, which the transaction and share
// coordinators use too). The shard owns the
// groups whose PartitionFor is that partition, does every write to the
// partition's Log, and answers the blocked JoinGroup and SyncGroup requests
// through channels.
//
// KIP-848 consumer groups and KIP-1071 streams groups are one core with two
// protocols, in the shape of Kafka's ModernGroup: modern_group.go holds what
// both have (member identity, epochs and deadlines; the members, static
// instance ids, target assignment and epochs; the reconciliation state
// machine, static takeover, leaving, fencing, and the member checks of
// offset commits and fetches), generic over the member and assignment
// types; ConsumerGroup (partitions, subscriptions, assignors) and
// StreamsGroup (tasks of three kinds, topology, processes, endpoints) embed
// it. modern_api.go holds the shard side the group types share (ListGroups
// rows, fence log lines, deadlines, deletion of a group's offsets).
//
//	c, err := coordinator.New(coordinator.Options{
//		NumPartitions: 50,
//		OpenLog: func(p int32) (coordinator.Log, error) {
//			l, ok := logs.Log(storage.TopicPartition{Topic: coordinator.OffsetsTopic, Partition: p})
//			if !ok {
//				return nil, errNoLog
//			}
//			return coordinator.StorageLog(l), nil
//		},
//	})
//	_ = c.LoadAll() // a single node leads every partition
//	resp := c.JoinGroup(ctx, coordinator.Client{ID: "c1", Host: "/127.0.0.1"}, req)
//	c.Close()
//
// # Concurrency
//
// Each shard's state is touched only by its goroutine; request methods hand
// it closures and wait. The one lock, the shards.Set's, guards the set of
// loaded shards and is never held while waiting on a shard, so there is no
// lock order to keep. Writes to a partition's log happen on its shard
// goroutine, one batch at a time, in order.
//
// # Answers wait for the shard's writes
//
// On a replicated __consumer_offsets partition (a PipelinedLog) the shard
// appends each write at once and does not wait for its replication
// (pipeline.go): its memory changes as soon as the batch is in the log,
// and the answer waits on the caller's goroutine until the high
// watermark passes it, at most the write timeout counted from the
// request's arrival, so a shard cut off from its followers fails each
// request one timeout after it came, not after every write queued before
// it. As Kafka's CoordinatorRuntime treats OffsetCommit, TxnOffsetCommit,
// OffsetDelete, DeleteGroups, heartbeats, JoinGroup, SyncGroup,
// LeaveGroup, ConsumerGroupHeartbeat and OffsetFetch with require_stable
// as write operations, their successful answers wait until every write
// the shard made before them is committed (barrier.go: the shard's
// written end offset, a CommitWaiter the log implements); a failure is
// COORDINATOR_NOT_AVAILABLE or NOT_COORDINATOR, mapped as Kafka maps
// append errors (writeError). Error answers are not held. A write whose
// answer timed out is kept in memory (its batch is in the log and may
// still be committed); one whose append failed is not made. A plain
// OffsetFetch and ConsumerGroupDescribe read the offsets and consumer
// groups as of the high watermark, as Kafka's reads of committed state,
// so they never show what could still be lost; the broker unloads the
// shard when the partition is led elsewhere.
//
// # On-disk format
//
// Records in __consumer_offsets are Kafka's, so Kafka tools can read them:
//
//	key OffsetCommitKey v1 (group, topic, partition)  value OffsetCommitValue v3 (offset, leader epoch, metadata, commit time)
//	key GroupMetadataKey v2 (group)                   value GroupMetadataValue v3 (protocol type, generation, protocol, leader, state time, members)
//
//	key versions 3-8 (group[, member])                KIP-848 consumer group records, see consumer_group_records.go
//	key versions 10-15 (group[, member])              KIP-932 share group records, see share_group_records.go
//	key versions 17, 19-23 (group[, member])          KIP-1071 streams group records, see streams_group_records.go
//
// A null value is a tombstone. Load reads a partition from its log start
// offset and keeps the last value of each key.
//
// Transactional offset commits (TxnOffsetCommit) are the same
// OffsetCommitKey/Value records in a batch carrying the producer's id and
// epoch and the transactional attribute; the transaction coordinator ends
// them with a control batch (attributes bit 5; key: version int16, type
// int16 0=abort 1=commit; value EndTxnMarker: version int16, coordinator
// epoch int32), which CompleteTxn writes.
//
// # Transactions
//
// A shard keeps the offsets of open transactions pending per producer id
// (txn_offsets.go): OffsetFetch does not show them, require_stable
// answers UNSTABLE_OFFSET_COMMIT for their partitions, and the commit
// marker moves them into the committed offsets where their record is later
// in the log than the committed one (Kafka's rule, so that reload and
// compaction agree). Load replays transactional batches as pending and
// markers as completions; what is open at the end stays pending until the
// transaction coordinator re-sends its marker.
//
//	c.TxnOffsetCommit(ctx, req)                 // staged, pending for req.ProducerID
//	c.CompleteTxn(ctx, partition, pid, epoch, true, coordinatorEpoch) // marker written, offsets committed
//
// # KIP-848 consumer groups
//
// ConsumerGroup is a pure state machine like Group. A consumer group's
// offsets live in an Empty classic Group of the same id (its holder), so
// the offset code serves both; the classic APIs answer a consumer group as
// Kafka does (JoinGroup INCONSISTENT_GROUP_PROTOCOL, DescribeGroups Dead or
// GROUP_ID_NOT_FOUND). An empty classic group is converted on the first
// ConsumerGroupHeartbeat and an empty consumer group on the first
// JoinGroup. Live groups migrate online as in Kafka 4.4
// (consumer_group_classic.go, group.consumer.migration.policy): a
// ConsumerGroupHeartbeat converts a live classic group keeping its members
// as classic members of the consumer group, which JoinGroup, SyncGroup,
// Heartbeat, LeaveGroup and OffsetCommit serve; the group turns classic
// again when its last KIP-848 member leaves.
// OffsetCommit follows KIP-1251 (Kafka 4.3): a member epoch older than the
// member's current one is accepted for the partitions the member held at
// that epoch; transactional commits keep the strict equality.
//
// # KIP-932 share groups
//
// ShareGroup is a pure state machine like ConsumerGroup, without
// revocation: the "simple" share assignor gives every partition of a
// subscribed topic to at least one member (several when members outnumber
// partitions) and a member takes its target at once. A share-partition is
// assigned only once its state is initialized through Options.Persister
// (the share coordinator, coordinator/share): the heartbeat that first
// sees it marks it initializing, calls Persister.Initialize off the shard
// (start offset -1 for a new topic, 0 for partitions added to a known one;
// state epoch = group epoch), then records it initialized
// (ShareGroupStatePartitionMetadata) at a new group epoch. A share group
// has no committed offsets: OffsetCommit and TxnOffsetCommit answer
// GROUP_ID_NOT_FOUND, OffsetFetch no topics (as Kafka 4.4). The admin APIs
// (share_admin.go) read, reset (with a higher state epoch) and delete the
// state through the Persister; DeleteGroups of an empty share group
// deletes the state of its initialized share-partitions first.
//
//	resp := c.ShareGroupHeartbeat(ctx, client, img, req) // join, heartbeat, leave
//	c.ShareGroupDescribe(ctx, req)
//	c.AlterShareGroupOffsets(ctx, img, req)              // empty groups only
//
// Members, their subscriptions and assignments are written as Kafka 4.4
// writes them (records 10-14), so a restarted or failed-over coordinator
// keeps the group epoch and members; a share-partition that was
// initializing when the coordinator stopped is initialized again (none
// was assigned yet, so no state is lost). Per-group overrides of the
// session timeout and heartbeat interval come from Options.GroupConfig
// (the GROUP config resource the controller stores).
package coordinator
