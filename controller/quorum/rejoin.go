package quorum

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"

	"github.com/samsa-broker/samsa/controller"
)

// rejoinMarker is the file, in the quorum's Dir, that says this node's
// Raft state was set aside as damaged and it has not caught up with the
// quorum since. While it exists the node never bootstraps a quorum (even
// with no Raft state at all, which would otherwise look like a first
// start and form a new cluster) and refuses every vote (voteGuard).
const rejoinMarker = "rejoining"

// rejoinCheckInterval is how often a rejoining node checks whether it has
// caught up (raft offers no notification for a follower's progress).
const rejoinCheckInterval = 50 * time.Millisecond

// rejoinHoldTimeout is the Raft heartbeat and election timeout of a
// rejoining voter: long enough that it never starts an election (and so
// never votes for itself) before finishRejoin gives it the configured
// timeouts back.
const rejoinHoldTimeout = 1000 * time.Hour

// setAsideDamaged moves the damaged Raft state aside, as
// dir.damaged-<unix ms>, and leaves an empty dir holding only the rejoin
// marker: the node starts afresh and fetches the metadata log (or a
// snapshot) from the active controller. Nothing is deleted: the old files
// stay for an operator to look at. Partition data is not touched.
func setAsideDamaged(dir string, cause error, logger *slog.Logger) error {
	aside := fmt.Sprintf("%s.damaged-%d", dir, time.Now().UnixMilli())
	if err := os.Rename(dir, aside); err != nil {
		return fmt.Errorf("quorum: the metadata store is damaged (%w) and cannot be set aside: %w", cause, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("quorum: %w", err)
	}
	note := fmt.Sprintf("moved the damaged metadata store to %s: %v\n", aside, cause)
	if err := writeSynced(filepath.Join(dir, rejoinMarker), []byte(note)); err != nil {
		return fmt.Errorf("quorum: %w", err)
	}
	logger.Error("quorum: the metadata store of this node is damaged; moved it aside and fetching the metadata from the quorum again",
		"err", cause, "moved_to", aside)
	return nil
}

// writeSynced writes a small file and syncs it and its directory.
func writeSynced(path string, data []byte) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return syncDir(filepath.Dir(path))
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

func rejoining(dir string) (bool, error) {
	_, err := os.Stat(filepath.Join(dir, rejoinMarker))
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	}
	return false, fmt.Errorf("quorum: %w", err)
}

// errRejoining answers a leadership transfer to a rejoining voter.
var errRejoining = errors.New("quorum: rejoining the quorum after the metadata store was set aside")

// voteGuard answers vote and pre-vote requests "not granted" while on,
// without showing them to Raft. A voter that lost its Raft state forgot
// its term and its vote: granting a vote in a term it may already have
// voted in could elect two leaders in one term. Kafka gives such a node a
// new directory id, which makes it a new replica until an operator
// swaps it in (KIP-853); samsa keeps the node's identity but lets it vote
// again only once it has caught up with a leader and a whole election
// has had time to end since its start (any election it voted in before
// losing its state has then ended, and its term is the leader's).
type voteGuard struct {
	on     atomic.Bool
	stop   <-chan struct{}
	wg     *sync.WaitGroup
	once   sync.Once
	out    chan raft.RPC
	logger *slog.Logger
}

func (g *voteGuard) consumer(in <-chan raft.RPC) <-chan raft.RPC {
	g.once.Do(func() {
		g.out = make(chan raft.RPC)
		g.wg.Add(1)
		go g.run(in)
	})
	return g.out
}

func (g *voteGuard) run(in <-chan raft.RPC) {
	defer g.wg.Done()
	for {
		var rpc raft.RPC
		select {
		case <-g.stop:
			return
		case rpc = <-in:
		}
		if g.on.Load() {
			switch req := rpc.Command.(type) {
			case *raft.RequestVoteRequest:
				g.logger.Info("quorum: refusing a vote while rejoining the quorum", "candidate", string(req.ID), "term", req.Term)
				rpc.Respond(&raft.RequestVoteResponse{Term: req.Term, Granted: false}, nil)
				continue
			case *raft.RequestPreVoteRequest:
				rpc.Respond(&raft.RequestPreVoteResponse{Term: req.Term, Granted: false}, nil)
				continue
			case *raft.TimeoutNowRequest:
				// A leadership transfer to this node would make it a
				// candidate at once, voting for itself.
				g.logger.Info("quorum: refusing to take over the leadership while rejoining the quorum", "leader", string(req.ID))
				rpc.Respond(nil, errRejoining)
				continue
			}
		}
		select {
		case g.out <- rpc:
		case <-g.stop:
			return
		}
	}
}

// Rejoining reports whether this node still catches up after its damaged
// metadata store was set aside (it votes again once it is done).
func (q *Quorum) Rejoining() bool { return q.guard != nil && q.guard.on.Load() }

// finishRejoin waits until the rejoining node has a leader, has applied
// the commit index it learned from it, and has run for RejoinMinWait (two
// election timeouts); then it removes the rejoin marker, gives Raft its
// election timeouts back and lets the node vote.
func (q *Quorum) finishRejoin(started time.Time) {
	defer q.wg.Done()
	t := time.NewTicker(rejoinCheckInterval)
	defer t.Stop()
	for {
		select {
		case <-q.stop:
			return
		case <-t.C:
		}
		if time.Since(started) < q.opts.RejoinMinWait || q.LeaderID() < 0 || q.raft.State() != raft.Follower {
			continue
		}
		commit, err := strconv.ParseUint(q.raft.Stats()["commit_index"], 10, 64)
		if err != nil || commit == 0 || q.raft.AppliedIndex() < commit {
			continue
		}
		if err := os.Remove(filepath.Join(q.opts.Dir, rejoinMarker)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			q.logger.Error("quorum: cannot remove the rejoin marker; still refusing votes", "err", err)
			continue
		}
		if err := syncDir(q.opts.Dir); err != nil {
			q.logger.Error("quorum: cannot sync the metadata dir after rejoining", "err", err)
		}
		rc := q.raft.ReloadableConfig()
		rc.HeartbeatTimeout, rc.ElectionTimeout = q.timeout, q.timeout
		if err := q.raft.ReloadConfig(rc); err != nil {
			q.logger.Error("quorum: cannot restore the election timeouts after rejoining; still refusing votes", "err", err)
			continue
		}
		q.guard.on.Store(false)
		q.logger.Info("quorum: caught up with the quorum after the damaged metadata store was set aside; voting again",
			"applied", q.raft.AppliedIndex(), "term", q.raft.CurrentTerm())
		return
	}
}

// checkSnapshots reports controller.ErrCorrupt when the snapshot store
// holds snapshots and none of them can be read: raft would then refuse
// to start ("failed to load any existing snapshots"). One good snapshot
// is enough (raft skips the bad newer ones).
func checkSnapshots(dir string, empty *controller.Image, logger *slog.Logger) error {
	snaps, err := raft.NewFileSnapshotStoreWithLogger(dir, 3, raftLogger(logger))
	if err != nil {
		return fmt.Errorf("%w: snapshot store: %w", controller.ErrCorrupt, err)
	}
	list, err := snaps.List()
	if err != nil {
		return fmt.Errorf("%w: snapshot list: %w", controller.ErrCorrupt, err)
	}
	var errs []error
	for _, m := range list {
		_, rc, err := snaps.Open(m.ID)
		if err == nil {
			_, err = controller.ReadSnapshot(rc, empty)
			rc.Close()
		}
		if err == nil {
			return nil
		}
		errs = append(errs, fmt.Errorf("snapshot %s: %w", m.ID, err))
	}
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("%w: no readable snapshot: %w", controller.ErrCorrupt, errors.Join(errs...))
}
