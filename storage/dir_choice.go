package storage

import (
	"errors"
	"fmt"
	"slices"
)

// Where a new partition's log goes when a broker has several log
// directories (KIP-858, KIP-1066). The controller assigns each replica a
// directory: the broker's only one, or UNASSIGNED when it has several, in
// which case the broker picks the online directory holding the fewest
// partitions, leaving out cordoned directories (cordoned.log.dirs) while
// an uncordoned one is online, and reports its choice. CreateLogIn puts
// a log in the directory the controller assigned.

// ErrUnknownLogDir is returned by CreateLogIn for a directory that is not
// one of the manager's.
var ErrUnknownLogDir = errors.New("storage: not a log directory of this broker")

// CreateLogIn creates the log of tp in log directory dir (one of
// ManagerOptions.Dirs), as CreateLog does; ErrLogOffline when dir failed.
// An existing log is returned as is, wherever it lives.
func (m *Manager) CreateLogIn(tp TopicPartition, topicID [16]byte, cfg LogConfig, dir string) (*Log, error) {
	if !slices.Contains(m.dirs, dir) {
		return nil, fmt.Errorf("%w: %s", ErrUnknownLogDir, dir)
	}
	return m.createLog(tp, topicID, cfg, dir)
}

// creationDir picks the online log directory holding the fewest
// partitions (counts) for a new partition, an uncordoned one when one is
// online; false when every directory failed.
func (m *Manager) creationDir(counts map[string]int) (string, bool) {
	m.failed.Lock()
	defer m.failed.Unlock()
	best, ok, bestCordoned := "", false, false
	for _, d := range m.dirs {
		if m.failed.dirs[d] {
			continue
		}
		cordoned := slices.Contains(m.opts.CordonedDirs, d)
		if m.failed.cordonedSet {
			cordoned = slices.Contains(m.failed.cordoned, d)
		}
		switch {
		case !ok, bestCordoned && !cordoned:
		case cordoned && !bestCordoned, counts[d] >= counts[best]:
			continue
		}
		best, ok, bestCordoned = d, true, cordoned
	}
	return best, ok
}

// DirCordoned reports whether the log directory dir (an entry of log.dirs)
// is cordoned now: in ManagerOptions.CordonedDirs, or in the set
// SetCordonedDirs gave last.
func (m *Manager) DirCordoned(dir string) bool {
	m.failed.Lock()
	defer m.failed.Unlock()
	if m.failed.cordonedSet {
		return slices.Contains(m.failed.cordoned, dir)
	}
	return slices.Contains(m.opts.CordonedDirs, dir)
}

// SetCordonedDirs replaces the cordoned log directories
// (ManagerOptions.CordonedDirs; cordoned.log.dirs changed at runtime).
func (m *Manager) SetCordonedDirs(dirs []string) {
	m.failed.Lock()
	defer m.failed.Unlock()
	m.failed.cordoned, m.failed.cordonedSet = slices.Clone(dirs), true
}
