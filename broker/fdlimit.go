package broker

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"syscall"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/samsa-broker/samsa/controller"
)

// File descriptors. Every segment of a partition log keeps its .log, .index
// and .timeindex open (storage opens them at start, eagerly), so a broker
// with more partitions than its open file limit allows can neither serve
// nor restart. The broker raises the soft limit to the hard limit at start
// (Go's runtime already does this for programs that import os; we do it
// again to be sure and to log the outcome) and refuses CreateTopics and
// CreatePartitions that would need more descriptors than are left.
const (
	// fdsPerPartition is what one new partition opens: the three files of
	// its first segment.
	fdsPerPartition = 3
	// fdReserve is kept free for connections, the metadata log, checkpoint
	// writes and segment rolls.
	fdReserve = 1024
)

// raiseFileLimit sets the soft RLIMIT_NOFILE to the hard limit and returns
// the resulting limits.
func raiseFileLimit() (soft, hard uint64, raised bool, err error) {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return 0, 0, false, err
	}
	if rl.Cur < rl.Max {
		want := rl
		want.Cur = rl.Max
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &want); err != nil {
			return uint64(rl.Cur), uint64(rl.Max), false, err
		}
		return uint64(want.Cur), uint64(want.Max), true, nil
	}
	return uint64(rl.Cur), uint64(rl.Max), false, nil
}

// logFileLimit raises the open file limit and logs it, with the number of
// partitions it leaves room for.
func logFileLimit(logger *slog.Logger) {
	soft, hard, raised, err := raiseFileLimit()
	if err != nil {
		logger.Warn("cannot read or raise the open file limit (RLIMIT_NOFILE)", "err", err, "soft", soft, "hard", hard)
		return
	}
	open, _ := openFileCount()
	logger.Info("open file limit (RLIMIT_NOFILE)", "soft", soft, "hard", hard, "raised_to_hard_limit", raised,
		"open", open, "room_for_partitions", max(int64(soft)-int64(open)-fdReserve, 0)/fdsPerPartition)
}

// openFileCount counts this process's open file descriptors (Linux
// /proc/self/fd, or /dev/fd), reading the directory in batches so that
// 60,000 descriptors cost no more than a small buffer.
func openFileCount() (int, error) {
	for _, dir := range []string{"/proc/self/fd", "/dev/fd"} {
		f, err := os.Open(dir)
		if err != nil {
			continue
		}
		n := 0
		for {
			names, err := f.Readdirnames(1024)
			n += len(names)
			if err != nil {
				break
			}
		}
		f.Close()
		return n - 1, nil // less the descriptor of the directory itself
	}
	return 0, errors.New("broker: cannot count open files")
}

// fileBudget decides whether newPartitions more partitions fit in the open
// file limit: limit and open are the current soft limit and descriptors in
// use. It returns a Kafka error (POLICY_VIOLATION, with a message naming
// the numbers) or nil.
func fileBudget(limit uint64, open, newPartitions int) *controller.RequestError {
	if newPartitions <= 0 || limit >= 1<<62 { // RLIM_INFINITY
		return nil
	}
	need := int64(newPartitions) * fdsPerPartition
	left := int64(limit) - int64(open) - fdReserve
	if need <= left {
		return nil
	}
	return &controller.RequestError{Code: kerr.PolicyViolation.Code, Message: fmt.Sprintf(
		"Creating %d partitions needs about %d more open files, but the broker has %d open of its limit of %d (RLIMIT_NOFILE) and keeps %d for connections: room for %d more partitions. Raise the open file limit (ulimit -n) or create fewer partitions.",
		newPartitions, need, open, limit, fdReserve, max(left, 0)/fdsPerPartition)}
}

// CheckPartitionFiles is fileBudget against the process's current limit
// and open descriptors; nil when they cannot be read (the check is then
// skipped rather than refusing every topic).
func CheckPartitionFiles(newPartitions int) *controller.RequestError {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return nil
	}
	open, err := openFileCount()
	if err != nil {
		return nil
	}
	return fileBudget(uint64(rl.Cur), open, newPartitions)
}

// explainStartError adds what to do to an error of starting with more
// partition files than the open file limit allows.
func explainStartError(err error) error {
	if !errors.Is(err, syscall.EMFILE) && !errors.Is(err, syscall.ENFILE) {
		return err
	}
	var rl syscall.Rlimit
	syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl)
	return fmt.Errorf("%w: the partition logs need more open files than the limit of %d (RLIMIT_NOFILE, hard limit %d) allows; every segment keeps 3 files open: raise the hard limit (ulimit -Hn, LimitNOFILE= in systemd, --ulimit nofile= in docker) and start again", err, rl.Cur, rl.Max)
}

// openFileBudget is storage.ManagerOptions.OpenFileBudget: the files the
// partition logs may open at start, the soft limit less what is open and
// fdReserve; 0 (no limit) when the limit is unlimited or unreadable.
func openFileBudget() int {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil || uint64(rl.Cur) >= 1<<62 {
		return 0
	}
	open, err := openFileCount()
	if err != nil {
		return 0
	}
	return int(max(int64(rl.Cur)-int64(open)-fdReserve, 1))
}
