// Package controller owns samsa's cluster metadata: brokers, topics with
// their ids, partitions with replicas, leader, epochs and ISR, and dynamic
// topic, broker and group configs and client metrics subscriptions
// (ConfigRecords of resource types 2, 4, 32 and 16, Kafka's numbers; a
// build that does not know a resource type refuses the record).
//
// The metadata is an immutable Image built by applying Records in order.
// A Machine applies committed batches of records to the image and queues
// each change; the Controller publishes the queued changes (OnChange, then
// Image) outside the apply step. Batches are committed through a Quorum:
// controller/quorum puts them on hashicorp/raft (the cluster, and a single
// node as a quorum of one voter); a local MetadataLog (FileLog, MemLog)
// can stand in for it as a quorum of its own (tests, and the import of a
// metadata.log written by earlier single-node builds).
//
// Decisions (decide.go) are pure: functions of an Image, a request and
// injected randomness that return records to commit or Kafka error codes
// (kerr). The Controller (controller.go) serializes local writers, decides
// against the newest applied image, proposes the records, and returns once
// they are applied and published. A node that is not the active controller
// answers writes with NOT_CONTROLLER (ErrNotController).
//
// # Usage
//
//	q, err := quorum.Open(quorum.Options{NodeID: 1, ClusterID: id, Dir: dir, Voters: voters, Listener: ln})
//	c, err := controller.New(controller.Options{
//		NodeID: 1, ClusterID: id, Quorum: q, Machine: q.Machine(), // or Log: a FileLog/MemLog (tests)
//		DefaultPartitions: 1, DefaultReplicationFactor: 1,
//		OnChange: func(prev, next *controller.Image) { /* create/delete local logs */ },
//	})
//	err = c.RegisterBroker(controller.Broker{ID: 1, Host: "localhost", Port: 9092})
//	res := c.CreateTopics([]controller.CreateTopic{{Name: "t", NumPartitions: 3, ReplicationFactor: -1}}, false)
//	img := c.Image() // lock-free snapshot; never modify it
//	c.Close()        // stops the publisher; then q.Close()
//
// Snapshots (snapshot.go, used by controller/quorum) have a format of
// their own: "SAMSAMSS", a uint16 version (1), the image offset, a record
// count, then frames in the layout of FileLog version 1 (below) holding
// the records that rebuild the image (ImageRecords). Replicated entries
// (EncodeEntry) are a version byte (1), the offset of the image the batch
// was decided against, a record count and such frames. Both follow the
// migration rules below; a new Image field must be added to ImageRecords.
//
// # File format (version 2)
//
// A FileLog file starts with an 18-byte header:
//
//	magic       [8]byte  "SAMSAMDL"
//	version     uint16   2 (big endian)
//	baseOffset  int64    offset of the first record (0; reserved for snapshots)
//
// followed by batches, one per Append, all integers big endian:
//
//	length   uint32  bytes after the crc field (count + records)
//	crc      uint32  CRC-32C (Castagnoli) of count and records
//	count    uint32  number of records, at least 1
//	records  count times:
//	  length   uint32  bytes after this field (version + type + payload)
//	  version  int8    record payload version, 1
//	  type     int8    RecordType
//	  payload  []byte  the record as JSON (field names are the json tags in records.go)
//
// All file IO goes through storage/vfs (OpenFileLogFS), so tests can fail
// any operation and simulate power loss. A record's offset is baseOffset
// plus its index among all records. Every Append writes its batch with one
// write and fsyncs, and the batch is the unit of recovery: a change that
// takes several records (CreateTopics: a TopicRecord, its ConfigRecords and
// PartitionRecords) is found whole after a crash, or not at all. On open,
// the batches are read until the first damaged one (short, implausible
// length, CRC mismatch). If that damage can be a crash's torn write (it
// spans at most one batch, maxBatchSize, and no complete batch follows it
// anywhere) the file is truncated there; otherwise the open fails with
// ErrCorrupt and the file is left as it is, because cutting would drop
// committed metadata. A batch whose CRC matches but that does not decode is
// corruption too.
//
// Version 1 (before batches) had the same header with version 1, then one
// frame per record: length uint32 (bytes after crc), crc uint32 (of
// version, type and payload), version int8, type int8, payload. Its
// recovery cut at the first bad frame, so a torn multi-record append could
// leave part of a change.
//
// Record types: 1 RegisterBroker, 2 Topic, 3 Partition, 4 PartitionChange,
// 5 Config, 6 RemoveTopic, 7 BrokerFence, 8 ProducerIDs, 9 ScramCredential
// (scram.go: salt, stored key, server key and iterations, never a password),
// 10 ACL and 11 RemoveACL (acl.go: an ACL with its id, a removal by id),
// 12 ClientQuota (quota.go: one key of one user/client-id/ip entity),
// 13 UnregisterBroker (unregister.go: removes a broker's registration),
// 20 ReplicaDirs and 21 BrokerOfflineDirs (log_dirs.go: a broker's replica
// directory assignments and offline log directories, KIP-858),
// 22 BrokerCordonedDirs (dir_placement.go: a broker's cordoned log
// directories, KIP-1066), 30 DelegationToken (delegation_token.go: a
// token's id, owner, requester, renewers and timestamps, or its removal;
// never its HMAC, which nodes derive from delegation.token.secret.key).
// Numbers are never reused. Optional fields added since: RegisterBroker epoch and
// incarnation (broker epochs, broker_epochs.go); RegisterBroker log_dirs
// and Partition directories (dir_placement.go; a build that ignores them
// only loses where replicas live); Partition and PartitionChange
// leader_recovery_state (leader_recovery.go, KIP-704; omitted while
// RECOVERED); Partition and
// PartitionChange adding_replicas and removing_replicas (reassignments,
// reassign.go; in PartitionChange an empty list clears them, an absent
// one leaves them). PartitionChange bump_leader_epoch (a change that
// removes a replica bumps the leader epoch although the leader stays, as
// Kafka's PartitionChangeBuilder does) changes what applying the record
// does, so a record that sets it is written with payload version 2, the
// only version 2 payload: a build that does not know it refuses the record
// (ErrUnsupportedVersion) rather than compute another leader epoch than
// its peers; records without it stay version 1. Eligible leader
// replicas (elr.go) add Partition elr and last_known_elr (a record that
// holds either is payload version 2) and PartitionChange elr,
// last_known_elr and empty_isr (an ISR set to the empty list, which JSON
// would omit; a record with any of the three is payload version 3, which
// may also set bump_leader_epoch): builds that do not know them refuse
// the record.
//
// # Elections, reassignments, broker epochs
//
// elr.go: eligible leader replicas (KIP-966), on when
// Options.EligibleLeaderReplicas is set (a node always sets it, as a
// Kafka 4.4 cluster finalizes eligible.leader.replicas.version 1): the
// ISR may become empty, replicas that left it below min.insync.replicas
// may be elected cleanly, and a broker that registers without the epoch
// of its clean shutdown (RegisterIncarnation) leaves every ISR and ELR.
//
// elections.go: unclean.leader.election.enable (UncleanPolicy) when a
// fencing leaves no eligible ISR member, when an out-of-sync replica is
// unfenced, and in ElectUnclean's sweep; BalanceLeaders for
// auto.leader.rebalance.enable. partition.go's decideElectLeaders serves
// ElectLeaders. reassign.go: AlterReassignments starts, replaces and
// cancels reassignments; the AlterPartition that brings the last adding
// replica into the ISR completes one. broker_epochs.go: a new incarnation
// registers fenced at a new epoch (the record's offset) and is unfenced
// by a heartbeat caught up with it; other epochs are STALE_BROKER_EPOCH.
//
// # Migration
//
// Additive changes (a new optional JSON field, a new record type) keep the
// file version: older builds fail loudly on an unknown record type rather
// than skip it. A change in the meaning of an existing payload bumps that
// record's version byte; decodeRecord then handles every version it knows,
// and the new code writes only the newest. A change of the framing or the
// header bumps the file version; OpenFileLog must then read both versions,
// and a migration rewrites the log as a new file (write, fsync, rename over
// the old one, fsync the directory). A build that finds a newer version
// than it knows refuses to open the file (ErrUnsupportedVersion) instead of
// guessing.
//
// Version 1 → 2 (batches): OpenFileLog reads a version 1 file (dropping a
// torn last frame, as version 1 did), writes every record as a batch of its
// own to path+".migrate" (which keeps version 1's per-record recovery for
// the old records), fsyncs it, renames it over the log and fsyncs the
// directory. A leftover ".migrate" file is from a migration that crashed
// before its rename and is removed. Migrated reports how many records were
// rewritten.
//
// # Locking
//
// Lock order: Controller.writeMu → FileLog.mu (the append);
// Controller.writeMu → Machine.mu; Controller.notifyMu → Machine.mu.
// writeMu and notifyMu are never held together, so OnChange runs outside
// the write lock. Raft's FSM goroutine takes only Machine.mu.
// Controller.liveness is a leaf lock, never held while another is taken.
package controller
