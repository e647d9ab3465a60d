package broker

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/samsa-broker/samsa/controller"
	"github.com/samsa-broker/samsa/storage"
)

// logDirMoves is the broker's side of AlterReplicaLogDirs (key 34,
// KIP-113; broker/handlers/34_alter_replica_log_dirs.go), as Kafka 4.4's
// ReplicaManager.alterReplicaLogDirs does it: a replica this node hosts
// is moved to the named log directory while it keeps serving
// (storage.Manager.MoveLog, on a goroutine per move), and once it lives
// there the node reports the replica's new directory to the controller
// (AssignReplicasToDirs, log_dir_placement.go). For a replica it does not
// host yet the directory is remembered and its log is created there when
// the metadata gives it to this node (unless the controller assigned it
// one of this node's directories).
type logDirMoves struct {
	nodeID int32
	logs   *storage.Manager
	dirs   *logDirFailures // nil with one log directory and in tests
	image  func() *controller.Image
	logger *slog.Logger
	// configured are the log directories (log.dirs as given) by their
	// absolute path, the form requests name them in.
	configured map[string]string

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu struct {
		sync.Mutex
		// preferred are the directories asked for replicas not hosted
		// when asked (Kafka's LogManager.preferredLogDirs).
		preferred map[storage.TopicPartition]string
	}
}

func newLogDirMoves(nodeID int32, logDirs []string, logs *storage.Manager, dirs *logDirFailures, image func() *controller.Image, logger *slog.Logger) *logDirMoves {
	m := &logDirMoves{nodeID: nodeID, logs: logs, dirs: dirs, image: image, logger: logger, configured: map[string]string{}}
	for _, d := range logDirs {
		if abs, err := filepath.Abs(d); err == nil {
			m.configured[abs] = d
		}
	}
	m.ctx, m.cancel = context.WithCancel(context.Background())
	m.mu.preferred = map[storage.TopicPartition]string{}
	return m
}

// close stops the moves in progress (their future logs are removed) and
// waits for them.
func (m *logDirMoves) close() {
	m.cancel()
	m.wg.Wait()
}

// AlterReplicaLogDir asks for tp's replica on this node to live in the log
// directory dir (an absolute path) and returns the partition's error
// code, in Kafka 4.4's order of checks:
//
//   - INVALID_TOPIC_EXCEPTION when the future directory's name,
//     "<topic>-<N>.<32 hex>-future", exceeds 255 bytes;
//   - LOG_DIR_NOT_FOUND when dir is not one of log.dirs by absolute path;
//   - KAFKA_STORAGE_ERROR when dir is offline;
//   - INVALID_REPLICA_ASSIGNMENT when dir is cordoned (KIP-1066);
//   - a move to another directory in progress is cancelled;
//   - KAFKA_STORAGE_ERROR when the replica is offline;
//   - dir is remembered for the replica unless it lives there;
//   - REPLICA_NOT_AVAILABLE when this node hosts no replica of a
//     partition the metadata knows, UNKNOWN_TOPIC_OR_PARTITION for one it
//     does not know;
//   - KAFKA_STORAGE_ERROR when any log directory is offline (Kafka creates
//     no future log then);
//   - otherwise 0, the move started (nothing when the replica lives in
//     dir or moves there already).
func (m *logDirMoves) AlterReplicaLogDir(tp storage.TopicPartition, dir string) int16 {
	if !storage.FutureDirNameFits(tp) {
		return kerr.InvalidTopicException.Code
	}
	path, ok := m.configured[dir]
	if !ok || !filepath.IsAbs(dir) {
		return kerr.LogDirNotFound.Code
	}
	if m.logs.LogDirFailed(path) {
		return kerr.KafkaStorageError.Code
	}
	if m.logs.DirCordoned(path) {
		return kerr.InvalidReplicaAssignment.Code
	}
	if target, moving := m.logs.MoveTarget(tp); moving && target != path {
		m.logs.CancelMove(tp)
	}
	if m.logs.PartitionOffline(tp) {
		return kerr.KafkaStorageError.Code
	}
	cur, hosted := m.logs.LogDirOf(tp)
	if target, moving := m.logs.MoveTarget(tp); cur != path && (!moving || target != path) {
		m.mu.Lock()
		m.mu.preferred[tp] = path
		m.mu.Unlock()
	}
	if !hosted {
		if m.knows(tp) {
			return kerr.ReplicaNotAvailable.Code
		}
		return kerr.UnknownTopicOrPartition.Code
	}
	if cur == path {
		return 0
	}
	if len(m.logs.FailedLogDirs()) > 0 {
		return kerr.KafkaStorageError.Code
	}
	m.start(tp, path)
	return 0
}

// knows reports whether the metadata has partition tp.
func (m *logDirMoves) knows(tp storage.TopicPartition) bool {
	img := m.image()
	t := img.Topics[tp.Topic]
	return t != nil && tp.Partition >= 0 && int(tp.Partition) < len(t.Partitions)
}

// start moves tp's log to path on a goroutine of its own, unless a move
// of tp runs (to path: the check above cancelled one to elsewhere, which
// may still be finishing; the next request starts it again).
func (m *logDirMoves) start(tp storage.TopicPartition, path string) {
	if _, moving := m.logs.MoveTarget(tp); moving {
		return
	}
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		err := m.logs.MoveLog(m.ctx, tp, path)
		switch {
		case err == nil:
			m.mu.Lock()
			if m.mu.preferred[tp] == path {
				delete(m.mu.preferred, tp)
			}
			m.mu.Unlock()
			m.report(tp)
		case errors.Is(err, storage.ErrMoveInProgress):
		case errors.Is(err, storage.ErrMoveAborted):
			m.logger.Info("replica log directory move aborted", "topic", tp.Topic, "partition", tp.Partition, "to", path, "err", err)
		default:
			m.logger.Warn("replica log directory move failed", "topic", tp.Topic, "partition", tp.Partition, "to", path, "err", err)
		}
	}()
}

// resume starts again the moves a stop or crash interrupted
// (storage.Manager.InterruptedMoves), as Kafka resumes its future
// replicas at start.
func (m *logDirMoves) resume(moves map[storage.TopicPartition]string) {
	for tp, dir := range moves {
		m.logger.Info("starting again an interrupted move to another log directory", "topic", tp.Topic, "partition", tp.Partition, "to", dir)
		m.start(tp, dir)
	}
}

// report queues the report of tp's directory to the controller when the
// image says otherwise.
func (m *logDirMoves) report(tp storage.TopicPartition) {
	if m.dirs == nil {
		return
	}
	img := m.image()
	t := img.Topics[tp.Topic]
	if t == nil || tp.Partition < 0 || int(tp.Partition) >= len(t.Partitions) {
		return
	}
	path, ok := m.logs.LogDirOf(tp)
	if !ok {
		return
	}
	id, ok := m.dirs.ids[path]
	if !ok || t.Partitions[tp.Partition].DirectoryOf(m.nodeID) == id {
		return
	}
	m.dirs.assign.queue(replicaKey{t.ID, tp.Partition}, id)
}

// preferredDir returns (and forgets) the directory AlterReplicaLogDirs
// asked for tp before this node hosted it.
func (m *logDirMoves) preferredDir(tp storage.TopicPartition) (string, bool) {
	if m == nil {
		return "", false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	dir, ok := m.mu.preferred[tp]
	delete(m.mu.preferred, tp)
	return dir, ok
}
