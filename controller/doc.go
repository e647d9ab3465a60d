// Package controller owns samsa's cluster metadata: brokers, topics with
// their ids, partitions with replicas, leader, epochs and ISR, and dynamic
// topic and broker configs.
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
//	log, err := controller.OpenFileLog(filepath.Join(dir, "metadata.log"))
//	c, err := controller.New(controller.Options{
//		NodeID: 1, ClusterID: id, Log: log,
//		DefaultPartitions: 1, DefaultReplicationFactor: 1,
//		OnChange: func(prev, next *controller.Image) { /* create/delete local logs */ },
//	})
//	err = c.RegisterBroker(controller.Broker{ID: 1, Host: "localhost", Port: 9092})
//	res := c.CreateTopics([]controller.CreateTopic{{Name: "t", NumPartitions: 3, ReplicationFactor: -1}}, false)
//	img := c.Image() // lock-free snapshot; never modify it
//
// Snapshots (snapshot.go, used by controller/quorum) have a format of
// their own: "SAMSAMSS", a uint16 version (1), the image offset, a record
// count, then the frames below holding the records that rebuild the image
// (ImageRecords). Replicated entries (EncodeEntry) are a version byte (1),
// the offset of the image the batch was decided against, a record count
// and the frames. Both follow the migration rules below; a new Image field
// must be added to ImageRecords.
//
// # File format (version 1)
//
// A FileLog file starts with an 18-byte header:
//
//	magic       [8]byte  "SAMSAMDL"
//	version     uint16   1 (big endian)
//	baseOffset  int64    offset of the first frame (0; reserved for snapshots)
//
// followed by frames, one per record, all integers big endian:
//
//	length   uint32  bytes after the crc field (version + type + payload)
//	crc      uint32  CRC-32C (Castagnoli) of version, type and payload
//	version  int8    record payload version, 1
//	type     int8    RecordType
//	payload  []byte  the record as JSON (field names are the json tags in records.go)
//
// All file IO goes through storage/vfs (OpenFileLogFS), so tests can fail
// any operation and simulate power loss. A record's offset is baseOffset
// plus its frame's index. Every Append
// writes its frames with one write and fsyncs. On open, the frames are read
// until the first short frame, implausible length or CRC mismatch, and the
// file is truncated there (a torn write from a crash); a frame whose CRC
// matches but that does not decode is corruption and fails the open.
//
// Record types: 1 RegisterBroker, 2 Topic, 3 Partition, 4 PartitionChange,
// 5 Config, 6 RemoveTopic, 7 BrokerFence. Numbers are never reused.
//
// # Migration
//
// Additive changes (a new optional JSON field, a new record type) keep
// version 1: older builds fail loudly on an unknown record type rather than
// skip it. A change in the meaning of an existing payload bumps that frame's
// version byte; decodeRecord then handles every version it knows, and the
// new code writes only the newest. A change of the framing or the header
// bumps the file version; OpenFileLog must then read both versions, and a
// migration rewrites the log as a new file (write, fsync, rename over the
// old one, fsync the directory). A build that finds a newer version than
// it knows refuses to open the file (ErrUnsupportedVersion) instead of
// guessing.
//
// # Locking
//
// Lock order: Controller.writeMu → FileLog.mu (the append);
// Controller.writeMu → Machine.mu; Controller.notifyMu → Machine.mu.
// writeMu and notifyMu are never held together, so OnChange runs outside
// the write lock. Raft's FSM goroutine takes only Machine.mu.
// Controller.liveness is a leaf lock, never held while another is taken.
package controller
