// Package txn is samsa's transaction coordinator (KIP-98): InitProducerId
// for transactional ids, AddPartitionsToTxn, AddOffsetsToTxn, EndTxn, the
// produce-path verification of KIP-890 part 1, DescribeTransactions and
// ListTransactions (KIP-664, KIP-994), with its state kept durable in the
// internal topic __transaction_state.
//
// # Shape
//
// txnMeta is a transactional id's state (Kafka's TransactionMetadata) and
// its transitions are pure functions of it and of now, returning the next
// value; the shard writes that value to the log and only then installs it.
// A Coordinator runs one goroutine per loaded __transaction_state partition
// (a shard, in a shards.Set of coordinator/internal/shards), owning the ids whose PartitionFor is that partition. Marker
// writes (MarkerWriter) run on goroutines of their own and report back, so
// a slow data partition never stalls the shard.
//
//	c, err := txn.New(txn.Options{
//		NumPartitions: 50,
//		Log: func(p int32) (txn.Log, bool) {
//			l, ok := logs.Log(storage.TopicPartition{Topic: txn.TransactionStateTopic, Partition: p})
//			if !ok {
//				return nil, false
//			}
//			return txn.StorageLog(l), true
//		},
//		ProducerIDs: allocator, // *storage.ProducerIDAllocator
//		Markers:     markers,   // appends control batches
//	})
//	_ = c.LoadAll() // a single node leads every partition
//	resp := c.InitProducerID(ctx, req)
//	c.Close()
//
// # Life of a transaction
//
//	Empty/Complete* --AddPartitionsToTxn--> Ongoing --EndTxn--> PrepareCommit|PrepareAbort
//	    --markers written--> CompleteCommit|CompleteAbort
//
// InitProducerId on an ongoing transaction, and the timeout check
// (transaction.abort.timed.out.transaction.cleanup.interval.ms), fence it:
// PrepareAbort with the epoch bumped, so the old producer gets
// PRODUCER_FENCED (INVALID_PRODUCER_EPOCH for old request versions). Idle
// ids are tombstoned after transactional.id.expiration.ms.
//
// # Answers and markers
//
// Every state change is written to the partition, and committed there,
// before it shows in memory or in an answer. EndTxn answers once the first
// marker round ended (or Options.WriteTimeout, 5 s, after it came): the
// outcome is durable with the Prepare state, as in Kafka, and waiting for
// the round spares the client a CONCURRENT_TRANSACTIONS on its next
// request. Markers that failed are retried every Options.MarkerRetryBackoff
// until written; then the Complete state is written. Until then the id
// answers CONCURRENT_TRANSACTIONS, except InitProducerId, which waits for
// the completion (to its deadline too) and then answers as a retry would.
// MarkerWriter runs on goroutines of its own and must return once its
// context ends (the partition was unloaded).
//
// # Pipelined writes
//
// On a replicated partition (a Log that is a coordinator.PipelinedLog) the
// shard appends each write without waiting for the replicas and installs
// it once the high watermark passes it, as Kafka's TransactionStateManager
// completes a transition after replication; a goroutine per shard watches
// the high watermark (in the leader epoch of each write, so that a write
// the node truncated as a follower is never installed). Each request waits on its own goroutine, at most
// Options.WriteTimeout from its arrival, then gets COORDINATOR_NOT_AVAILABLE
// (NOT_COORDINATOR if the partition moved, the codes of
// coordinator.WriteError if the append itself failed). A write that timed
// out stays in flight and is installed if it commits later, since the log
// holds it; requests of the same id wait for it, other ids do not (see
// pipeline.go).
//
// # Concurrency
//
// Each shard's state is touched only by its goroutine; request methods hand
// it closures and wait for answers on channels of their own (at most to
// their deadline). Coordinator.mu guards the set of loaded shards and is
// never held while waiting on a shard, so there is no lock order.
//
// # On-disk format
//
// Records in __transaction_state are Kafka's, so Kafka tools read them:
//
//	key   TransactionLogKey v0: int16 0, transactional_id STRING
//	value TransactionLogValue v0: int16 0, producer_id int64, producer_epoch int16,
//	      transaction_timeout_ms int32, transaction_status int8,
//	      transaction_partitions [topic STRING, partition_ids [int32]] (null when Empty),
//	      transaction_last_update_timestamp_ms int64, transaction_start_timestamp_ms int64
//	      v1 (flexible): compact strings and arrays, tagged fields
//	      0 previous_producer_id, 1 next_producer_id, 2 client_transaction_version
//
// v1 is written only when a tagged field has a value (a rotated producer
// id), v0 otherwise. A null value is a tombstone. Load reads a partition
// from its log start offset and keeps the last value of each key; a
// transaction found in PrepareCommit/PrepareAbort gets its markers again.
//
// Transaction version 2 (KIP-890 part 2: the epoch bump on every EndTxn
// v5 and the implicit add from a partition leader, AddPartitionsImplicit)
// is here; authorization is the broker's (broker/handlers/authz_txn.go).
// Not yet: 2PC (KIP-939, InitProducerId v6, which kmsg v1.15.1 does not
// have).
package txn
