package storage

import (
	"fmt"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/samsa-broker/samsa/storage/vfs"
)

// epochEntry says that leader epoch Epoch wrote its first record at StartOffset.
type epochEntry struct {
	Epoch       int32
	StartOffset int64
}

// leaderEpochCache maps leader epochs to their start offsets, persisted in
// the partition's leader-epoch-checkpoint file. Entries are sorted by both
// epoch and start offset.
// REQUIRES: Log.writeMu held for mutation; Log.mu for reads without writeMu.
type leaderEpochCache struct {
	fs      vfs.FS
	file    string
	entries []epochEntry
}

func loadLeaderEpochCache(fsys vfs.FS, dir string) (*leaderEpochCache, error) {
	c := &leaderEpochCache{fs: fsys, file: filepath.Join(dir, leaderEpochCheckpointFile)}
	if !fsys.Exists(c.file) {
		return c, nil
	}
	b, err := readFile(fsys, c.file)
	if err != nil {
		return nil, fmt.Errorf("storage: read %s: %w", c.file, err)
	}
	entries, err := parseLeaderEpochCheckpoint(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", c.file, err)
	}
	c.entries = entries
	return c, nil
}

// parseLeaderEpochCheckpoint decodes "0\n<count>\n<epoch> <offset>\n...".
func parseLeaderEpochCheckpoint(b []byte) ([]epochEntry, error) {
	lines, err := parseCheckpointLines(b, 2)
	if err != nil {
		return nil, err
	}
	var out []epochEntry
	for _, f := range lines {
		e, err1 := strconv.ParseInt(f[0], 10, 32)
		off, err2 := strconv.ParseInt(f[1], 10, 64)
		if err1 != nil || err2 != nil || e < 0 || off < 0 {
			return nil, fmt.Errorf("%w: leader epoch entry %q", ErrCorrupt, strings.Join(f, " "))
		}
		if n := len(out); n > 0 && (int32(e) <= out[n-1].Epoch || off < out[n-1].StartOffset) {
			return nil, fmt.Errorf("%w: leader epoch entries out of order", ErrCorrupt)
		}
		out = append(out, epochEntry{Epoch: int32(e), StartOffset: off})
	}
	return out, nil
}

func encodeLeaderEpochCheckpoint(entries []epochEntry) []byte {
	var sb strings.Builder
	fmt.Fprintf(&sb, "%d\n%d\n", checkpointVersion, len(entries))
	for _, e := range entries {
		fmt.Fprintf(&sb, "%d %d\n", e.Epoch, e.StartOffset)
	}
	return []byte(sb.String())
}

func (c *leaderEpochCache) persist() error {
	return writeFileAtomic(c.fs, c.file, encodeLeaderEpochCheckpoint(c.entries))
}

func (c *leaderEpochCache) latest() (epochEntry, bool) {
	if len(c.entries) == 0 {
		return epochEntry{}, false
	}
	return c.entries[len(c.entries)-1], true
}

// assign records that epoch starts at startOffset, dropping entries it
// supersedes (same or higher epoch, or same or higher start offset). It
// reports whether anything changed.
func (c *leaderEpochCache) assign(epoch int32, startOffset int64) bool {
	if last, ok := c.latest(); ok {
		if last.Epoch == epoch && last.StartOffset == startOffset {
			return false
		}
		if last.Epoch == epoch && last.StartOffset < startOffset {
			return false // the epoch already started earlier
		}
	}
	kept := c.entries[:0]
	for _, e := range c.entries {
		if e.Epoch < epoch && e.StartOffset < startOffset {
			kept = append(kept, e)
		}
	}
	c.entries = append(kept, epochEntry{Epoch: epoch, StartOffset: startOffset})
	return true
}

// truncateFromEnd removes the epochs that start at or after endOffset.
func (c *leaderEpochCache) truncateFromEnd(endOffset int64) bool {
	i := sort.Search(len(c.entries), func(i int) bool { return c.entries[i].StartOffset >= endOffset })
	if i == len(c.entries) {
		return false
	}
	c.entries = c.entries[:i]
	return true
}

// truncateFromStart drops epochs wholly before startOffset, moving the start
// of the epoch that contains startOffset up to it.
func (c *leaderEpochCache) truncateFromStart(startOffset int64) bool {
	i := sort.Search(len(c.entries), func(i int) bool { return c.entries[i].StartOffset > startOffset })
	// entries[:i] start at or before startOffset; keep only the last of them.
	if i == 0 || (i == 1 && c.entries[0].StartOffset == startOffset) {
		return false
	}
	last := c.entries[i-1]
	last.StartOffset = startOffset
	c.entries = append([]epochEntry{last}, c.entries[i:]...)
	return true
}

func (c *leaderEpochCache) clear() bool {
	changed := len(c.entries) > 0
	c.entries = nil
	return changed
}

// endOffsetFor answers OffsetForLeaderEpoch: the largest epoch <= epoch and
// the start offset of the next higher epoch (the log end offset for the
// latest epoch). Unknown epochs give (-1, -1).
func (c *leaderEpochCache) endOffsetFor(epoch int32, logEndOffset int64) (int32, int64) {
	if epoch < 0 || len(c.entries) == 0 {
		return -1, -1
	}
	if last, _ := c.latest(); last.Epoch == epoch {
		return epoch, logEndOffset
	}
	// First entry with a higher epoch.
	i := sort.Search(len(c.entries), func(i int) bool { return c.entries[i].Epoch > epoch })
	if i == len(c.entries) {
		return -1, -1
	}
	if i == 0 {
		return epoch, c.entries[0].StartOffset
	}
	return c.entries[i-1].Epoch, c.entries[i].StartOffset
}

// AssignEpochStartOffset records that leader epoch starts at startOffset
// (called by the leader when it becomes leader, and by followers for each
// new epoch they see) and persists the leader-epoch-checkpoint.
func (l *Log) AssignEpochStartOffset(epoch int32, startOffset int64) error {
	if epoch < 0 || startOffset < 0 {
		return fmt.Errorf("storage: invalid leader epoch %d at %d", epoch, startOffset)
	}
	l.writeMu.Lock()
	defer l.writeMu.Unlock()
	l.mu.Lock()
	if err := l.checkWritableLocked(); err != nil {
		l.mu.Unlock()
		return err
	}
	if last, ok := l.epochs.latest(); ok && epoch < last.Epoch {
		// A stale epoch (a restarted node replaying old metadata images
		// that name it leader): assigning it would drop every newer
		// entry, and the leader would then tell followers that an old
		// epoch ran to its log end, making them truncate what they
		// share with it. Epochs only grow; keep the history.
		l.mu.Unlock()
		l.logger.Warn("storage: ignoring leader epoch older than the newest in the cache",
			"epoch", epoch, "start_offset", startOffset, "latest_epoch", last.Epoch, "latest_start_offset", last.StartOffset)
		return nil
	}
	changed := l.epochs.assign(epoch, startOffset)
	l.mu.Unlock()
	if !changed {
		return nil
	}
	if err := l.epochs.persist(); err != nil {
		return l.fail(err)
	}
	return nil
}

// EndOffsetForEpoch answers OffsetForLeaderEpoch for epoch: the largest
// known epoch <= epoch and the offset at which it ended (the log end offset
// for the current epoch), or (-1, -1) if unknown.
func (l *Log) EndOffsetForEpoch(epoch int32) (leaderEpoch int32, endOffset int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.epochs.endOffsetFor(epoch, l.mu.logEndOffset)
}

// LatestEpoch returns the newest leader epoch in the cache, or -1.
func (l *Log) LatestEpoch() int32 {
	l.mu.Lock()
	defer l.mu.Unlock()
	if e, ok := l.epochs.latest(); ok {
		return e.Epoch
	}
	return -1
}
