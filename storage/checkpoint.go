package storage

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/samsa-broker/samsa/storage/vfs"
)

// Checkpoint file names in each log directory (offset checkpoints) and in
// each partition directory (leader epochs, partition metadata).
const (
	recoveryPointCheckpointFile  = "recovery-point-offset-checkpoint"
	logStartOffsetCheckpointFile = "log-start-offset-checkpoint"
	highWatermarkCheckpointFile  = "replication-offset-checkpoint"
	cleanerOffsetCheckpointFile  = "cleaner-offset-checkpoint"
	leaderEpochCheckpointFile    = "leader-epoch-checkpoint"
	partitionMetadataFile        = "partition.metadata"
)

// checkpointVersion is the only version of the text checkpoint formats (the
// first line of each file). A new version must keep reading version 0.
const checkpointVersion = 0

// maxCheckpointBytes bounds what readCheckpointLines accepts.
const maxCheckpointBytes = 64 << 20

// readFile reads a whole small file.
func readFile(fsys vfs.FS, name string) ([]byte, error) {
	f, err := fsys.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	n, err := f.Size()
	if err != nil {
		return nil, err
	}
	if n > maxCheckpointBytes {
		return nil, fmt.Errorf("%w: %s is %d bytes", ErrCorrupt, name, n)
	}
	b := make([]byte, n)
	if _, err := f.ReadAt(b, 0); err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	return b, nil
}

// writeFileAtomic replaces name with data durably: write a temporary file,
// sync it, rename it over name, sync the directory.
func writeFileAtomic(fsys vfs.FS, name string, data []byte) error {
	tmp := name + tmpSuffix
	f, err := fsys.Create(tmp)
	if err != nil {
		return fmt.Errorf("storage: write %s: %w", name, err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("storage: write %s: %w", name, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("storage: sync %s: %w", name, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("storage: close %s: %w", name, err)
	}
	if err := fsys.Rename(tmp, name); err != nil {
		return fmt.Errorf("storage: rename %s: %w", name, err)
	}
	if err := fsys.SyncDir(filepath.Dir(name)); err != nil {
		return fmt.Errorf("storage: sync dir of %s: %w", name, err)
	}
	return nil
}

// parseCheckpointLines checks the "version\ncount\n" header of a text
// checkpoint and returns its entry lines split into fields, each with
// fieldCount fields.
func parseCheckpointLines(b []byte, fieldCount int) ([][]string, error) {
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) < 2 {
		return nil, fmt.Errorf("%w: checkpoint too short", ErrCorrupt)
	}
	version, err := strconv.Atoi(strings.TrimSpace(lines[0]))
	if err != nil || version != checkpointVersion {
		return nil, fmt.Errorf("%w: checkpoint version %q", ErrCorrupt, lines[0])
	}
	count, err := strconv.Atoi(strings.TrimSpace(lines[1]))
	if err != nil || count < 0 || count != len(lines)-2 {
		return nil, fmt.Errorf("%w: checkpoint count %q for %d entries", ErrCorrupt, lines[1], len(lines)-2)
	}
	out := make([][]string, 0, count)
	for _, line := range lines[2:] {
		fields := strings.Fields(line)
		if len(fields) != fieldCount {
			return nil, fmt.Errorf("%w: checkpoint line %q", ErrCorrupt, line)
		}
		out = append(out, fields)
	}
	return out, nil
}

// parseOffsetCheckpoint decodes a "<topic> <partition> <offset>" checkpoint.
func parseOffsetCheckpoint(b []byte) (map[TopicPartition]int64, error) {
	lines, err := parseCheckpointLines(b, 3)
	if err != nil {
		return nil, err
	}
	out := make(map[TopicPartition]int64, len(lines))
	for _, f := range lines {
		p, err1 := strconv.ParseInt(f[1], 10, 32)
		off, err2 := strconv.ParseInt(f[2], 10, 64)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("%w: checkpoint entry %q", ErrCorrupt, strings.Join(f, " "))
		}
		out[TopicPartition{Topic: f[0], Partition: int32(p)}] = off
	}
	return out, nil
}

// encodeOffsetCheckpoint encodes offsets sorted by topic and partition.
func encodeOffsetCheckpoint(offsets map[TopicPartition]int64) []byte {
	tps := make([]TopicPartition, 0, len(offsets))
	for tp := range offsets {
		tps = append(tps, tp)
	}
	sort.Slice(tps, func(i, j int) bool {
		if tps[i].Topic != tps[j].Topic {
			return tps[i].Topic < tps[j].Topic
		}
		return tps[i].Partition < tps[j].Partition
	})
	var sb strings.Builder
	fmt.Fprintf(&sb, "%d\n%d\n", checkpointVersion, len(tps))
	for _, tp := range tps {
		fmt.Fprintf(&sb, "%s %d %d\n", tp.Topic, tp.Partition, offsets[tp])
	}
	return []byte(sb.String())
}

// readOffsetCheckpoint reads a checkpoint file; a missing file is empty.
func readOffsetCheckpoint(fsys vfs.FS, name string) (map[TopicPartition]int64, error) {
	if !fsys.Exists(name) {
		return map[TopicPartition]int64{}, nil
	}
	b, err := readFile(fsys, name)
	if err != nil {
		return nil, fmt.Errorf("storage: read %s: %w", name, err)
	}
	m, err := parseOffsetCheckpoint(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return m, nil
}
