package storage

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Partition directories that metadata does not explain are never deleted
// (issue 11 items 9, 10 and 13). A directory of a topic id the metadata
// does not know, or of a partition not assigned to this broker, is renamed
// aside as "<topic>-<N>.<32 hex>-stray" (Kafka's KIP-858 stray logs) and
// left there for the operator; one whose partition.metadata names the id
// of another topic is taken offline in place. A directory that lost its
// partition.metadata is given the id the metadata has for its name.
//
// Directory names are capped at 255 bytes, the file name limit of Linux
// file systems: a 249-character topic name plus "-0.<32 hex>-delete" is
// too long, and before the cap DeleteTopics of such a topic answered 0
// while its directory stayed in place, to be served again as the data of
// a new topic of the same name.

const (
	deleteDirSuffix = "-delete"
	strayDirSuffix  = "-stray"
	// maxFileNameBytes is NAME_MAX of ext4, xfs and btrfs.
	maxFileNameBytes = 255
)

// ErrLogOffline is returned by CreateLog for a partition whose directory
// was taken offline (TakeOffline): it stays on disk, untouched, until an
// operator resolves it and restarts the broker.
var ErrLogOffline = errors.New("storage: partition log offline")

// ErrTopicIDMismatch is returned by CreateLog when the open log of the
// partition belongs to another topic id.
var ErrTopicIDMismatch = errors.New("storage: partition log belongs to another topic id")

// setAsideDirName returns "<topic>-<N>.<32 hex><suffix>", the topic cut
// so that the name fits maxFileNameBytes (topic names are ASCII).
func setAsideDirName(tp TopicPartition, suffix string) string {
	var id [16]byte
	_, _ = rand.Read(id[:])
	tail := "-" + strconv.Itoa(int(tp.Partition)) + "." + hex.EncodeToString(id[:]) + suffix
	topic := tp.Topic
	if n := maxFileNameBytes - len(tail); len(topic) > n {
		topic = topic[:n]
	}
	return topic + tail
}

// parseSetAsideDirName parses a name made by setAsideDirName with suffix:
// the topic (possibly cut) and the partition.
func parseSetAsideDirName(name, suffix string) (topicPrefix string, partition int32, ok bool) {
	rest, found := strings.CutSuffix(name, suffix)
	if !found {
		return "", 0, false
	}
	dot := strings.LastIndexByte(rest, '.')
	if dot < 0 || len(rest)-dot-1 != 32 {
		return "", 0, false
	}
	tp, ok := parsePartitionDir(rest[:dot])
	if !ok {
		return "", 0, false
	}
	return tp.Topic, tp.Partition, true
}

// TakeOffline closes the log of tp and stops serving it, leaving its
// directory as it is; CreateLog refuses tp from then on (ErrLogOffline)
// until a restart. reason is logged with the partition at ERROR.
func (m *Manager) TakeOffline(tp TopicPartition, reason string) {
	m.mu.Lock()
	ml, ok := m.mu.logs[tp]
	delete(m.mu.logs, tp)
	m.mu.offline[tp] = true
	m.mu.Unlock()
	if !ok {
		return
	}
	m.logger.Error("storage: partition log taken offline; its directory is kept as it is, resolve it by hand and restart",
		"partition", tp.String(), "dir", filepath.Join(ml.dir, tp.String()), "reason", reason,
		"log_start_offset", ml.log.LogStartOffset(), "log_end_offset", ml.log.LogEndOffset(), "bytes", ml.log.Size())
	if err := ml.log.Close(); err != nil && !errors.Is(err, ErrClosed) {
		m.logger.Warn("storage: closing offline log", "partition", tp.String(), "err", err)
	}
}

// MoveStray closes the log of tp and renames its directory aside as a
// "-stray" directory, which OpenManager keeps (and logs) on every start and
// never deletes. reason is logged at ERROR with the partition, its offsets
// and bytes. A tp without a log is a no-op.
func (m *Manager) MoveStray(tp TopicPartition, reason string) error {
	ml, ok := m.detach(tp)
	if !ok {
		return nil
	}
	start, end, size := ml.log.LogStartOffset(), ml.log.LogEndOffset(), ml.log.Size()
	if err := ml.log.Close(); err != nil && !errors.Is(err, ErrClosed) {
		m.logger.Warn("storage: closing stray log", "partition", tp.String(), "err", err)
	}
	to, err := m.moveAside(ml.dir, tp)
	if err != nil {
		m.mu.Lock()
		m.mu.offline[tp] = true
		m.mu.Unlock()
		return err
	}
	m.logger.Error("storage: partition directory not in metadata moved aside as stray (not deleted; remove it by hand once it is not needed)",
		"partition", tp.String(), "reason", reason, "moved_to", to,
		"log_start_offset", start, "log_end_offset", end, "bytes", size)
	return nil
}

// moveAside renames dir/tp to a "-stray" name and syncs dir.
func (m *Manager) moveAside(dir string, tp TopicPartition) (string, error) {
	from := filepath.Join(dir, tp.String())
	to := filepath.Join(dir, setAsideDirName(tp, strayDirSuffix))
	if err := m.fs.Rename(from, to); err != nil {
		return "", fmt.Errorf("storage: move stray %s aside: %w", from, err)
	}
	if err := m.fs.SyncDir(dir); err != nil {
		return "", fmt.Errorf("storage: sync %s: %w", dir, err)
	}
	return to, nil
}

// SetTopicID writes tp's partition.metadata with id, for a log that has
// none (the file was lost): the id comes from the metadata, which knows
// the partition by name.
func (m *Manager) SetTopicID(tp TopicPartition, id [16]byte) error {
	m.mu.Lock()
	ml, ok := m.mu.logs[tp]
	m.mu.Unlock()
	if !ok {
		return fmt.Errorf("storage: no log for %s", tp)
	}
	dir := filepath.Join(ml.dir, tp.String())
	if err := writeFileAtomic(m.fs, filepath.Join(dir, partitionMetadataFile), encodePartitionMetadata(id)); err != nil {
		return err
	}
	if err := m.fs.SyncDir(dir); err != nil {
		return fmt.Errorf("storage: sync %s: %w", dir, err)
	}
	m.mu.Lock()
	ml.topicID = id
	m.mu.Unlock()
	m.logger.Warn("storage: partition.metadata was missing; rewritten with the topic id from the metadata",
		"partition", tp.String(), "dir", dir)
	return nil
}

// claimDir makes path (dir/tp, not an open log) usable for a new log of
// topicID: an absent or empty directory, or one whose partition.metadata
// has topicID, is used; anything else holds another topic's data and is
// moved aside as stray, never reused and never deleted.
func (m *Manager) claimDir(dir string, tp TopicPartition, topicID [16]byte) error {
	path := filepath.Join(dir, tp.String())
	if !m.fs.Exists(path) {
		return nil
	}
	names, err := m.fs.ReadDir(path)
	if err != nil {
		return fmt.Errorf("storage: list %s: %w", path, err)
	}
	if len(names) == 0 {
		return nil
	}
	if !slices.ContainsFunc(names, func(n string) bool { return !strings.HasSuffix(n, tmpSuffix) }) {
		// Only what an interrupted atomic write leaves (a process
		// killed while creating this log, before partition.metadata
		// was renamed into place): no data, so the directory is this
		// log's to use.
		for _, n := range names {
			if err := m.fs.Remove(filepath.Join(path, n)); err != nil {
				return fmt.Errorf("storage: remove %s: %w", filepath.Join(path, n), err)
			}
		}
		m.logger.Info("storage: removed the temporary files of an interrupted log creation", "partition", tp.String(), "files", len(names))
		return nil
	}
	reason := "directory holds data but no partition.metadata"
	if b, err := readFile(m.fs, filepath.Join(path, partitionMetadataFile)); err == nil {
		id, err := parsePartitionMetadata(b)
		if err == nil && id == topicID {
			return nil
		}
		reason = "directory belongs to another topic id"
		if err != nil {
			reason = "unreadable partition.metadata: " + err.Error()
		}
	}
	to, err := m.moveAside(dir, tp)
	if err != nil {
		return err
	}
	m.logger.Error("storage: partition directory of another topic moved aside as stray before creating the log (not deleted)",
		"partition", tp.String(), "reason", reason, "moved_to", to)
	return nil
}

// MissingPartition is a partition the checkpoints of a log directory name
// but whose directory was not there at start, with its checkpointed
// offsets (-1: not checkpointed).
type MissingPartition struct {
	Dir                                          string
	LogStartOffset, RecoveryPoint, HighWatermark int64
}

// MissingAtStart returns the partitions whose directories were gone at
// start (removed from outside, or deleted by DeleteLog shortly before a
// crash, before the checkpoints were written again). Only the caller knows
// which of them the metadata still assigns here, and so which lost data.
func (m *Manager) MissingAtStart() map[TopicPartition]MissingPartition {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[TopicPartition]MissingPartition, len(m.mu.missing))
	for tp, mp := range m.mu.missing {
		out[tp] = mp
	}
	return out
}

// reportSetAside logs, at start, the stray directories kept in dir, and
// records the partitions the checkpoints of dir name whose directory is
// gone, skipping those a "-delete" or "-stray" directory accounts for.
// REQUIRES: called from OpenManager only (m.mu not yet shared).
func (m *Manager) reportSetAside(dir string, names []string, recovery, starts, hws map[TopicPartition]int64) {
	type key struct {
		prefix    string
		partition int32
	}
	var setAside []key
	for _, name := range names {
		for _, suffix := range []string{deleteDirSuffix, strayDirSuffix, movingDirSuffix} {
			if topic, p, ok := parseSetAsideDirName(name, suffix); ok {
				setAside = append(setAside, key{topic, p})
				if suffix == strayDirSuffix {
					m.logger.Warn("storage: stray partition directory kept from an earlier start (not served; remove it by hand once it is not needed)",
						"dir", filepath.Join(dir, name))
				}
			}
		}
	}
	accounted := func(tp TopicPartition) bool {
		for _, k := range setAside {
			if k.partition == tp.Partition && strings.HasPrefix(tp.Topic, k.prefix) {
				return true
			}
		}
		return false
	}
	for tp, rp := range recovery {
		if _, ok := m.mu.logs[tp]; ok || m.mu.offline[tp] || accounted(tp) {
			continue
		}
		m.mu.missing[tp] = MissingPartition{Dir: filepath.Join(dir, tp.String()),
			LogStartOffset: offsetOr(starts, tp, -1), RecoveryPoint: rp, HighWatermark: offsetOr(hws, tp, -1)}
	}
}
