// Package coordinator is samsa's group coordinator: the classic consumer
// group protocol (JoinGroup, SyncGroup, Heartbeat, LeaveGroup with
// generations, session and rebalance timeouts, static membership) and
// committed offsets (OffsetCommit, OffsetFetch, OffsetDelete), kept durable
// in the internal topic __consumer_offsets.
//
// # Shape
//
// Group is a pure state machine: methods take now and return Replies for
// blocked requests; Tick fires deadlines. A Coordinator runs one goroutine
// per loaded __consumer_offsets partition (a shard). The shard owns the
// groups whose PartitionFor is that partition, does every write to the
// partition's Log, and answers the blocked JoinGroup and SyncGroup requests
// through channels.
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
// it closures and wait. The one lock, Coordinator.mu, guards the set of
// loaded shards and is never held while waiting on a shard, so there is no
// lock order to keep. Writes to a partition's log happen on its shard
// goroutine, one batch at a time.
//
// # On-disk format
//
// Records in __consumer_offsets are Kafka's, so Kafka tools can read them:
//
//	key OffsetCommitKey v1 (group, topic, partition)  value OffsetCommitValue v3 (offset, leader epoch, metadata, commit time)
//	key GroupMetadataKey v2 (group)                   value GroupMetadataValue v3 (protocol type, generation, protocol, leader, state time, members)
//
// A null value is a tombstone. Load reads a partition from its log start
// offset and keeps the last value of each key. Key versions 3+ (KIP-848
// consumer groups) are skipped for now; transactional batches too.
//
// Not yet here: KIP-848 ConsumerGroupHeartbeat/ConsumerGroupDescribe,
// transactional offset commits (TxnOffsetCommit, require_stable), and
// ownership that follows partition leadership across brokers.
package coordinator
