package storage

import (
	"errors"
	"slices"
	"sort"
	"strings"
)

// A log directory fails, as in Kafka's LogDirFailureChannel, when a log in
// it goes offline after a write, fsync or roll error (Log.fail), when a
// partition cannot be created in it, or when its offset checkpoints cannot
// be written. The first failure of each directory calls
// ManagerOptions.OnLogDirFailed; once every log directory has failed the
// Manager calls ManagerOptions.OnAllLogDirsFailed, once: Kafka's LogManager
// halts the broker then ("Shutdown broker because all log dirs in ... have
// failed"), so that the controller moves its leaderships after the session
// timeout and the operator restarts it once the disk is usable again.
//
// With several log directories a failed one goes offline as a whole
// (KIP-858): the owner of the Manager calls TakeDirOffline, which closes
// every log in it (reads and writes of those partitions then fail, and
// CreateLog refuses them until a restart), and reports the directory to
// the controller, which moves the leadership of its partitions to other
// replicas. New partitions are created in online directories only. A
// failed directory is never retried: it stays offline until a restart.

// dirFailure returns the OnFailure callback of a log in dir.
func (m *Manager) dirFailure(dir string) func(error) {
	return func(err error) { m.dirFailed(dir, err) }
}

// dirFailed records that dir failed with err, calls OnLogDirFailed the
// first time, and, when every log directory has failed, calls
// OnAllLogDirsFailed (once).
func (m *Manager) dirFailed(dir string, err error) {
	m.failed.Lock()
	first := !m.failed.dirs[dir]
	m.failed.dirs[dir] = true
	all := !m.failed.all && len(m.failed.dirs) >= len(m.dirs)
	if all {
		m.failed.all = true
	}
	m.failed.Unlock()
	if first {
		m.logger.Error("storage: log directory failed", "dir", dir, "err", err)
		if m.opts.OnLogDirFailed != nil {
			m.opts.OnLogDirFailed(dir, err)
		}
	}
	if all && m.opts.OnAllLogDirsFailed != nil {
		m.opts.OnAllLogDirsFailed(slices.Clone(m.dirs), err)
	}
}

// FailedLogDirs returns the log directories that failed, in the order of
// ManagerOptions.Dirs.
func (m *Manager) FailedLogDirs() []string {
	m.failed.Lock()
	defer m.failed.Unlock()
	var out []string
	for _, d := range m.dirs {
		if m.failed.dirs[d] {
			out = append(out, d)
		}
	}
	return out
}

// LogDirFailed reports whether dir (as given in ManagerOptions.Dirs) failed.
func (m *Manager) LogDirFailed(dir string) bool {
	m.failed.Lock()
	defer m.failed.Unlock()
	return m.failed.dirs[dir]
}

// TakeDirOffline closes every log of the failed directory dir and marks
// its partitions offline (CreateLog refuses them, as after TakeOffline,
// until a restart), and returns them sorted. It marks dir failed if it was
// not. Partitions that are opened in dir later (none: CreateLog avoids a
// failed directory) are not covered, so it is called once the directory
// failed.
func (m *Manager) TakeDirOffline(dir string) []TopicPartition {
	m.failed.Lock()
	known := m.failed.dirs[dir]
	m.failed.offline[dir] = true
	m.failed.Unlock()
	if !known {
		m.dirFailed(dir, errDirTakenOffline)
	}
	var tps []TopicPartition
	var logs []*Log
	m.mu.Lock()
	for tp, ml := range m.mu.logs {
		if ml.dir != dir {
			continue
		}
		delete(m.mu.logs, tp)
		m.mu.offline[tp] = true
		tps = append(tps, tp)
		logs = append(logs, ml.log)
	}
	m.mu.Unlock()
	for i, l := range logs {
		// Closing flushes: on a failed disk that fails too, and the log
		// is offline already. Nothing more can be done for it here.
		if err := l.Close(); err != nil && !errors.Is(err, ErrClosed) {
			m.logger.Warn("storage: closing a log of a failed directory", "partition", tps[i].String(), "err", err)
		}
	}
	sort.Slice(tps, func(i, j int) bool {
		if tps[i].Topic != tps[j].Topic {
			return tps[i].Topic < tps[j].Topic
		}
		return tps[i].Partition < tps[j].Partition
	})
	m.logger.Error("storage: log directory offline; its partitions are no longer served", "dir", dir, "partitions", len(tps))
	return tps
}

// PartitionOffline reports whether tp's log was taken offline (with its
// directory, or alone by TakeOffline): requests for it are answered
// KAFKA_STORAGE_ERROR, as Kafka answers for an offline replica.
func (m *Manager) PartitionOffline(tp TopicPartition) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.mu.offline[tp]
}

// dirOffline reports whether TakeDirOffline took dir offline.
func (m *Manager) dirOffline(dir string) bool {
	m.failed.Lock()
	defer m.failed.Unlock()
	return m.failed.offline[dir]
}

// errDirTakenOffline is the failure recorded when TakeDirOffline is called
// for a directory that had not failed.
var errDirTakenOffline = errors.New("storage: log directory taken offline")

// LogDirOf returns the log directory that holds tp's open log.
func (m *Manager) LogDirOf(tp TopicPartition) (string, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	ml, ok := m.mu.logs[tp]
	if !ok {
		return "", false
	}
	return ml.dir, true
}

// AllLogDirsFailedMessage is the message Kafka's LogManager logs before it
// halts a broker whose every log directory failed.
func AllLogDirsFailedMessage(dirs []string) string {
	return "Shutdown broker because all log dirs in " + strings.Join(dirs, ", ") + " have failed"
}
