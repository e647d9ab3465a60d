package storage

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/samsa-broker/samsa/storage/vfs"
)

// ErrNoLogDirs is returned by OpenManager without any directory.
var ErrNoLogDirs = errors.New("storage: no log directories")

// TopicPartition names a partition.
type TopicPartition struct {
	Topic     string
	Partition int32
}

// String returns the partition directory name, "topic-N".
func (tp TopicPartition) String() string { return tp.Topic + "-" + strconv.Itoa(int(tp.Partition)) }

// ManagerOptions configures OpenManager. Zero intervals take defaults.
type ManagerOptions struct {
	FS     vfs.FS
	Dirs   []string
	Now    func() time.Time
	Logger *slog.Logger
	// RetentionCheckInterval is log.retention.check.interval.ms (default 5m).
	RetentionCheckInterval time.Duration
	// FlushCheckInterval is how often flush.ms is checked (default 1s).
	FlushCheckInterval time.Duration
	// CheckpointInterval is how often the offset checkpoints are written (default 5s).
	CheckpointInterval time.Duration
	// CleanerEnable runs the log cleaner (log.cleaner.enable) from Run
	// for logs whose cleanup.policy includes compact.
	CleanerEnable bool
	// CleanerBackoff is how often the cleaner looks for dirty logs
	// (log.cleaner.backoff.ms, default 15s).
	CleanerBackoff time.Duration
	// CleanerMapBytes bounds the key map of one clean
	// (log.cleaner.dedupe.buffer.size, default DefaultCleanerMapBytes).
	CleanerMapBytes int64
	// ProducerExpiration is producer.id.expiration.ms (default 1 day):
	// every ProducerExpirationCheckInterval (producer.id.expiration.
	// check.interval.ms, default 10m) Run forgets, in every log, the
	// producers whose last batch is that old (Log.ExpireProducers).
	ProducerExpiration              time.Duration
	ProducerExpirationCheckInterval time.Duration
	// OpenFileBudget is how many files OpenManager may open for the
	// partitions it loads (file_budget.go); partitions beyond it stay
	// unopened and offline. 0 means no limit.
	OpenFileBudget int
	// OnAllLogDirsFailed, when set, is called once when every log
	// directory has failed (dir_failure.go): a log in it went offline
	// after an IO error, or its checkpoints could not be written. Kafka
	// halts the broker then; nil keeps the node running with its failed
	// logs offline.
	OnAllLogDirsFailed func(dirs []string, err error)
	// OnLogDirFailed, when set, is called once per log directory when it
	// fails (dir_failure.go), before OnAllLogDirsFailed when it is the
	// last. It may be called under a log's locks: it must not call back
	// into the Manager or the log; it hands the directory to a goroutine
	// that takes it offline (TakeDirOffline) and reports it.
	OnLogDirFailed func(dir string, err error)
	// CordonedDirs are log directories (of Dirs) that get no new
	// partition while another online directory exists
	// (cordoned.log.dirs, KIP-1066; dir_choice.go).
	CordonedDirs []string
}

// Manager owns the logs of all partitions in a set of log directories, and
// the per-directory offset checkpoints.
type Manager struct {
	fs     vfs.FS
	dirs   []string
	now    func() time.Time
	logger *slog.Logger
	opts   ManagerOptions

	// checkpointMu serializes checkpoint writes.
	checkpointMu sync.Mutex
	// movedFrom maps the partitions whose move committed before a crash
	// to their old log directory (OpenManager only; move.go).
	movedFrom map[TopicPartition]string
	// interrupted maps the partitions whose move a stop or crash
	// interrupted to its target directory (move.go). REQUIRES: mu after
	// OpenManager.
	interrupted map[TopicPartition]string
	// testMoveStep, when set by a test, is called at each step of a
	// move (move.go) with the step's name.
	testMoveStep func(step string)
	// openedFiles counts the files of the partitions loaded at start and
	// unopened the partitions left out (OpenManager only).
	openedFiles int
	unopened    []string

	mu struct {
		sync.Mutex
		logs     map[TopicPartition]*managedLog
		creating map[TopicPartition]bool
		// offline are partitions whose directory TakeOffline (or a
		// failed MoveStray) left in place: not served, never re-created
		// until a restart.
		offline map[TopicPartition]bool
		// missing are partitions whose directories were gone at start.
		missing map[TopicPartition]MissingPartition
		// moves are the moves to another log directory in progress
		// (move.go).
		moves  map[TopicPartition]*logMove
		closed bool
	}

	// failed tracks the failed log directories (dir_failure.go). Its
	// mutex is a leaf: a log's failure reports under the log's writeMu.
	failed struct {
		sync.Mutex
		dirs map[string]bool
		all  bool // OnAllLogDirsFailed was called
		// offline are the failed dirs TakeDirOffline emptied.
		offline map[string]bool
		// cordoned replaces ManagerOptions.CordonedDirs once set
		// (SetCordonedDirs, dir_choice.go).
		cordoned    []string
		cordonedSet bool
	}
}

type managedLog struct {
	log     *Log
	dir     string // the log directory holding the partition directory
	topicID [16]byte
}

// parsePartitionDir splits "topic-N" into its topic and partition.
func parsePartitionDir(name string) (TopicPartition, bool) {
	i := strings.LastIndexByte(name, '-')
	if i <= 0 || i == len(name)-1 {
		return TopicPartition{}, false
	}
	p, err := strconv.ParseInt(name[i+1:], 10, 32)
	if err != nil || p < 0 || strconv.FormatInt(p, 10) != name[i+1:] {
		return TopicPartition{}, false
	}
	return TopicPartition{Topic: name[:i], Partition: int32(p)}, true
}

// OpenManager opens every partition log found in o.Dirs.
func OpenManager(o ManagerOptions) (*Manager, error) {
	if len(o.Dirs) == 0 {
		return nil, ErrNoLogDirs
	}
	if o.FS == nil {
		o.FS = vfs.OS
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.RetentionCheckInterval <= 0 {
		o.RetentionCheckInterval = 5 * time.Minute
	}
	if o.FlushCheckInterval <= 0 {
		o.FlushCheckInterval = time.Second
	}
	if o.CheckpointInterval <= 0 {
		o.CheckpointInterval = 5 * time.Second
	}
	if o.CleanerBackoff <= 0 {
		o.CleanerBackoff = 15 * time.Second
	}
	if o.ProducerExpiration <= 0 {
		o.ProducerExpiration = 24 * time.Hour
	}
	if o.ProducerExpirationCheckInterval <= 0 {
		o.ProducerExpirationCheckInterval = 10 * time.Minute
	}
	m := &Manager{fs: o.FS, dirs: o.Dirs, now: o.Now, logger: o.Logger, opts: o}
	m.mu.logs = map[TopicPartition]*managedLog{}
	m.mu.creating = map[TopicPartition]bool{}
	m.mu.offline = map[TopicPartition]bool{}
	m.mu.missing = map[TopicPartition]MissingPartition{}
	m.mu.moves = map[TopicPartition]*logMove{}
	m.failed.dirs = map[string]bool{}
	m.failed.offline = map[string]bool{}
	m.interrupted = map[TopicPartition]string{}
	movedFrom, err := m.settleMoves()
	if err != nil {
		return nil, err
	}
	m.movedFrom = movedFrom
	for _, dir := range o.Dirs {
		if err := m.loadDir(dir); err != nil {
			m.closeLogs()
			return nil, err
		}
	}
	if err := m.removeMovedAway(); err != nil {
		m.logger.Warn("storage: removing the old directories of moved logs", "err", err)
	}
	m.movedFrom = nil
	m.reportUnopened()
	return m, nil
}

func (m *Manager) loadDir(dir string) error {
	if err := m.fs.MkdirAll(dir); err != nil {
		return fmt.Errorf("storage: create log dir %s: %w", dir, err)
	}
	recovery, err := readOffsetCheckpoint(m.fs, filepath.Join(dir, recoveryPointCheckpointFile))
	if err != nil {
		m.logger.Warn("storage: ignoring unreadable checkpoint", "err", err)
		recovery = map[TopicPartition]int64{}
	}
	starts, err := readOffsetCheckpoint(m.fs, filepath.Join(dir, logStartOffsetCheckpointFile))
	if err != nil {
		m.logger.Warn("storage: ignoring unreadable checkpoint", "err", err)
		starts = map[TopicPartition]int64{}
	}
	hws, err := readOffsetCheckpoint(m.fs, filepath.Join(dir, highWatermarkCheckpointFile))
	if err != nil {
		m.logger.Warn("storage: ignoring unreadable checkpoint", "err", err)
		hws = map[TopicPartition]int64{}
	}
	cleaned, err := readOffsetCheckpoint(m.fs, filepath.Join(dir, cleanerOffsetCheckpointFile))
	if err != nil {
		m.logger.Warn("storage: ignoring unreadable checkpoint", "err", err)
		cleaned = map[TopicPartition]int64{}
	}
	names, err := m.fs.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("storage: list log dir %s: %w", dir, err)
	}
	// A log whose move committed just before a crash may not be in its
	// new directory's checkpoints yet: its old directory's describe it
	// (move.go).
	openRecovery, openStarts, openHws, openCleaned := recovery, starts, hws, cleaned
	for tp, from := range m.movedFrom {
		if from == dir {
			continue
		}
		if _, ok := recovery[tp]; ok {
			continue
		}
		openRecovery, openStarts = m.movedCheckpoint(from, recoveryPointCheckpointFile, tp, openRecovery), m.movedCheckpoint(from, logStartOffsetCheckpointFile, tp, openStarts)
		openHws, openCleaned = m.movedCheckpoint(from, highWatermarkCheckpointFile, tp, openHws), m.movedCheckpoint(from, cleanerOffsetCheckpointFile, tp, openCleaned)
	}
	for _, name := range names {
		path := filepath.Join(dir, name)
		if strings.HasSuffix(name, deleteDirSuffix) {
			m.logger.Info("storage: removing deleted partition dir", "dir", path)
			if err := m.fs.RemoveAll(path); err != nil {
				return fmt.Errorf("storage: remove %s: %w", path, err)
			}
			continue
		}
		tp, ok := parsePartitionDir(name)
		if !ok {
			continue
		}
		if _, ok := m.mu.logs[tp]; ok {
			return fmt.Errorf("storage: partition %s found in two log dirs", tp)
		}
		if m.fs.Exists(filepath.Join(path, partitionMetadataFile)) || m.hasSegments(path) {
			files := m.partitionFiles(path)
			if m.opts.OpenFileBudget > 0 && m.openedFiles+files > m.opts.OpenFileBudget {
				m.leaveUnopened(dir, tp)
				continue
			}
			if err := m.openPartition(dir, tp, openRecovery, openStarts, openHws, openCleaned); err != nil {
				if outOfFiles(err) {
					m.leaveUnopened(dir, tp)
					continue
				}
				return err
			}
			m.openedFiles += files
		}
	}
	m.reportSetAside(dir, names, recovery, starts, hws)
	return nil
}

// movedCheckpoint returns offsets with tp's entry of the checkpoint file
// name of log directory from added (offsets is copied, never modified).
func (m *Manager) movedCheckpoint(from, name string, tp TopicPartition, offsets map[TopicPartition]int64) map[TopicPartition]int64 {
	old, err := readOffsetCheckpoint(m.fs, filepath.Join(from, name))
	v, ok := old[tp]
	if err != nil || !ok {
		return offsets
	}
	out := maps.Clone(offsets)
	if out == nil {
		out = map[TopicPartition]int64{}
	}
	out[tp] = v
	return out
}

func (m *Manager) hasSegments(path string) bool {
	names, err := m.fs.ReadDir(path)
	if err != nil {
		return false
	}
	for _, n := range names {
		if _, ok := parseSegmentBase(n); ok {
			return true
		}
	}
	return false
}

func offsetOr(m map[TopicPartition]int64, tp TopicPartition, def int64) int64 {
	if v, ok := m[tp]; ok {
		return v
	}
	return def
}

func (m *Manager) openPartition(dir string, tp TopicPartition, recovery, starts, hws, cleaned map[TopicPartition]int64) error {
	path := filepath.Join(dir, tp.String())
	var topicID [16]byte
	if mp := filepath.Join(path, partitionMetadataFile); m.fs.Exists(mp) {
		b, err := readFile(m.fs, mp)
		if err != nil {
			return fmt.Errorf("storage: read %s: %w", mp, err)
		}
		if topicID, err = parsePartitionMetadata(b); err != nil {
			return fmt.Errorf("%s: %w", mp, err)
		}
	}
	l, err := OpenLog(LogOptions{
		FS: m.fs, Dir: path, Config: DefaultLogConfig(), Now: m.now, Logger: m.logger,
		RecoveryPoint:     offsetOr(recovery, tp, -1),
		LogStartOffset:    offsetOr(starts, tp, -1),
		CleanerCheckpoint: offsetOr(cleaned, tp, 0),
		OnFailure:         m.dirFailure(dir),
	})
	if err != nil {
		return fmt.Errorf("storage: open %s: %w", path, err)
	}
	if hw, ok := hws[tp]; ok {
		l.SetHighWatermark(hw)
	}
	m.mu.logs[tp] = &managedLog{log: l, dir: dir, topicID: topicID}
	return nil
}

// parsePartitionMetadata decodes "version: 0\ntopic_id: <base64url uuid>".
func parsePartitionMetadata(b []byte) ([16]byte, error) {
	var id [16]byte
	fields := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		if line = strings.TrimSpace(line); line == "" {
			continue
		}
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			return id, fmt.Errorf("%w: partition metadata line %q", ErrCorrupt, line)
		}
		fields[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	if fields["version"] != "0" {
		return id, fmt.Errorf("%w: partition metadata version %q", ErrCorrupt, fields["version"])
	}
	raw, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(fields["topic_id"], "="))
	if err != nil || len(raw) != 16 {
		return id, fmt.Errorf("%w: partition metadata topic_id %q", ErrCorrupt, fields["topic_id"])
	}
	copy(id[:], raw)
	return id, nil
}

func encodePartitionMetadata(id [16]byte) []byte {
	return []byte("version: 0\ntopic_id: " + base64.RawURLEncoding.EncodeToString(id[:]) + "\n")
}

// Log returns the log of tp.
func (m *Manager) Log(tp TopicPartition) (*Log, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	ml, ok := m.mu.logs[tp]
	if !ok {
		return nil, false
	}
	return ml.log, true
}

// Logs returns a copy of the partition-to-log map.
func (m *Manager) Logs() map[TopicPartition]*Log {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[TopicPartition]*Log, len(m.mu.logs))
	for tp, ml := range m.mu.logs {
		out[tp] = ml.log
	}
	return out
}

// TopicID returns the topic ID recorded for tp (zero if unknown).
func (m *Manager) TopicID(tp TopicPartition) [16]byte {
	m.mu.Lock()
	defer m.mu.Unlock()
	if ml, ok := m.mu.logs[tp]; ok {
		return ml.topicID
	}
	return [16]byte{}
}

// CreateLog creates the log of tp in the log directory holding the fewest
// partitions (never a cordoned one while another is online), writing its
// partition.metadata. If the log exists it is returned as is.
func (m *Manager) CreateLog(tp TopicPartition, topicID [16]byte, cfg LogConfig) (*Log, error) {
	return m.createLog(tp, topicID, cfg, "")
}

// createLog is CreateLog, in log directory want unless it is "".
func (m *Manager) createLog(tp TopicPartition, topicID [16]byte, cfg LogConfig, want string) (*Log, error) {
	if tp.Topic == "" || tp.Partition < 0 || strings.ContainsAny(tp.Topic, "/\\") || tp.Topic == "." || tp.Topic == ".." {
		return nil, fmt.Errorf("storage: invalid partition %q %d", tp.Topic, tp.Partition)
	}
	m.mu.Lock()
	if m.mu.closed {
		m.mu.Unlock()
		return nil, ErrClosed
	}
	if ml, ok := m.mu.logs[tp]; ok {
		m.mu.Unlock()
		if ml.topicID != topicID {
			return nil, fmt.Errorf("%w: %s holds topic id %x, not %x", ErrTopicIDMismatch, tp, ml.topicID, topicID)
		}
		return ml.log, nil
	}
	if m.mu.creating[tp] {
		m.mu.Unlock()
		return nil, fmt.Errorf("storage: partition %s is being created", tp)
	}
	if m.mu.offline[tp] {
		m.mu.Unlock()
		return nil, fmt.Errorf("%w: %s", ErrLogOffline, tp)
	}
	m.mu.creating[tp] = true
	counts := map[string]int{}
	for _, ml := range m.mu.logs {
		counts[ml.dir]++
	}
	m.mu.Unlock()
	defer func() {
		m.mu.Lock()
		delete(m.mu.creating, tp)
		m.mu.Unlock()
	}()
	dir, ok := m.creationDir(counts)
	if want != "" {
		dir, ok = want, !m.LogDirFailed(want)
	}
	if !ok {
		return nil, fmt.Errorf("%w: no online log directory for %s", ErrLogOffline, tp)
	}
	// Never reuse a directory left by another topic id (issue 11 item 13).
	if err := m.claimDir(dir, tp, topicID); err != nil {
		return nil, err
	}
	path := filepath.Join(dir, tp.String())
	if err := m.fs.MkdirAll(path); err != nil {
		err = fmt.Errorf("storage: create %s: %w", path, err)
		m.dirFailed(dir, err)
		return nil, err
	}
	if err := writeFileAtomic(m.fs, filepath.Join(path, partitionMetadataFile), encodePartitionMetadata(topicID)); err != nil {
		m.dirFailed(dir, err)
		return nil, err
	}
	if err := m.fs.SyncDir(dir); err != nil {
		err = fmt.Errorf("storage: sync %s: %w", dir, err)
		m.dirFailed(dir, err)
		return nil, err
	}
	l, err := OpenLog(LogOptions{FS: m.fs, Dir: path, Config: cfg, Now: m.now, Logger: m.logger, RecoveryPoint: 0, LogStartOffset: 0, OnFailure: m.dirFailure(dir)})
	if err != nil {
		m.dirFailed(dir, err)
		return nil, err
	}
	m.mu.Lock()
	m.mu.logs[tp] = &managedLog{log: l, dir: dir, topicID: topicID}
	m.mu.Unlock()
	return l, nil
}

// detach removes tp's log from the manager, so that no new reader finds
// it, and returns it for the caller to close, rename or delete.
func (m *Manager) detach(tp TopicPartition) (*managedLog, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	ml, ok := m.mu.logs[tp]
	if ok {
		delete(m.mu.logs, tp)
	}
	return ml, ok
}

// DeleteLog closes the log of tp, renames its directory to
// "topic-N.<random hex>-delete" (the topic cut to fit 255 bytes, as Kafka
// does) and removes it. A crash in between leaves a "-delete" directory
// that OpenManager removes. If the rename fails the directory stays where
// it is and CreateLog will not reuse it for another topic id.
func (m *Manager) DeleteLog(tp TopicPartition) error {
	ml, ok := m.detach(tp)
	if !ok {
		return nil
	}
	if err := ml.log.discard(); err != nil && !errors.Is(err, ErrClosed) {
		m.logger.Warn("storage: closing deleted log", "partition", tp.String(), "err", err)
	}
	path := filepath.Join(ml.dir, tp.String())
	doomed := filepath.Join(ml.dir, setAsideDirName(tp, deleteDirSuffix))
	if err := m.fs.Rename(path, doomed); err != nil {
		return fmt.Errorf("storage: rename %s for deletion: %w", path, err)
	}
	if err := m.fs.SyncDir(ml.dir); err != nil {
		return fmt.Errorf("storage: sync %s: %w", ml.dir, err)
	}
	if err := m.fs.RemoveAll(doomed); err != nil {
		return fmt.Errorf("storage: remove %s: %w", doomed, err)
	}
	return nil
}

// Run does the background work until ctx is done: retention every
// RetentionCheckInterval, flush.ms flushes, checkpoint writes, producer
// expiry every ProducerExpirationCheckInterval and, with CleanerEnable, a
// cleaner pass every CleanerBackoff. Everything runs on this goroutine,
// one log at a time.
func (m *Manager) Run(ctx context.Context) {
	var cleanerC <-chan time.Time
	if m.opts.CleanerEnable {
		cleaner := time.NewTicker(m.opts.CleanerBackoff)
		defer cleaner.Stop()
		cleanerC = cleaner.C
	}
	retention := time.NewTicker(m.opts.RetentionCheckInterval)
	expiry := time.NewTicker(m.opts.ProducerExpirationCheckInterval)
	defer expiry.Stop()
	flush := time.NewTicker(m.opts.FlushCheckInterval)
	checkpoint := time.NewTicker(m.opts.CheckpointInterval)
	defer retention.Stop()
	defer flush.Stop()
	defer checkpoint.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-retention.C:
			m.EnforceRetention()
		case <-expiry.C:
			m.ExpireProducers()
		case <-flush.C:
			m.FlushDue()
		case <-cleanerC:
			m.CleanLogs(ctx)
		case <-checkpoint.C:
			if err := m.WriteCheckpoints(); err != nil {
				m.logger.Error("storage: writing checkpoints", "err", err)
			}
		}
	}
}

// ExpireProducers runs Log.ExpireProducers with ProducerExpiration on every
// log once.
func (m *Manager) ExpireProducers() {
	nowMs, expMs := m.now().UnixMilli(), m.opts.ProducerExpiration.Milliseconds()
	for tp, l := range m.Logs() {
		if n := l.ExpireProducers(nowMs, expMs); n > 0 {
			m.logger.Info("storage: expired idle producers", "partition", tp.String(), "producers", n)
		}
	}
}

// EnforceRetention runs retention on every log once.
func (m *Manager) EnforceRetention() {
	now := m.now()
	for tp, l := range m.Logs() {
		if n, err := l.EnforceRetention(now); err != nil {
			if !errors.Is(err, ErrClosed) {
				m.logger.Error("storage: retention", "partition", tp.String(), "err", err)
			}
		} else if n > 0 {
			m.logger.Info("storage: retention deleted segments", "partition", tp.String(), "segments", n)
		}
	}
}

// CleanLogs runs one cleaner pass: it cleans, one at a time and dirtiest
// first, every compacted log that is due at the Manager's now
// (min.cleanable.dirty.ratio or max.compaction.lag.ms), then writes the
// checkpoints. It returns the number of logs cleaned; it stops early when
// ctx is done.
func (m *Manager) CleanLogs(ctx context.Context) int {
	now := m.now()
	type candidate struct {
		tp    TopicPartition
		l     *Log
		ratio float64
	}
	var due []candidate
	for tp, l := range m.Logs() {
		if l.Uncleanable() {
			continue
		}
		if ratio, ok := l.NeedsClean(now); ok {
			due = append(due, candidate{tp, l, ratio})
		}
	}
	sort.Slice(due, func(i, j int) bool { return due[i].ratio > due[j].ratio })
	cleaned := 0
	for _, c := range due {
		if ctx.Err() != nil {
			break
		}
		st, ok, err := c.l.Clean(ctx, now, CleanOptions{MaxMapBytes: m.opts.CleanerMapBytes})
		switch {
		case err != nil:
			if !errors.Is(err, ErrClosed) && !errors.Is(err, ErrCleanAborted) && ctx.Err() == nil {
				m.logger.Error("storage: clean", "partition", c.tp.String(), "err", err)
			}
		case ok:
			cleaned++
			m.logger.Info("storage: cleaned log", "partition", c.tp.String(), "ratio", c.ratio,
				"from", st.FirstOffset, "to", st.EndOffset, "bytes_in", st.BytesIn, "bytes_out", st.BytesOut,
				"records_in", st.RecordsIn, "records_out", st.RecordsOut)
		}
	}
	if cleaned > 0 {
		if err := m.WriteCheckpoints(); err != nil {
			m.logger.Error("storage: writing checkpoints", "err", err)
		}
	}
	return cleaned
}

// FlushDue flushes every log whose flush.ms elapsed since its last flush.
func (m *Manager) FlushDue() {
	now := m.now()
	for tp, l := range m.Logs() {
		ms := l.Config().FlushMs
		if ms == 0 || now.Sub(l.lastFlushTime()).Milliseconds() >= ms {
			if err := l.Flush(); err != nil && !errors.Is(err, ErrClosed) {
				m.logger.Error("storage: flush", "partition", tp.String(), "err", err)
			}
		}
	}
}

// WriteCheckpoints writes the recovery point, log start offset and high
// watermark checkpoints of every log directory.
func (m *Manager) WriteCheckpoints() error {
	m.checkpointMu.Lock()
	defer m.checkpointMu.Unlock()
	m.mu.Lock()
	byDir := map[string]map[TopicPartition]*Log{}
	for _, d := range m.dirs {
		byDir[d] = map[TopicPartition]*Log{}
	}
	for tp, ml := range m.mu.logs {
		byDir[ml.dir][tp] = ml.log
	}
	m.mu.Unlock()
	var errs []error
	for dir, logs := range byDir {
		if m.dirOffline(dir) {
			continue // offline until a restart, as in Kafka
		}
		rp := map[TopicPartition]int64{}
		starts := map[TopicPartition]int64{}
		hws := map[TopicPartition]int64{}
		cleaned := map[TopicPartition]int64{}
		for tp, l := range logs {
			rp[tp] = l.RecoveryPoint()
			starts[tp] = l.LogStartOffset()
			hws[tp] = l.HighWatermark()
			if c := l.CleanerCheckpoint(); c > 0 {
				cleaned[tp] = c
			}
		}
		for _, f := range []struct {
			name    string
			offsets map[TopicPartition]int64
		}{
			{recoveryPointCheckpointFile, rp},
			{logStartOffsetCheckpointFile, starts},
			{highWatermarkCheckpointFile, hws},
			{cleanerOffsetCheckpointFile, cleaned},
		} {
			if err := writeFileAtomic(m.fs, filepath.Join(dir, f.name), encodeOffsetCheckpoint(f.offsets)); err != nil {
				errs = append(errs, err)
				m.dirFailed(dir, err)
			}
		}
	}
	return errors.Join(errs...)
}

// Close flushes every log, writes the checkpoints and closes the logs.
func (m *Manager) Close() error {
	m.mu.Lock()
	if m.mu.closed {
		m.mu.Unlock()
		return ErrClosed
	}
	m.mu.closed = true
	m.mu.Unlock()
	var errs []error
	for tp, l := range m.Logs() {
		if err := l.Flush(); err != nil {
			errs = append(errs, fmt.Errorf("storage: flush %s: %w", tp, err))
		}
	}
	if err := m.WriteCheckpoints(); err != nil {
		errs = append(errs, err)
	}
	errs = append(errs, m.closeLogs())
	return errors.Join(errs...)
}

func (m *Manager) closeLogs() error {
	var errs []error
	for tp, l := range m.Logs() {
		if err := l.Close(); err != nil && !errors.Is(err, ErrClosed) {
			errs = append(errs, fmt.Errorf("storage: close %s: %w", tp, err))
		}
	}
	return errors.Join(errs...)
}
