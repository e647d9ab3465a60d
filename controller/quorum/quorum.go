package quorum

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"sync"
	"time"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"

	"github.com/samsa-broker/samsa/controller"
)

// Voter is one entry of controller.quorum.voters: a node id and the
// host:port of its controller listener.
type Voter struct {
	ID   int32
	Addr string
}

// Options configure a Quorum.
type Options struct {
	NodeID    int32
	ClusterID string
	// Dir holds the Raft state: raft.db (log and stable store) and
	// snapshots/.
	Dir string
	// Voters is the initial voter set. A node with no Raft state bootstraps
	// the cluster with it; every voter must be given the same list. An
	// Observer may have none (a broker-only node configured with
	// controller.quorum.bootstrap.servers alone).
	Voters []Voter
	// Observer: this node is not a voter (a broker-only node). It never
	// bootstraps; the active controller adds it as a Raft non-voter
	// (AddObserver) when it registers, and it then follows the log.
	Observer bool
	// Transport carries Raft RPCs (the caller closes it). Nil: a TCP
	// transport over Listener; the Quorum then owns the Listener and closes
	// it in Close, or in Open when that fails.
	Transport raft.Transport
	Listener  *Listener
	// ElectionTimeout is how long a follower waits without hearing from a
	// leader before it starts an election (Kafka's
	// controller.quorum.election.timeout.ms; default 1 s). A quorum of one
	// voter waits at most 50 ms: there is nobody else to hear from.
	ElectionTimeout time.Duration
	// SnapshotThreshold is how many entries past the last snapshot trigger
	// the next one (default 8192), checked every SnapshotInterval (default
	// 30 s); TrailingLogs entries are kept after a snapshot so that a
	// briefly absent follower catches up without one (default 4096).
	SnapshotThreshold uint64
	SnapshotInterval  time.Duration
	TrailingLogs      uint64
	// RejoinMinWait is how long, at least, a rejoining node (rejoin.go)
	// refuses votes and stays out of elections after it starts, even once
	// caught up: default two election timeouts, so that any election it
	// voted in before it lost its state has ended.
	RejoinMinWait time.Duration
	// RequestTimeout is how long AddVoter waits for a controller it has
	// just made a member to catch up before it answers that it lags
	// (Kafka's controller.quorum.request.timeout.ms, the time its
	// AddVoterHandler gives a new voter; default 2 s).
	RequestTimeout time.Duration
	Logger         *slog.Logger

	// barrier replaces Raft's Barrier on a leadership gain (tests: a
	// barrier Raft never answers).
	barrier func(*raft.Raft) raft.Future
}

// Quorum is the controller's metadata log on hashicorp/raft. It implements
// controller.Quorum for the Machine it applies committed entries to.
type Quorum struct {
	opts    Options
	raft    *raft.Raft
	machine *controller.Machine
	store   *raftboltdb.BoltStore
	trans   raft.Transport
	ownsTr  bool
	notify  chan bool
	stop    chan struct{}
	// halt is closed first when the quorum closes: it ends the
	// transport's replication retries, which Raft's shutdown waits for.
	halt     chan struct{}
	haltOnce sync.Once
	// heartbeats is closed before the store (heartbeat_gate.go).
	heartbeats heartbeatGate
	wg         sync.WaitGroup
	logger     *slog.Logger

	// progress holds the followers' answers, for Status.
	progress *progressTracker
	// changing is held while a voter change (AddVoter, RemoveVoter,
	// UpdateVoter) runs; a second one is refused (beginChange), as Kafka's
	// leader refuses a voter change while another is pending.
	changing sync.Mutex
	// guard refuses votes while the node rejoins after its damaged store
	// was set aside (rejoin.go); nil when it did not.
	guard *voteGuard
	// timeout is Raft's heartbeat and election timeout once not rejoining.
	timeout time.Duration

	mu struct {
		sync.Mutex
		leading bool
		since   time.Time     // when leading last became true
		changed chan struct{} // closed and replaced when leading changes
	}
}

var _ controller.Quorum = (*Quorum)(nil)

// Open opens (or creates) the Raft state in opts.Dir, bootstraps the voter
// set on first start, and starts Raft. The Machine holds the image restored
// from the latest snapshot; later entries are applied as Raft commits them.
func Open(o Options) (_ *Quorum, err error) {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.ElectionTimeout <= 0 {
		o.ElectionTimeout = time.Second
	}
	if o.SnapshotThreshold == 0 {
		o.SnapshotThreshold = 8192
	}
	if o.SnapshotInterval <= 0 {
		o.SnapshotInterval = 30 * time.Second
	}
	if o.TrailingLogs == 0 {
		o.TrailingLogs = 4096
	}
	if o.RejoinMinWait <= 0 {
		o.RejoinMinWait = 2 * o.ElectionTimeout
	}
	if o.RequestTimeout <= 0 {
		o.RequestTimeout = 2 * time.Second
	}
	if len(o.Voters) == 0 && !o.Observer {
		// An observer may know no voter (a broker-only node configured
		// with controller.quorum.bootstrap.servers alone): it never
		// bootstraps, and learns the voters from the log.
		return nil, fmt.Errorf("%w: no voters", controller.ErrOptions)
	}
	self := false
	for _, v := range o.Voters {
		self = self || v.ID == o.NodeID
	}
	if !self && !o.Observer {
		return nil, fmt.Errorf("%w: node %d is not among the voters %v", controller.ErrOptions, o.NodeID, o.Voters)
	}
	if o.Transport == nil && o.Listener == nil {
		return nil, fmt.Errorf("%w: no Transport or Listener", controller.ErrOptions)
	}
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("quorum: %w", err)
	}
	q := &Quorum{opts: o, logger: o.Logger, notify: make(chan bool, 64), stop: make(chan struct{}), halt: make(chan struct{})}
	q.mu.changed = make(chan struct{})
	hlog := raftLogger(o.Logger)
	defer func() {
		if err != nil {
			close(q.stop)
			q.wg.Wait()
			q.closeStores()
			if !q.ownsTr && o.Listener != nil {
				o.Listener.Close()
			}
		}
	}()
	dbPath := filepath.Join(o.Dir, "raft.db")
	damaged := checkStore(dbPath)
	if damaged == nil {
		damaged = checkSnapshots(o.Dir, controller.NewMachine(o.ClusterID, o.NodeID).Empty(), o.Logger)
	}
	if damaged != nil {
		if !o.Observer && len(o.Voters) < 2 {
			// A lone voter has nobody to fetch the metadata from: starting
			// afresh would form a new, empty cluster.
			return nil, fmt.Errorf("quorum: the metadata store is damaged and this node is the only voter, so it cannot fetch the metadata from another (%w)", damaged)
		}
		if err := setAsideDamaged(o.Dir, damaged, o.Logger); err != nil {
			return nil, err
		}
	}
	rejoin, err := rejoining(o.Dir)
	if err != nil {
		return nil, err
	}
	if rejoin {
		q.guard = &voteGuard{stop: q.stop, wg: &q.wg, logger: o.Logger}
		q.guard.on.Store(true)
	}
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer recoverOpen(dbPath, &err)
	q.store, err = raftboltdb.New(raftboltdb.Options{Path: dbPath})
	if err != nil {
		return nil, fmt.Errorf("quorum: open raft.db: %w", err)
	}
	snaps, err := raft.NewFileSnapshotStoreWithLogger(o.Dir, 3, hlog)
	if err != nil {
		return nil, fmt.Errorf("quorum: snapshot store: %w", err)
	}
	q.trans = o.Transport
	if q.trans == nil {
		q.trans = raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
			Stream: o.Listener, MaxPool: 3, Timeout: 10 * time.Second, Logger: hlog,
		})
		q.ownsTr = true
	}

	conf := raft.DefaultConfig()
	conf.LocalID = serverID(o.NodeID)
	timeout := o.ElectionTimeout
	if len(o.Voters) == 1 {
		timeout = min(timeout, 50*time.Millisecond)
	}
	q.timeout = timeout
	conf.HeartbeatTimeout = timeout
	conf.ElectionTimeout = timeout
	// The active controller steps down when a majority has not answered
	// for this long. Half the timeout (as before) made leaders of a
	// loaded 2-core machine step down and re-elect for tens of seconds
	// (a CI run); Kafka's leader waits 1.5 fetch timeouts (3 s by
	// default). raft allows at most the heartbeat timeout.
	conf.LeaderLeaseTimeout = timeout
	if rejoin {
		// A rejoining voter must not become a candidate either: a
		// candidate votes for itself, in a term it may already have
		// voted in before it lost its state. raft has no switch for
		// that, so its follower timer waits "forever" until
		// finishRejoin restores the timeouts (ReloadConfig).
		conf.HeartbeatTimeout = rejoinHoldTimeout
		conf.ElectionTimeout = rejoinHoldTimeout
	}
	conf.SnapshotThreshold = o.SnapshotThreshold
	conf.SnapshotInterval = o.SnapshotInterval
	conf.TrailingLogs = o.TrailingLogs
	conf.NotifyCh = q.notify
	// A voter removed from the quorum (RemoveVoter demotes it) stays a
	// non-voting member that follows the log, as a removed Kafka
	// controller keeps fetching; raft would shut itself down.
	conf.ShutdownOnRemove = false
	conf.Logger = hlog

	existing, err := raft.HasExistingState(q.store, q.store, snaps)
	if err != nil {
		return nil, fmt.Errorf("quorum: %w", err)
	}
	if !existing && !o.Observer && !rejoin {
		var servers []raft.Server
		for _, v := range o.Voters {
			servers = append(servers, raft.Server{Suffrage: raft.Voter, ID: serverID(v.ID), Address: raft.ServerAddress(v.Addr)})
		}
		if err := raft.BootstrapCluster(conf, q.store, q.store, snaps, q.trans, raft.Configuration{Servers: servers}); err != nil {
			return nil, fmt.Errorf("quorum: bootstrap: %w", err)
		}
		o.Logger.Info("quorum: bootstrapped a new metadata quorum", "voters", o.Voters)
	}
	q.machine = controller.NewMachine(o.ClusterID, o.NodeID)
	q.progress = &progressTracker{peers: map[raft.ServerID]peerProgress{}}
	q.raft, err = raft.NewRaft(conf, &fsm{machine: q.machine, logger: o.Logger}, q.store, q.store, snaps, track(q.trans, q.progress, q.guard, q.halt, &q.heartbeats))
	if err != nil {
		return nil, fmt.Errorf("quorum: start raft: %w", err)
	}
	q.progress.raft.Store(q.raft)
	q.wg.Add(1)
	go q.followLeadership()
	if rejoin {
		o.Logger.Warn("quorum: rejoining the quorum after the metadata store was set aside: not bootstrapping, and refusing votes until caught up")
		q.wg.Add(1)
		go q.finishRejoin(time.Now())
	}
	return q, nil
}

func serverID(id int32) raft.ServerID { return raft.ServerID(strconv.Itoa(int(id))) }

// Machine is the state machine the quorum applies committed entries to;
// give it to controller.New with the Quorum.
func (q *Quorum) Machine() *controller.Machine { return q.machine }

// Raft is the underlying Raft node (stats, tests).
func (q *Quorum) Raft() *raft.Raft { return q.raft }

// followLeadership turns Raft's leadership notifications into Leading: on
// becoming leader it waits (Barrier) until every entry of earlier terms is
// applied, so decisions never read an image that misses committed changes.
func (q *Quorum) followLeadership() {
	defer q.wg.Done()
	for !q.followLeadershipOnce() {
	}
}

// followLeadershipOnce runs the leadership loop until the quorum stops
// (true) or a panic in it, which is logged and answered by running the loop
// again (false), so a bug here never stops the process nor leaves the node
// deaf to leadership changes (issue 11 item 6).
func (q *Quorum) followLeadershipOnce() (stopped bool) {
	defer func() {
		if r := recover(); r != nil {
			q.logger.Error("quorum: panic while following leadership; restarting the loop", "panic", r, "stack", string(debug.Stack()))
			stopped = false
		}
	}()
	for {
		select {
		case <-q.stop:
			return true
		case leader := <-q.notify:
			if !leader {
				q.setLeading(false)
				continue
			}
			barrier := q.raft.Barrier
			if q.opts.barrier != nil {
				barrier = func(time.Duration) raft.Future { return q.opts.barrier(q.raft) }
			}
			if err := q.await(barrier(0)); err != nil {
				if !errors.Is(err, raft.ErrRaftShutdown) {
					q.logger.Info("quorum: lost leadership before catching up", "err", err)
				}
				continue
			}
			if q.raft.State() == raft.Leader {
				q.logger.Info("quorum: this node is the active controller", "term", q.raft.CurrentTerm())
				q.setLeading(true)
			}
		}
	}
}

// await is f.Error() that gives up with raft.ErrRaftShutdown once Close
// has begun. hashicorp/raft (v1.7.2) never answers an Apply or Barrier
// future still queued for its main loop or its FSM when it shuts down, so
// a plain f.Error() there would hang Close on its WaitGroup, or a caller
// of Propose forever. The goroutine left waiting on such a future is
// released only with the process; there is at most one per waiter.
func (q *Quorum) await(f raft.Future) error {
	done := make(chan error, 1)
	go func() { done <- f.Error() }()
	select {
	case err := <-done:
		return err
	case <-q.halt:
		select {
		case err := <-done:
			return err
		default:
			return raft.ErrRaftShutdown
		}
	}
}

func (q *Quorum) setLeading(b bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.mu.leading == b {
		return
	}
	q.mu.leading = b
	if b {
		q.mu.since = time.Now()
	}
	close(q.mu.changed)
	q.mu.changed = make(chan struct{})
}

// Leading implements controller.Quorum.
func (q *Quorum) Leading() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.mu.leading
}

// LeadingSince is when this node last became the active controller (the
// zero time if it never did); the controller counts broker sessions from
// then (controller.ExpireSessions).
func (q *Quorum) LeadingSince() time.Time {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.mu.since
}

// WaitLeading blocks until this node is the active controller or ctx ends.
func (q *Quorum) WaitLeading(ctx context.Context) error {
	for {
		q.mu.Lock()
		leading, changed := q.mu.leading, q.mu.changed
		q.mu.Unlock()
		if leading {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("quorum: waiting to become the active controller: %w", ctx.Err())
		case <-changed:
		}
	}
}

// WaitReady blocks until the quorum has a leader and this node has
// applied every entry it knows to be committed (a voter that is not the
// active controller serves reads from its image once it is ready), or ctx
// ends. It checks every 20 ms: Raft offers no notification for a
// follower's progress.
func (q *Quorum) WaitReady(ctx context.Context) error {
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for {
		if q.LeaderID() >= 0 {
			commit, err := strconv.ParseUint(q.raft.Stats()["commit_index"], 10, 64)
			if err == nil && commit > 0 && q.raft.AppliedIndex() >= commit {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("quorum: waiting for a leader and the committed metadata: %w", ctx.Err())
		case <-q.stop:
			return fmt.Errorf("quorum: closed while waiting for a leader: %w", raft.ErrRaftShutdown)
		case <-t.C:
		}
	}
}

// AddObserver makes node id, reachable for Raft at addr, a non-voting
// member that receives the log (a broker-only node). Only the leader can
// add members; adding a member already present with the same address is
// a no-op.
func (q *Quorum) AddObserver(id int32, addr string) error {
	f := q.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		return fmt.Errorf("quorum: %w", err)
	}
	for _, s := range f.Configuration().Servers {
		if s.ID != serverID(id) {
			continue
		}
		// A voter, or a controller added with AddVoter and removed
		// since (its address carries its listener name), already gets
		// the log on its controller listener: its broker listener may
		// not speak Raft.
		if string(s.Address) == addr || s.Suffrage == raft.Voter || parseMember(s.Address).Listener != "" {
			return nil
		}
	}
	if err := q.raft.AddNonvoter(serverID(id), raft.ServerAddress(addr), 0, 10*time.Second).Error(); err != nil {
		if errors.Is(err, raft.ErrNotLeader) || errors.Is(err, raft.ErrLeadershipLost) {
			return fmt.Errorf("%w: %w", controller.ErrNotController, err)
		}
		return fmt.Errorf("quorum: adding observer %d: %w", id, err)
	}
	return nil
}

// LeaderAddr is the controller listener address (its voter entry) of the
// active controller, "" when unknown.
func (q *Quorum) LeaderAddr() string {
	addr, _ := q.raft.LeaderWithID()
	return string(addr)
}

// LeaderID implements controller.Quorum.
func (q *Quorum) LeaderID() int32 {
	_, id := q.raft.LeaderWithID()
	n, err := strconv.ParseInt(string(id), 10, 32)
	if id == "" || err != nil {
		return -1
	}
	return int32(n)
}

// Propose implements controller.Quorum: the batch becomes one Raft entry.
func (q *Quorum) Propose(base int64, recs []controller.Record) error {
	if !q.Leading() {
		return controller.ErrNotController
	}
	entry, err := controller.EncodeEntry(base, recs)
	if err != nil {
		return err
	}
	f := q.raft.Apply(entry, 0)
	if err := q.await(f); err != nil {
		if errors.Is(err, raft.ErrNotLeader) || errors.Is(err, raft.ErrLeadershipLost) ||
			errors.Is(err, raft.ErrLeadershipTransferInProgress) || errors.Is(err, raft.ErrRaftShutdown) {
			return fmt.Errorf("%w: %w", controller.ErrNotController, err)
		}
		return fmt.Errorf("%w: %w", controller.ErrLogFailed, err)
	}
	if err, ok := f.Response().(error); ok && err != nil {
		return err
	}
	return nil
}

// Close shuts Raft down (this voter stops voting and leading) and closes
// the stores and, if the Quorum created it, the transport.
func (q *Quorum) Close() error {
	var errs []error
	q.haltOnce.Do(func() { close(q.halt) })
	if q.raft != nil {
		if err := q.raft.Shutdown().Error(); err != nil {
			errs = append(errs, err)
		}
	}
	close(q.stop)
	q.wg.Wait()
	q.setLeading(false)
	q.heartbeats.close()
	errs = append(errs, q.closeStores())
	return errors.Join(errs...)
}

func (q *Quorum) closeStores() error {
	var errs []error
	if q.ownsTr && q.trans != nil {
		if c, ok := q.trans.(interface{ Close() error }); ok {
			errs = append(errs, c.Close())
		}
	}
	if q.store != nil {
		errs = append(errs, q.store.Close())
	}
	return errors.Join(errs...)
}
