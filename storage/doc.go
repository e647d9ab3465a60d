// Package storage is samsa's partition log: segments of Kafka v2 record
// batches stored exactly as they came off the wire (offsets assigned in
// place), sparse offset and time indexes, roll, recovery, retention, the
// leader-epoch cache and the offset checkpoints. All file IO goes through
// package vfs, so tests run on an in-memory file system and simulate crashes.
//
// # Usage
//
//	m, err := storage.OpenManager(storage.ManagerOptions{Dirs: []string{"/var/samsa"}})
//	l, err := m.CreateLog(storage.TopicPartition{Topic: "t", Partition: 0}, topicID, cfg)
//	info, err := l.Append(batches)          // offsets assigned in place
//	l.SetHighWatermark(l.LogEndOffset())    // single node: HW = LEO
//	b, err := l.Read(0, 1<<20, l.HighWatermark(), true)
//	go m.Run(ctx)                           // retention, flush.ms, checkpoints, cleaner
//	defer m.Close()
//
// # On-disk layout
//
//	<log dir>/
//	  recovery-point-offset-checkpoint   offset checkpoint (below)
//	  log-start-offset-checkpoint        offset checkpoint
//	  replication-offset-checkpoint      offset checkpoint (high watermarks)
//	  producer-id-block                  next free producer id block (see ProducerIDBlockFile), versioned
//	  <topic>-<partition>/
//	    partition.metadata               "version: 0\ntopic_id: <base64url UUID>\n"
//	    leader-epoch-checkpoint          "0\n<count>\n<epoch> <start offset>\n..."
//	    00000000000000000000.log         record batches, Kafka format (magic 2)
//	    00000000000000000000.index       offset index
//	    00000000000000000000.timeindex   time index
//	    00000000000000000000.txnindex    aborted transaction index (only once a transaction aborted)
//	    00000000000000000000.snapshot    open transactions and producer state at that offset (samsa format, versioned)
//	  <topic>-<partition>.<hex>-delete/  a partition being deleted (removed on open)
//	  <topic>-<partition>.<hex>-stray/   a partition the metadata does not know, set aside
//	                                     (Manager.MoveStray; kept and logged on every open)
//
// The -delete and -stray names cut the topic so that they fit 255 bytes;
// <hex> is 32 random hex digits. Nothing in a log dir is deleted because
// metadata lacks it (stray.go); partitions beyond the open file budget
// stay unopened and offline (file_budget.go).
//
// Segment files are named by the segment's base offset as 20 digits. A .log
// file is a sequence of v2 record batches; each batch carries its own magic
// byte and CRC-32C (over bytes [21:], attributes to end), so .log files need
// no version of their own.
//
// The .index file holds 8-byte big-endian entries (int32 offset relative to
// the segment base, int32 byte position). An entry maps the last offset of a
// batch to that batch's position; one is added at the first batch after
// every index.interval.bytes bytes. The .timeindex file holds 12-byte entries
// (int64 timestamp, int32 relative offset): the largest timestamp seen so
// far in the segment and the last offset of the batch that carried it,
// added with the offset entries when the timestamp grew, and once more when
// the segment is rolled. Both index formats are Kafka's; unlike Kafka, samsa
// does not preallocate them (trailing zero entries are tolerated on read).
// Indexes are always rebuildable from the .log file and are rebuilt when
// missing or inconsistent.
//
// The offset checkpoints use Kafka's text format, version 0:
//
//	0
//	<number of entries>
//	<topic> <partition> <offset>
//	...
//
// The first line is the format version. A reader must reject versions it
// does not know; a future version 1 must keep reading version 0 files and
// rewrite them as 1 on the next checkpoint. Checkpoints are replaced
// atomically (write "<name>.tmp", fsync, rename, fsync the directory).
// Leftover .tmp files are removed on open; .cleaned, .swap and .deleted
// files are handled as described under Compaction.
//
// # Recovery
//
// OpenLog scans, batch by batch (length, magic, CRC, increasing offsets),
// every segment from the one containing the recovery point onwards (all of
// them when the recovery point is unknown, always the active one), as
// Kafka's recovery-point-offset-checkpoint does. The recovery point moves
// to the log end at every flush and to the new segment's base at every
// roll (the closed segment and the directory are synced first); the
// Manager checkpoints it every CheckpointInterval and at Close.
//
// A roll syncs the closed segment before the next one exists, so only the
// last segment can hold a torn write. A bad batch in the last segment ends
// the log: the file is cut there. A bad batch anywhere else is damage, not
// a crash: it is kept on disk as a damaged range, the scan resumes at the
// next intact batch (the next position holding a sane header whose CRC
// matches), and later segments are never touched. Reads of the intact
// batches around a damaged range go on; a read starting in it fails with
// ErrCorrupt (the fetch answers CORRUPT_MESSAGE, as Kafka's
// CorruptRecordException does). Damage in a segment below the recovery
// point is not looked for at open (as in Kafka); a read that finds it
// serves the intact batches before it and logs it once per segment.
// Every discarded or unreadable range is logged at ERROR with the
// partition, offsets and bytes, and so are offsets missing between
// segments outside the compacted range (segment files deleted from
// outside). Indexes of scanned segments are rebuilt (with an entry at the
// first batch after each damaged range); the indexes of other segments are
// checked against the log (last entry must point at a batch with that last
// offset, offsets below the next segment's base) and the segment is
// scanned if they do not match. Recovered segments are fsynced before the
// recovery point moves to the log end offset.
//
// # Transactions
//
// Every append looks at the header of each batch. A transactional batch of
// a producer without an open transaction opens one at its base offset; a
// control batch (commit or abort marker, wire.ParseControlBatch) of a
// producer ends its open transaction, and a marker for a producer with none
// changes nothing. The last stable offset (LSO) is the high watermark, or
// the first offset of the oldest open transaction if lower (never below
// the log start offset). A read_committed fetch reads up to
// LastStableOffset and answers with AbortedTransactions(fetchOffset,
// lastOffsetReturned+1).
//
// An abort adds an entry to the .txnindex of the segment holding the
// marker, Kafka's format: 34-byte big-endian entries of version int16 (0),
// producer id int64, first offset int64, last offset int64 (the marker),
// last stable offset int64 (the first offset of the oldest transaction
// still open after the marker, or the marker's offset + 1). The file is
// created at the first abort, synced with its segment, cut on truncation
// (entries whose marker is at or after the new end) and deleted with its
// segment.
//
// # Producer state
//
// The same headers also keep, per producer id, the state the produce path
// checks idempotent and transactional batches against (Kafka's
// ProducerStateManager): the producer epoch, the first and last sequence
// and offset of its last ProducerBatchWindow (5) data batches, the max
// timestamp of its last batch and the coordinator epoch of its last
// marker. A batch with another epoch resets the window; a marker sets the
// epoch and coordinator epoch and ends the open transaction; control
// batches that are no transaction markers are ignored. The writer updates
// it in place (no copy per batch); Producer and Producers hand out copies,
// with the open transaction's first offset. Moving the log start offset
// (retention, DeleteRecords) keeps it, as Kafka does since KIP-360:
// producers are forgotten only by ExpireProducers, which the Manager runs
// on every log each producer.id.expiration.check.interval.ms for the
// producers whose last batch is producer.id.expiration.ms old (never for a
// producer with an open transaction), as Kafka does.
//
// # Snapshots
//
// A "%020d.snapshot" file holds the open transactions and the producer
// state as of its offset, in samsa's own format (Kafka uses the name for
// its producer snapshots, whose contents differ). Version 1:
//
//	 0 magic    "SMTX"
//	 4 version  uint16 = 1
//	 6 crc      uint32, CRC-32C of bytes 10..end
//	10 offset   int64, equal to the file name's
//	18 count    uint32
//	22 count × (producer id int64, producer epoch int16, first offset int64), by first offset
//	   count    uint32
//	   count × producer, by producer id:
//	     producer id int64, producer epoch int16, coordinator epoch int32,
//	     last timestamp int64, batch count uint8 (at most 5),
//	     batch count × (first seq int32, last seq int32, first offset int64, last offset int64), oldest first
//
// Every offset in a snapshot is below its own, and every open
// transaction's producer has an entry. Version 0 was the header and the
// open transactions only.
//
// One is written (atomically: .tmp, fsync, rename, directory fsync) at
// every roll, after the closed segment is synced, and at a clean Close,
// after the flush; so a snapshot at offset S implies that every batch and
// transaction index entry below S is durable, and OpenLog trusts any
// snapshot up to the recovered log end (not just up to the checkpointed
// recovery point, which may lag). OpenLog loads the newest usable one
// (below any segment whose .txnindex is unreadable), replays the batch
// headers from it to the log end, and rewrites the .txnindex entries of the
// replayed range only where they differ from the replay, so restarts never
// duplicate entries and repair lost ones. A restart after a clean Close
// thus restores the state without replaying any batch, and one after a
// crash replays the batches written since the last roll. An unreadable snapshot
// is deleted with a warning and the next older one tried; with none the
// replay starts at the first segment (with a log line). Snapshots above
// the log end (truncation) or below the first segment (retention,
// DeleteRecords) are deleted; TruncateTo reloads the state the same way.
//
// Migration: an unknown snapshot version is just unreadable and costs a
// longer replay. Version 0 files (written before producer state was kept)
// have no producer state, so version 1 code does not use them: it deletes
// them (with an info log line) and replays from an older version 1
// snapshot or, the first time after an upgrade, from the first segment,
// which also rebuilds the open transactions (a transaction whose first
// batch retention had already deleted is not recovered by that replay;
// the transaction coordinator's timeout ends it). Downgrading to a version
// 0 reader works the same way the other way round: it deletes the version
// 1 files as unreadable and replays from the first segment. A version 2
// should still read version 1.
//
// # Compaction
//
// A log whose cleanup.policy includes compact is cleaned by Log.Clean,
// which Manager.Run calls (with log.cleaner.enable) every
// log.cleaner.backoff.ms for the due logs, dirtiest first, one at a time
// (Kafka's LogCleaner with one thread). The rules:
//
//   - Cleanable range: whole segments from the first one up to the first
//     uncleanable offset, the smallest of the active segment's base, the
//     last stable offset (so never past an open transaction; it is at
//     most the high watermark) and the base of the first segment holding
//     a record younger than min.compaction.lag.ms (by the segment's
//     largest timestamp), rounded down to a segment boundary.
//   - Dirty section: the segments of that range at or after the cleaner
//     checkpoint (first dirty offset). A log is due when dirty bytes /
//     bytes of the range >= min.cleanable.dirty.ratio, or when the first
//     dirty segment's first batch is older than max.compaction.lag.ms.
//   - A map key → offset of its last record is built over the dirty
//     section (exact keys, those over wire.CompactKeyMax by their SHA-256
//     digest, bounded by log.cleaner.dedupe.buffer.size: the
//     dirty section is cut after the segment where the map fills up);
//     records of aborted transactions (from the .txnindex entries) and
//     control batches do not enter it.
//   - Every segment of the range is rewritten: a record stays unless a
//     later record of the dirty section has its key, its batch belongs to
//     an aborted transaction, or it is a tombstone past the delete
//     horizon. Records without a key stay (the produce path refuses them
//     for compacted topics with INVALID_RECORD, as Kafka does).
//   - Batches keep their base offset, last offset delta, timestamps,
//     producer fields and codec: a batch that lost records is re-encoded
//     (filtered, recompressed with the same codec, new CRC). A compressed
//     batch is never decompressed whole: its records stream out of the
//     decompressor (wire.FilterCompactRecords), once to decide, once to
//     copy the kept ones into the compressor; one whose rebuilt section
//     would compress to over twice its size stays whole.
//     A batch left without records is dropped, unless it is its
//     producer's last data batch in the log (as Kafka keeps it: the
//     producer's epoch and last sequence stay in the log), a
//     transactional batch that may open a transaction (its producer's
//     first in the range or first after one of its control batches);
//     those stay as empty, uncompressed batches. A group of segments none
//     of whose batches stays becomes an empty segment, as in Kafka: reads
//     pass over it, it is never rolled into (it is not the active one),
//     and time retention deletes it with the expired segments around it. Kafka's rule is followed closely
//     because some clients cannot read past an empty batch (kafka-go,
//     segmentio/kafka-go#874). The producer state replayed from the
//     cleaned log keeps every producer's epoch and last batch; the batch
//     window of 5 shrinks to the batches that survive, which matters only
//     when no snapshot after the cleaned range is usable (snapshots are
//     written at every roll, and the range ends before the active
//     segment). The transaction state at every offset, the .txnindex
//     entries and recovery stay valid without change.
//   - Tombstones: the delete horizon is a simpler version of Kafka's: a
//     tombstone is removed when its segment was already below the cleaner
//     checkpoint before this clean (it was cleaned past once) and the
//     segment's largest timestamp is older than now - delete.retention.ms
//     (Kafka before 3.1 used the segment's modification time the same way).
//   - Transaction markers (control batches) are always kept, and so are
//     the .txnindex entries, which move with their markers.
//   - Consecutive segments whose original sizes add up to at most
//     segment.bytes (and whose offsets fit the indexes) are cleaned into
//     one segment named by the first one's base offset (Kafka's grouping).
//
// A clean reads pinned segments without locks (appends go on), then takes
// Log.writeMu for the swap, which it drops (ErrCleanAborted) if the
// segments changed meanwhile (retention, truncation, close). The swap of
// one group, fsyncing the directory after each step:
//
//  1. write the new segment as "<base>.log.cleaned", ".index.cleaned",
//     ".timeindex.cleaned" and, with entries, ".txnindex.cleaned"; fsync;
//  2. rename the index files to ".swap", sync, then the .log: a
//     "<base>.log.swap" means every .swap file of the group is there;
//  3. rename every file of the replaced segments to "<name>.deleted";
//  4. rename "<base>.log.swap" to "<base>.log", sync, then the indexes;
//  5. publish the new segment list (under Log.mu), remove the .deleted
//     files; readers that pinned the old segments keep their open files.
//
// On open, a "<base>.log.swap" completes the swap: the segments whose base
// offset lies in [base, end of the swapped log) are deleted and the .swap
// files take their final names (its old segments may already be gone, so
// it is never deleted). Other .swap files are deleted when
// "<base>.log.cleaned" is still there (step 2 was interrupted, the old
// segment is intact) and renamed otherwise (step 4 was interrupted).
// Then .cleaned and .deleted files are removed. A crash between groups
// leaves the earlier groups cleaned: a valid, partly cleaned log.
//
// The cleaner checkpoint is the offset checkpoint format (version 0, as
// above) in "cleaner-offset-checkpoint" in each log dir, with an entry per
// log that was cleaned: the end of the range the last clean rewrote. It is
// written with the other checkpoints and after each cleaner pass; a lost
// update only makes the next clean treat a clean range as dirty again.
// Migration follows the offset checkpoints.
//
// # Concurrency
//
// Lock order: Log.cleanMu (one clean at a time), then Log.syncMu (one
// group-commit fsync at a time, group_commit.go), then Log.writeMu, then
// Log.mu, then the mutex of a segment or index, or of a Waiter (a long
// poll's, woken under Log.mu, waiter.go). Manager.mu is never held while calling into a Log. Log.writeMu serializes mutations (Append, roll,
// truncation, retention, flush) and is held across their file IO; Log.mu
// guards what readers snapshot and is never held across file IO. The
// producer state is changed with both held and read with either. Readers pin
// the segments they read (reference counts) so retention can unlink files
// under them; the files are closed when the last reader is done, which is
// why file.delete.delay.ms is not needed.
//
// Read copies whole batches out of one segment with a single ReadAt;
// ReadSlice instead returns the pinned file range (a vfs.OSFiler on the OS
// file system) and the range's last offset, which the fetch path sends with
// sendfile (broker/sendfile.go) and releases once written. ReadSlice
// walks batch headers through a 16 KiB chunk, and over batches appended by
// this process jumps with the offset index (read_scan.go); a range that
// chunk holds comes with its bytes (FileSlice.Cached), which the fetch
// path copies instead of reading the file again. A long poll
// watches many logs with one Waiter, which names the logs that changed
// (waiter.go), and FileSlice.Extend grows its range by what they appended.
//
// Durability: with flush.messages=1 an Append returns after its batches
// and any new segment's directory entry are fsynced. The fsync is a group
// commit (Log.syncTo): it runs without writeMu, so appends that arrive
// meanwhile share the next one. The active segment's indexes are not
// fsynced per append (the last segment's indexes are rebuilt when a log
// opens); a roll, Flush and Close sync them. A roll fsyncs
// the closed segment before creating the next, so a crash never leaves a
// hole below a newer segment. Truncation is fsynced at once, so removed
// batches cannot reappear after a crash. If a crash lost data below the
// checkpointed log start offset, the log restarts empty at that offset
// rather than hand out offsets twice.
//
// A write or fsync failure takes the log offline (ErrLogFailed) until it is
// reopened; fsync is never retried. It also fails the log directory
// (dir_failure.go): once every log directory has failed the Manager calls
// ManagerOptions.OnAllLogDirsFailed, with which the samsa binary halts as
// Kafka's broker does.
package storage
