package broker

import (
	"context"
	"maps"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/config"
	"github.com/samsa-broker/samsa/controller"
	"github.com/samsa-broker/samsa/storage"
)

// This file is the broker's side of directory placement (KIP-858 and
// KIP-1066, as Kafka 4.4 does it; controller/dir_placement.go holds the
// controller's):
//
//   - The broker registers the directory.id of each online log directory
//     (BrokerRegistration v2+ log_dirs) and, in every heartbeat, its
//     cordoned ones (cordoned.log.dirs; BrokerHeartbeat v2
//     cordoned_log_dirs).
//   - A new replica's log goes to the directory the controller assigned
//     when it is one of this broker's (storage.Manager.CreateLogIn);
//     when the assignment is UNASSIGNED, MIGRATING or a directory this
//     broker does not have, storage picks one (the uncordoned directory
//     with the fewest partitions).
//   - Whenever a replica's log lives elsewhere than the image says, the
//     broker reports where (AssignReplicasToDirs), from its own goroutine
//     (runDirAssignments), batched per directory and retried until the
//     image agrees. Kafka's AssignmentsManager does the same.

// dirAssignments are the replica directories waiting to be reported.
type dirAssignments struct {
	wake chan struct{} // one pending signal
	// delivered is the newest image LogSyncer.Apply (the controller's
	// OnChange) was called with; it is set before that call queues any
	// report. The controller publishes an image only once OnChange
	// returned, so the wake-up a report sends may run before
	// Controller.Image has the image the report was judged against:
	// judged against the published (previous) image, a report whose
	// replica that image placed in the right directory was dropped as
	// agreed, though the newest image says otherwise, and was never sent
	// (the bug of the coordinator reconciler, stop 27;
	// TestDirAssignmentsDeliveredImage).
	delivered atomic.Pointer[controller.Image]
	mu        struct {
		sync.Mutex
		pending map[replicaKey]controller.Uuid
	}
}

// replicaKey names a partition by topic id.
type replicaKey struct {
	topicID   controller.Uuid
	partition int32
}

func newDirAssignments() *dirAssignments {
	a := &dirAssignments{wake: make(chan struct{}, 1)}
	a.mu.pending = map[replicaKey]controller.Uuid{}
	return a
}

// queue records that the replica lives in dir, to be reported.
func (a *dirAssignments) queue(k replicaKey, dir controller.Uuid) {
	a.mu.Lock()
	old, ok := a.mu.pending[k]
	a.mu.pending[k] = dir
	a.mu.Unlock()
	if ok && old == dir {
		return
	}
	select {
	case a.wake <- struct{}{}:
	default:
	}
}

// take returns the pending reports grouped by directory.
func (a *dirAssignments) take() map[controller.Uuid][]replicaKey {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := map[controller.Uuid][]replicaKey{}
	for k, dir := range a.mu.pending {
		out[dir] = append(out[dir], k)
	}
	return out
}

// done forgets the reports of keys to dir that were not replaced since.
func (a *dirAssignments) done(dir controller.Uuid, keys []replicaKey) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, k := range keys {
		if a.mu.pending[k] == dir {
			delete(a.mu.pending, k)
		}
	}
}

// pathOf returns the log directory whose directory.id is id.
func (f *logDirFailures) pathOf(id controller.Uuid) (string, bool) {
	for path, d := range f.ids {
		if d == id {
			return path, true
		}
	}
	return "", false
}

// onlineIDs returns the directory ids of the log directories that have
// not failed, sorted: the registration's log_dirs.
func (f *logDirFailures) onlineIDs() []controller.Uuid {
	offline := f.offlineIDs()
	var out []controller.Uuid
	for _, id := range f.ids {
		if !slices.Contains(offline, id) {
			out = append(out, id)
		}
	}
	slices.SortFunc(out, func(a, b controller.Uuid) int { return slices.Compare(a[:], b[:]) })
	return out
}

// cordonedIDs returns the directory ids of the cordoned log directories
// paths, sorted and never nil (a heartbeat's empty list uncordons).
func (f *logDirFailures) cordonedIDs(paths []string) []controller.Uuid {
	out := []controller.Uuid{}
	for _, d := range paths {
		if id, ok := f.ids[d]; ok {
			out = append(out, id)
		}
	}
	slices.SortFunc(out, func(a, b controller.Uuid) int { return slices.Compare(a[:], b[:]) })
	return out
}

// cordonedLogDirsName is the setting's name, also a dynamic per-broker
// config (IncrementalAlterConfigs on the broker's own resource).
const cordonedLogDirsName = "cordoned.log.dirs"

// cordonedPaths returns the log directories cordoned now: the broker's
// dynamic cordoned.log.dirs in img when it is set and valid for this
// broker, else the static one.
func cordonedPaths(img *controller.Image, cfg *config.Config) ([]string, error) {
	v, ok := img.BrokerConfigs[strconv.Itoa(int(cfg.NodeID))][cordonedLogDirsName]
	if !ok {
		return cfg.CordonedLogDirs, nil
	}
	dirs, err := config.ResolveCordonedLogDirs(v, cfg.LogDirs)
	if err != nil {
		return cfg.CordonedLogDirs, err
	}
	return dirs, nil
}

// applyCordoned gives storage the cordoned directories of next when they
// change (a dynamic cordoned.log.dirs), before any log of next is
// created.
func (s *LogSyncer) applyCordoned(prev, next *controller.Image) {
	if s.dirs == nil {
		return
	}
	id := strconv.Itoa(int(s.NodeID))
	v, ok := next.BrokerConfigs[id][cordonedLogDirsName]
	if prev != nil {
		if pv, pok := prev.BrokerConfigs[id][cordonedLogDirsName]; pok == ok && pv == v {
			return
		}
	}
	paths, err := cordonedPaths(next, s.Config)
	if err != nil {
		s.Logger.Error("dynamic cordoned.log.dirs does not name this broker's log directories; the static value applies", "value", v, "err", err)
	}
	if ok || prev != nil {
		s.Logger.Info("cordoned log directories", "dirs", paths)
	}
	s.Logs.SetCordonedDirs(paths)
}

// createLog creates tp's log in the directory the image assigns to this
// node's replica of p when it is one of this node's, else in the one
// AlterReplicaLogDirs asked for, else where storage picks.
func (s *LogSyncer) createLog(tp storage.TopicPartition, t *controller.Topic, p controller.Partition, lc storage.LogConfig) (*storage.Log, error) {
	if s.dirs != nil {
		if path, ok := s.dirs.pathOf(p.DirectoryOf(s.NodeID)); ok {
			return s.Logs.CreateLogIn(tp, t.ID, lc, path)
		}
	}
	// AlterReplicaLogDirs named a directory before this node hosted the
	// replica (log_dir_move.go).
	if dir, ok := s.moves.preferredDir(tp); ok && !s.Logs.LogDirFailed(dir) {
		return s.Logs.CreateLogIn(tp, t.ID, lc, dir)
	}
	return s.Logs.CreateLog(tp, t.ID, lc)
}

// checkDir queues a report of where tp's log lives when the image says
// otherwise for this node's replica of p.
func (s *LogSyncer) checkDir(tp storage.TopicPartition, t *controller.Topic, p controller.Partition) {
	if s.dirs == nil {
		return
	}
	path, ok := s.Logs.LogDirOf(tp)
	if !ok {
		return
	}
	id, ok := s.dirs.ids[path]
	if !ok || p.DirectoryOf(s.NodeID) == id {
		return
	}
	s.dirs.assign.queue(replicaKey{t.ID, p.Partition}, id)
}

// dirAssignmentRetry is how long runDirAssignments waits before it
// reports again after a failed report.
const dirAssignmentRetry = time.Second

// runDirAssignments reports the queued replica directories to the active
// controller until ctx ends, leaving out the ones the image already
// agrees with.
func (n *Node) runDirAssignments(ctx context.Context) {
	a := n.dirFailures.assign
	retry := time.NewTimer(time.Hour)
	retry.Stop()
	defer retry.Stop()
	failures := 0
	for {
		select {
		case <-ctx.Done():
			return
		case <-a.wake:
		case <-retry.C:
		}
		if n.brokerEpoch.Load() < 0 {
			retry.Reset(dirAssignmentRetry) // not registered yet
			continue
		}
		failed := a.report(ctx, n.ctrl.Image(), n.cfg.NodeID, func(rctx context.Context, dir controller.Uuid, send []replicaKey) error {
			err := n.assignReplicasToDirs(rctx, dir, groupByTopic(send))
			if err != nil {
				if failures++; failures%10 == 1 && ctx.Err() == nil {
					n.logger.Warn("cannot report replica log directories to the controller; retrying", "directory_id", dir.String(), "replicas", len(send), "err", err)
				}
			}
			return err
		})
		if failed {
			retry.Reset(dirAssignmentRetry)
		} else {
			failures = 0
		}
	}
}

// report sends, with send, the pending reports the newest image known
// (published, or the last one delivered when newer) does not agree with,
// and forgets the ones it agrees with and the ones sent; failed is true
// when a send failed (those stay pending).
func (a *dirAssignments) report(ctx context.Context, published *controller.Image, node int32, send func(ctx context.Context, dir controller.Uuid, keys []replicaKey) error) (failed bool) {
	img := newestImage(published, a.delivered.Load())
	byDir := a.take()
	for _, dir := range slices.SortedFunc(maps.Keys(byDir), func(a, b controller.Uuid) int { return slices.Compare(a[:], b[:]) }) {
		keys := byDir[dir]
		var out []replicaKey
		for _, k := range keys {
			if img == nil || imageDir(img, node, k) != dir {
				out = append(out, k)
			}
		}
		if len(out) == 0 {
			a.done(dir, keys)
			continue
		}
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := send(rctx, dir, out)
		cancel()
		if err != nil {
			failed = true
			continue
		}
		a.done(dir, keys)
	}
	return failed
}

// imageDir returns the directory img gives node's replica of k
// (controller.DirLost when none).
func imageDir(img *controller.Image, node int32, k replicaKey) controller.Uuid {
	t := img.TopicsByID[k.topicID]
	if t == nil || k.partition < 0 || int(k.partition) >= len(t.Partitions) {
		return controller.DirLost
	}
	return t.Partitions[k.partition].DirectoryOf(node)
}

// groupByTopic turns keys into AssignReplicasToDirs' topic list, sorted.
func groupByTopic(keys []replicaKey) []controller.TopicIDPartitions {
	by := map[controller.Uuid][]int32{}
	for _, k := range keys {
		by[k.topicID] = append(by[k.topicID], k.partition)
	}
	var out []controller.TopicIDPartitions
	for _, id := range slices.SortedFunc(maps.Keys(by), func(a, b controller.Uuid) int { return slices.Compare(a[:], b[:]) }) {
		parts := by[id]
		slices.Sort(parts)
		out = append(out, controller.TopicIDPartitions{TopicID: id, Partitions: parts})
	}
	return out
}

// assignReplicasToDirs tells the active controller that replicas live in
// this node's log directory dir (AssignReplicasToDirs, key 73, from a
// broker that is not the active controller).
func (n *Node) assignReplicasToDirs(ctx context.Context, dir controller.Uuid, replicas []controller.TopicIDPartitions) error {
	return n.withController(ctx, func() error {
		return codeErr(n.ctrl.AssignReplicasToDirs(n.cfg.NodeID, n.brokerEpoch.Load(), dir, replicas))
	}, func(ctx context.Context) error {
		req := kmsg.NewPtrAssignReplicasToDirsRequest()
		req.BrokerID, req.BrokerEpoch = n.cfg.NodeID, n.brokerEpoch.Load()
		rd := kmsg.NewAssignReplicasToDirsRequestDirectory()
		rd.ID = dir
		for _, r := range replicas {
			rt := kmsg.NewAssignReplicasToDirsRequestDirectoryTopic()
			rt.TopicID = r.TopicID
			for _, p := range r.Partitions {
				rp := kmsg.NewAssignReplicasToDirsRequestDirectoryTopicPartition()
				rp.Partition = p
				rt.Partitions = append(rt.Partitions, rp)
			}
			rd.Topics = append(rd.Topics, rt)
		}
		req.Directories = append(req.Directories, rd)
		resp, err := n.channel.Request(ctx, req, 0)
		if err != nil {
			return err
		}
		ar := resp.(*kmsg.AssignReplicasToDirsResponse)
		if err := kafkaErr(ar.ErrorCode); err != nil {
			return err
		}
		for _, d := range ar.Directories {
			for _, t := range d.Topics {
				for _, p := range t.Partitions {
					if err := kafkaErr(p.ErrorCode); err != nil {
						return err
					}
				}
			}
		}
		return nil
	})
}

// reportCordonedLocally records this node's cordoned directories at the
// local controller (its heartbeat when it is the active controller) when
// the image does not have them yet.
func (n *Node) reportCordonedLocally() error {
	paths, _ := cordonedPaths(n.ctrl.Image(), n.cfg)
	want := n.dirFailures.cordonedIDs(paths)
	id, epoch := n.cfg.NodeID, n.brokerEpoch.Load()
	if slices.Equal(n.ctrl.Image().CordonedLogDirs(id), want) {
		return nil
	}
	return codeErr(n.ctrl.ReportCordonedLogDirs(id, epoch, want))
}
