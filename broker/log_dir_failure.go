package broker

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/samsa-broker/samsa/controller"
	"github.com/samsa-broker/samsa/storage"
)

// This file is the broker's side of a log directory failure with several
// log directories (KIP-858, as Kafka 4.4 does it; storage/dir_failure.go
// and controller/log_dirs.go hold the other sides). Each log directory
// has a directory.id in its meta.properties. When a write, fsync or roll
// in a directory fails, storage reports it once (OnLogDirFailed) and
// runLogDirFailures, on its own goroutine:
//
//  1. takes the whole directory offline (storage.Manager.TakeDirOffline):
//     its logs close, requests for its partitions are answered
//     KAFKA_STORAGE_ERROR, and new partitions go to the other directories;
//  2. stops hosting those partitions in the replica layer, so their
//     waiters wake and the replica fetchers drop them;
//  3. tells the active controller which partitions the directory held
//     (AssignReplicasToDirs) and that it is offline (every later
//     heartbeat lists it in offline_log_dirs); the controller moves their
//     leadership to other ISR members and takes this replica out of their
//     ISR.
//
// Partitions in the other directories keep their roles. As Kafka's, the
// node halts instead (cmd/samsa; in-process nodes keep running) when every
// directory has failed (NodeOptions.OnAllLogDirsFailed), when the failed
// directory holds the metadata log (metadata.log.dir, by default the first
// log directory), and when step 3 has not succeeded within
// log.dir.failure.timeout.ms (NodeOptions.Halt): a broker that cannot tell
// the controller keeps leaderships it can no longer serve.

// ErrDirectoryID reports a meta.properties whose directory.id cannot be
// read or written.
var ErrDirectoryID = errors.New("broker: log dir directory.id")

// logDirFailures tracks the node's log directories by directory.id and
// the ones that failed.
type logDirFailures struct {
	ids map[string]controller.Uuid // log dir (as configured) -> directory.id
	// metadataDir is the metadata log's directory when it is one of
	// several log dirs ("" otherwise: a single log dir halts through
	// OnAllLogDirsFailed); halt is NodeOptions.Halt.
	metadataDir string
	halt        func(msg string, err error)
	// failedDirs carries the directories storage reported failed to
	// runLogDirFailures; it holds every directory, so a report never
	// blocks (storage reports each directory once).
	failedDirs chan string
	// assign holds the replica directories to report
	// (log_dir_placement.go).
	assign *dirAssignments

	mu struct {
		sync.Mutex
		offline []controller.Uuid // reported in every heartbeat
	}
}

// newLogDirFailures reads (or gives) the directory.id of every log dir.
func newLogDirFailures(dirs []string, metadataDir string, halt func(msg string, err error)) (*logDirFailures, error) {
	ids, err := ensureDirectoryIDs(dirs)
	if err != nil {
		return nil, err
	}
	f := &logDirFailures{ids: ids, halt: halt, failedDirs: make(chan string, len(dirs)+1), assign: newDirAssignments()}
	if len(dirs) > 1 {
		for _, d := range dirs {
			if filepath.Clean(d) == filepath.Clean(metadataDir) {
				f.metadataDir = d
			}
		}
	}
	return f, nil
}

// failed is storage.ManagerOptions.OnLogDirFailed. It may run under a
// log's locks, so it only queues the directory (or halts).
func (f *logDirFailures) failed(dir string, err error) {
	if dir == f.metadataDir && f.halt != nil {
		f.halt(MetadataLogDirFailedMessage(dir), err)
	}
	select {
	case f.failedDirs <- dir:
	default:
		// Unreachable: storage reports each directory once and the
		// channel holds them all.
	}
}

// offlineIDs returns the directory ids of the failed directories, for
// BrokerHeartbeat's offline_log_dirs.
func (f *logDirFailures) offlineIDs() []controller.Uuid {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.mu.offline)
}

func (f *logDirFailures) markOffline(id controller.Uuid) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if slices.Contains(f.mu.offline, id) {
		return false
	}
	f.mu.offline = append(f.mu.offline, id)
	return true
}

// runLogDirFailures takes every failed log directory offline and reports
// it, until ctx ends.
func (n *Node) runLogDirFailures(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case dir := <-n.dirFailures.failedDirs:
			n.takeLogDirOffline(ctx, dir)
		}
	}
}

// MetadataLogDirFailedMessage is the message Kafka's LogManager logs
// before it halts a broker whose metadata log directory failed.
func MetadataLogDirFailedMessage(dir string) string {
	return "Shutdown broker because the metadata log dir " + dir + " has failed"
}

// LogDirNotReportedMessage is the message Kafka's BrokerLifecycleManager
// logs before it halts a broker that could not report an offline log
// directory within log.dir.failure.timeout.ms.
const LogDirNotReportedMessage = "Shutting down because couldn't communicate offline log dirs with controllers"

// takeLogDirOffline is steps 1-3 of the file comment for dir.
func (n *Node) takeLogDirOffline(ctx context.Context, dir string) {
	id := n.dirFailures.ids[dir]
	if !n.dirFailures.markOffline(id) {
		return
	}
	tps := n.logs.TakeDirOffline(dir)
	if n.replicas != nil {
		n.replicas.StopOffline(tps)
	}
	n.logger.Error("log directory offline: its partitions move to other replicas; replace the disk and restart the broker to bring it back",
		"dir", dir, "directory_id", id.String(), "partitions", len(tps))
	replicas := n.dirFailures.offlineReplicas(n.ctrl.Image(), tps)
	rctx, cancel := context.WithTimeout(ctx, time.Duration(n.cfg.LogDirFailureTimeoutMs)*time.Millisecond)
	defer cancel()
	err := n.assignReplicasToDirs(rctx, id, replicas)
	if err == nil {
		err = n.withController(rctx, func() error {
			return codeErr(n.ctrl.ReportOfflineLogDirs(n.cfg.NodeID, n.brokerEpoch.Load(), n.dirFailures.offlineIDs()))
		}, func(ctx context.Context) error {
			return n.heartbeat(ctx, false) // lists the directory in offline_log_dirs
		})
	}
	if err == nil || ctx.Err() != nil {
		return
	}
	n.logger.Error("cannot report an offline log directory to the controller", "dir", dir, "timeout_ms", n.cfg.LogDirFailureTimeoutMs, "err", err)
	if n.dirFailures.halt != nil {
		n.dirFailures.halt(LogDirNotReportedMessage, err)
	}
}

// codeErr turns a controller call's (code, error) into an error.
func codeErr(code int16, err error) error {
	if err != nil {
		return err
	}
	return kafkaErr(code)
}

// reportOfflineDirsLocally records this node's offline directories at the
// local controller (its heartbeat when it is the active controller).
func (n *Node) reportOfflineDirsLocally() error {
	dirs := n.dirFailures.offlineIDs()
	if len(dirs) == 0 {
		return nil
	}
	return codeErr(n.ctrl.ReportOfflineLogDirs(n.cfg.NodeID, n.brokerEpoch.Load(), dirs))
}

// offlineReplicas groups the partitions of a directory taken offline by
// topic id for the AssignReplicasToDirs that reports them, by the newest
// image known: published (Controller.Image), or the last one LogSyncer.Apply
// was called with when newer. A log Apply just created for an image not yet
// published (OnChange has not returned) would otherwise be left out, and
// its replica, placed UNASSIGNED, never marked offline
// (TestOfflineReplicasDeliveredImage).
func (f *logDirFailures) offlineReplicas(published *controller.Image, tps []storage.TopicPartition) []controller.TopicIDPartitions {
	img := newestImage(published, f.assign.delivered.Load())
	if img == nil {
		return nil
	}
	return replicasByTopicID(img, tps)
}

// replicasByTopicID groups tps by the topic ids img gives their topics,
// leaving out topics img does not know.
func replicasByTopicID(img *controller.Image, tps []storage.TopicPartition) []controller.TopicIDPartitions {
	var out []controller.TopicIDPartitions
	at := map[controller.Uuid]int{}
	for _, tp := range tps {
		t := img.Topics[tp.Topic]
		if t == nil {
			continue
		}
		i, ok := at[t.ID]
		if !ok {
			i = len(out)
			at[t.ID] = i
			out = append(out, controller.TopicIDPartitions{TopicID: t.ID})
		}
		out[i].Partitions = append(out[i].Partitions, tp.Partition)
	}
	return out
}

// ensureDirectoryIDs returns the directory.id of every log dir from its
// meta.properties, adding a new random one (KIP-858; Kafka's storage
// tool and brokers do the same for a directory formatted before 3.7)
// where it has none. checkMetaProperties has written or checked every
// meta.properties before.
func ensureDirectoryIDs(dirs []string) (map[string]controller.Uuid, error) {
	ids := map[string]controller.Uuid{}
	seen := map[controller.Uuid]string{}
	for _, d := range dirs {
		p := filepath.Join(d, "meta.properties")
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrDirectoryID, err)
		}
		id, ok, err := parseDirectoryID(b)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrDirectoryID, p, err)
		}
		if !ok {
			if id, err = newDirectoryID(); err != nil {
				return nil, err
			}
			text := strings.TrimRight(string(b), "\n") + "\ndirectory.id=" + id.String() + "\n"
			if err := writeFileSync(p, []byte(text)); err != nil {
				return nil, fmt.Errorf("%w: %s: %w", ErrDirectoryID, p, err)
			}
		}
		if other, dup := seen[id]; dup {
			return nil, fmt.Errorf("%w: log dirs %s and %s have the same directory.id %s", ErrDirectoryID, other, d, id)
		}
		seen[id] = d
		ids[d] = id
	}
	return ids, nil
}

// parseDirectoryID returns the directory.id of a meta.properties, false
// when it has none.
func parseDirectoryID(b []byte) (controller.Uuid, bool, error) {
	var id controller.Uuid
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), "=")
		if !ok || strings.TrimSpace(k) != "directory.id" {
			continue
		}
		raw, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(strings.TrimSpace(v), "="))
		if err != nil || len(raw) != 16 {
			return id, false, fmt.Errorf("directory.id %q is not a base64 UUID", v)
		}
		copy(id[:], raw)
		return id, true, nil
	}
	return id, false, nil
}

// newDirectoryID returns a random directory id outside the ids Kafka
// reserves (the first hundred: UNASSIGNED, LOST, MIGRATING, ...) and not
// starting with '-' in its text form.
func newDirectoryID() (controller.Uuid, error) {
	for {
		var id controller.Uuid
		if _, err := rand.Read(id[:]); err != nil {
			return id, fmt.Errorf("%w: %w", ErrDirectoryID, err)
		}
		// Kafka also redraws an id whose text starts with '-' (it
		// would read as a command-line flag).
		if !reservedDirectoryID(id) && !strings.HasPrefix(id.String(), "-") {
			return id, nil
		}
	}
}

func reservedDirectoryID(id controller.Uuid) bool {
	for _, b := range id[:15] {
		if b != 0 {
			return false
		}
	}
	return id[15] < 100
}
