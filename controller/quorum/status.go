package quorum

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
)

// ErrNotLeader is returned by Status on a node that is not the Raft
// leader: only the leader knows how far the others replicated.
var ErrNotLeader = errors.New("quorum: not the leader")

// ReplicaStatus is what the leader knows of one member of the quorum, in
// the terms of Kafka's DescribeQuorum: offsets are Raft log indexes (the
// metadata log's entry n has index n, so the last index is also the log
// end offset).
type ReplicaStatus struct {
	ID int32
	// LogEndOffset is the member's last log index as its last answer to
	// the leader reported it; -1 when it has not answered this leader.
	LogEndOffset int64
	// LastFetch is when the member last answered the leader (Kafka's
	// LastFetchTimestamp), and LastCaughtUp when it last answered with
	// everything the leader had when asking; zero when never.
	LastFetch    time.Time
	LastCaughtUp time.Time
	// Member is the member's address, Kafka listener name and directory
	// id as the Raft configuration holds them.
	Member Member
}

// Status is the quorum as its leader sees it (Kafka's DescribeQuorum).
type Status struct {
	LeaderID int32
	// LeaderEpoch is the Raft term.
	LeaderEpoch int64
	// HighWatermark is the commit index.
	HighWatermark int64
	// Voters and Observers (Raft non-voters: broker-only nodes) in id
	// order; the leader is among the voters.
	Voters, Observers []ReplicaStatus
}

// Status returns the quorum's replication state; ErrNotLeader when this
// node does not lead it.
func (q *Quorum) Status() (Status, error) {
	if q.raft.State() != raft.Leader {
		return Status{}, ErrNotLeader
	}
	f := q.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		return Status{}, fmt.Errorf("quorum: configuration: %w", err)
	}
	now := time.Now()
	st := Status{LeaderID: q.opts.NodeID, LeaderEpoch: int64(q.raft.CurrentTerm()), HighWatermark: int64(q.raft.CommitIndex())}
	for _, s := range f.Configuration().Servers {
		id, err := strconv.ParseInt(string(s.ID), 10, 32)
		if err != nil {
			continue
		}
		rs := ReplicaStatus{ID: int32(id), LogEndOffset: -1, Member: parseMember(s.Address)}
		if int32(id) == q.opts.NodeID {
			rs.LogEndOffset, rs.LastFetch, rs.LastCaughtUp = int64(q.raft.LastIndex()), now, now
		} else if p, ok := q.progress.get(s.ID); ok && p.term == q.raft.CurrentTerm() {
			rs.LogEndOffset, rs.LastFetch, rs.LastCaughtUp = int64(p.lastLog), p.lastContact, p.lastCaughtUp
		}
		if s.Suffrage == raft.Voter {
			st.Voters = append(st.Voters, rs)
		} else {
			st.Observers = append(st.Observers, rs)
		}
	}
	byID := func(a, b ReplicaStatus) int { return int(a.ID) - int(b.ID) }
	slices.SortFunc(st.Voters, byID)
	slices.SortFunc(st.Observers, byID)
	return st, nil
}

// peerProgress is what one peer's answers to AppendEntries told.
type peerProgress struct {
	term         uint64 // the leader term of the request
	lastLog      uint64
	lastContact  time.Time
	lastCaughtUp time.Time
}

// progressTracker records the peers' answers to the leader's
// AppendEntries (heartbeats included): hashicorp/raft keeps its
// followers' match indexes to itself, and DescribeQuorum needs them.
type progressTracker struct {
	// raft is the local Raft, for its last index (nil until it exists).
	raft  atomic.Pointer[raft.Raft]
	mu    sync.Mutex
	peers map[raft.ServerID]peerProgress
}

func (t *progressTracker) get(id raft.ServerID) (peerProgress, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	p, ok := t.peers[id]
	return p, ok
}

// record notes an answer; leaderLast is the leader's last index when the
// request was sent.
func (t *progressTracker) record(id raft.ServerID, term uint64, resp *raft.AppendEntriesResponse, leaderLast uint64, now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	p := t.peers[id]
	if p.term != term {
		p = peerProgress{term: term}
	}
	p.lastLog, p.lastContact = resp.LastLog, now
	if resp.LastLog >= leaderLast {
		p.lastCaughtUp = now
	}
	t.peers[id] = p
}

// trackingTransport is the Raft transport with the answers to
// AppendEntries recorded. It turns pipelining off, so that every answer
// goes through AppendEntries: the metadata log is small and rarely
// written, and hashicorp/raft falls back to one request at a time.
type trackingTransport struct {
	raft.Transport
	progress *progressTracker
	// guard, when set, refuses votes while a voter rejoins (rejoin.go).
	guard *voteGuard
	// halt, closed when the quorum closes, ends replication retries;
	// retryEvery and retryFor pace them (retry.go).
	halt                 <-chan struct{}
	retryEvery, retryFor time.Duration
	// heartbeats, when set, gates Raft's heartbeat handler
	// (heartbeat_gate.go).
	heartbeats *heartbeatGate
}

func (t *trackingTransport) AppendEntries(id raft.ServerID, target raft.ServerAddress, args *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) error {
	var leaderLast uint64
	if r := t.progress.raft.Load(); r != nil {
		leaderLast = r.LastIndex()
	}
	err := t.appendWithRetry(args, resp, func() error {
		return t.Transport.AppendEntries(id, dialAddress(target), args, resp)
	})
	if err == nil && resp.Term <= args.Term {
		t.progress.record(id, args.Term, resp, leaderLast, time.Now())
	}
	return err
}

// RequestVote, InstallSnapshot and TimeoutNow dial the host:port part of
// a member's address (Member).
func (t *trackingTransport) RequestVote(id raft.ServerID, target raft.ServerAddress, args *raft.RequestVoteRequest, resp *raft.RequestVoteResponse) error {
	return t.Transport.RequestVote(id, dialAddress(target), args, resp)
}

func (t *trackingTransport) InstallSnapshot(id raft.ServerID, target raft.ServerAddress, args *raft.InstallSnapshotRequest, resp *raft.InstallSnapshotResponse, data io.Reader) error {
	return t.Transport.InstallSnapshot(id, dialAddress(target), args, resp, data)
}

func (t *trackingTransport) TimeoutNow(id raft.ServerID, target raft.ServerAddress, args *raft.TimeoutNowRequest, resp *raft.TimeoutNowResponse) error {
	return t.Transport.TimeoutNow(id, dialAddress(target), args, resp)
}

// Consumer is the wrapped transport's RPCs, through the vote guard when
// there is one (rejoin.go).
func (t *trackingTransport) Consumer() <-chan raft.RPC {
	if t.guard == nil {
		return t.Transport.Consumer()
	}
	return t.guard.consumer(t.Transport.Consumer())
}

func (t *trackingTransport) AppendEntriesPipeline(raft.ServerID, raft.ServerAddress) (raft.AppendPipeline, error) {
	return nil, raft.ErrPipelineReplicationNotSupported
}

// Close closes the wrapped transport if it can be (raft.WithClose).
func (t *trackingTransport) Close() error {
	if c, ok := t.Transport.(raft.WithClose); ok {
		return c.Close()
	}
	return nil
}

// trackingPreVoteTransport keeps pre-vote (raft.WithPreVote) for wrapped
// transports that have it; hashicorp/raft enables it by a type check.
type trackingPreVoteTransport struct {
	*trackingTransport
	preVote raft.WithPreVote
}

func (t trackingPreVoteTransport) RequestPreVote(id raft.ServerID, target raft.ServerAddress, args *raft.RequestPreVoteRequest, resp *raft.RequestPreVoteResponse) error {
	return t.preVote.RequestPreVote(id, dialAddress(target), args, resp)
}

// track wraps tr so that the answers to AppendEntries go to p (and votes
// go through g, when not nil), with failed replication requests retried
// until halt is closed (retry.go), and heartbeats handled through hb,
// when not nil.
func track(tr raft.Transport, p *progressTracker, g *voteGuard, halt <-chan struct{}, hb *heartbeatGate) raft.Transport {
	t := &trackingTransport{Transport: tr, progress: p, guard: g, halt: halt, retryEvery: replicationRetryEvery, retryFor: replicationRetryFor, heartbeats: hb}
	if pv, ok := tr.(raft.WithPreVote); ok {
		return trackingPreVoteTransport{trackingTransport: t, preVote: pv}
	}
	return t
}
