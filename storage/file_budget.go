package storage

import (
	"errors"
	"path/filepath"
	"strings"
	"syscall"
)

// Start with more partitions than open files (issue 11 item 5): every
// segment keeps its .log, .index and .timeindex (and a .txnindex when it
// has one) open, so a broker holding more partitions than its open file
// limit allows could not start at all. OpenManager opens partitions while
// ManagerOptions.OpenFileBudget allows, and leaves the others on disk,
// unopened and offline (CreateLog refuses them, nothing deletes them),
// with one ERROR line; an EMFILE or ENFILE while opening a partition does
// the same for that partition instead of failing the start.

// maxNamedUnopened bounds the partitions named in the ERROR line.
const maxNamedUnopened = 20

// partitionFiles is the number of files the partition directory at path
// keeps open once loaded: 3 per segment, plus its .txnindex files.
func (m *Manager) partitionFiles(path string) int {
	names, err := m.fs.ReadDir(path)
	if err != nil {
		return 3
	}
	n := 0
	for _, name := range names {
		if _, ok := parseSegmentBase(name); ok {
			n += 3
		} else if strings.HasSuffix(name, txnIndexSuffix) {
			n++
		}
	}
	return max(n, 3)
}

// outOfFiles reports whether err is the process or system running out of
// file descriptors.
func outOfFiles(err error) bool {
	return errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE)
}

// leaveUnopened marks tp offline because it does not fit the open file
// budget. REQUIRES: called from OpenManager only.
func (m *Manager) leaveUnopened(dir string, tp TopicPartition) {
	m.mu.offline[tp] = true
	m.unopened = append(m.unopened, filepath.Join(dir, tp.String()))
}

// reportUnopened logs the partitions left unopened, once.
func (m *Manager) reportUnopened() {
	if len(m.unopened) == 0 {
		return
	}
	named := m.unopened[:min(len(m.unopened), maxNamedUnopened)]
	m.logger.Error("storage: partitions left unopened and offline: the open file limit (RLIMIT_NOFILE) has no room for them; their data stays on disk. Raise the limit (ulimit -n, LimitNOFILE= in systemd, --ulimit nofile= in docker) and restart",
		"unopened", len(m.unopened), "opened", len(m.mu.logs), "open_file_budget", m.opts.OpenFileBudget, "dirs", named)
}

// UnopenedAtStart returns how many partitions OpenManager left unopened
// for want of open files.
func (m *Manager) UnopenedAtStart() int { return len(m.unopened) }
