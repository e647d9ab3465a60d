package storage

import (
	"slices"
	"strings"
)

// A log directory fails, as in Kafka's LogDirFailureChannel, when a log in
// it goes offline after a write, fsync or roll error (Log.fail), when a
// partition cannot be created in it, or when its offset checkpoints cannot
// be written. Once every log directory has failed the Manager calls
// ManagerOptions.OnAllLogDirsFailed, once: Kafka's LogManager halts the
// broker then ("Shutdown broker because all log dirs in ... have failed"),
// so that the controller moves its leaderships after the session timeout
// and the operator restarts it once the disk is usable again.
//
// With several log directories a failed one is only recorded: its other
// logs keep serving until they fail themselves, and the controller is not
// told (Kafka takes the whole directory offline and reports it in the
// broker heartbeat, KIP-858); that JBOD path is not implemented.

// dirFailure returns the OnFailure callback of a log in dir.
func (m *Manager) dirFailure(dir string) func(error) {
	return func(err error) { m.dirFailed(dir, err) }
}

// dirFailed records that dir failed with err and, when every log directory
// has failed, calls OnAllLogDirsFailed (once).
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

// AllLogDirsFailedMessage is the message Kafka's LogManager logs before it
// halts a broker whose every log directory failed.
func AllLogDirsFailedMessage(dirs []string) string {
	return "Shutdown broker because all log dirs in " + strings.Join(dirs, ", ") + " have failed"
}
