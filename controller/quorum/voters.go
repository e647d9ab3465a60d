package quorum

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/raft"

	"github.com/samsa-broker/samsa/controller"
)

// Errors of the voter changes (KIP-853's AddRaftVoter and RemoveRaftVoter);
// the handlers answer them with Kafka's codes.
var (
	// ErrDuplicateVoter: the node is already a voter (DUPLICATE_VOTER).
	ErrDuplicateVoter = errors.New("quorum: already a voter")
	// ErrVoterNotFound: no voter with that id and directory id, or it is
	// the last voter (VOTER_NOT_FOUND, as Kafka answers both).
	ErrVoterNotFound = errors.New("quorum: voter not found")
	// ErrNotCaughtUp: the new voter did not catch up with the log in time
	// (Kafka answers REQUEST_TIMED_OUT).
	ErrNotCaughtUp = errors.New("quorum: the new voter did not catch up")
	// ErrInvalidVoter: the zero directory id, where Kafka wants a voter's
	// real one (INVALID_REQUEST).
	ErrInvalidVoter = errors.New("quorum: not a valid voter (zero directory id)")
	// ErrChangePending: another voter change is still running, or this
	// leader has not yet committed an entry of its term (Kafka: it has no
	// high watermark yet). Kafka's leader answers REQUEST_TIMED_OUT at once
	// in both cases (AddVoterHandler, RemoveVoterHandler,
	// UpdateVoterHandler), and the client retries.
	ErrChangePending = errors.New("quorum: a voter change is pending")
)

// refusal is a voter change the leader refused, carrying Kafka 4.4's text
// for it (the handlers answer err.Error() as the error message); kind is
// the sentinel it matches.
type refusal struct {
	kind error
	msg  string
}

func (r *refusal) Error() string { return r.msg }
func (r *refusal) Unwrap() error { return r.kind }

// replicaKey is Kafka's ReplicaKey.toString of a voter, as its messages
// name one.
func replicaKey(id int32, dir [16]byte) string {
	d := "<undefined>"
	if dir != ([16]byte{}) {
		d = base64.RawURLEncoding.EncodeToString(dir[:])
	}
	return fmt.Sprintf("ReplicaKey(id=%d, directoryId=%s)", id, d)
}

// beginChange checks, in Kafka's order, that a voter change may start,
// and holds q.changing until the returned func is called.
// controller.ErrNotController: this node does not lead; ErrChangePending:
// another change runs, or this leader's Barrier (the commit of an entry of
// its term) has not returned yet. Kafka also refuses a change while the
// latest VotersRecord is uncommitted; hashicorp/raft has no such window
// outside a change (a configuration change waits until the previous one
// is committed), and q.changing covers those of this node.
func (q *Quorum) beginChange() (func(), error) {
	if q.raft.State() != raft.Leader {
		return nil, controller.ErrNotController
	}
	if !q.changing.TryLock() {
		return nil, &refusal{ErrChangePending, "Request timed out waiting for leader to handle previous voter change request"}
	}
	if !q.Leading() {
		q.changing.Unlock()
		if q.raft.State() != raft.Leader {
			return nil, controller.ErrNotController
		}
		return nil, &refusal{ErrChangePending, "Request timed out waiting for leader to establish HWM and fence previous voter changes"}
	}
	return q.changing.Unlock, nil
}

// caughtUp reports whether member id is caught up enough to become a
// voter, as Kafka's LeaderState.isReplicaCaughtUp decides for an
// observer: in this leader's term it has once answered with the leader's
// last index at the time of the request (lastCaughtUp), and it answered
// within the last hour. A member that never answered this leader is not.
func caughtUp(p peerProgress, ok bool, term uint64, now time.Time) bool {
	return ok && p.term == term && !p.lastCaughtUp.IsZero() && now.Sub(p.lastContact) < time.Hour
}

// lagging is Kafka's answer for a new voter that is not caught up.
func lagging(id int32, dir [16]byte) error {
	return &refusal{ErrNotCaughtUp, fmt.Sprintf("Aborted add voter operation for %s since it is lagging behind", replicaKey(id, dir))}
}

// Member is how a member of the Raft configuration is reached and named
// in Kafka's terms. Raft keeps one address string per server; samsa
// stores the member's Kafka controller listener name and directory id
// after its host:port in it ("host:port;listener=NAME;directory=ID"), so
// the voter set with its directory ids lives in Raft's configuration
// entries: replicated, kept in snapshots and across restarts, and the
// same on every node. Voters of controller.quorum.voters carry only
// host:port (no directory id, as in a static Kafka quorum).
type Member struct {
	// Addr is host:port of the member's controller listener (its Raft
	// transport address).
	Addr string
	// Listener is the Kafka listener name of Addr; "" when the member
	// came from controller.quorum.voters (the first of
	// controller.listener.names).
	Listener string
	// DirectoryID is the member's metadata directory id (meta.properties
	// directory.id); zero when unknown.
	DirectoryID [16]byte
	// Unregistered marks a non-voting controller whose registration
	// UnregisterController removed (";unregistered=1"); AddVoter, which
	// adds the member afresh, clears it. Builds that do not know the
	// field ignore it.
	Unregistered bool
}

// serverAddress encodes m as a Raft server address.
func (m Member) serverAddress() raft.ServerAddress {
	s := m.Addr
	if m.Listener != "" {
		s += ";listener=" + m.Listener
	}
	if m.DirectoryID != ([16]byte{}) {
		s += ";directory=" + base64.RawURLEncoding.EncodeToString(m.DirectoryID[:])
	}
	if m.Unregistered {
		s += ";unregistered=1"
	}
	return raft.ServerAddress(s)
}

// parseMember decodes a Raft server address; unknown or garbled fields
// are ignored (an address from a later build stays dialable).
func parseMember(a raft.ServerAddress) Member {
	parts := strings.Split(string(a), ";")
	m := Member{Addr: parts[0]}
	for _, p := range parts[1:] {
		k, v, _ := strings.Cut(p, "=")
		switch k {
		case "listener":
			m.Listener = v
		case "directory":
			if b, err := base64.RawURLEncoding.DecodeString(v); err == nil && len(b) == 16 {
				copy(m.DirectoryID[:], b)
			}
		case "unregistered":
			m.Unregistered = v == "1"
		}
	}
	return m
}

// dialAddress is the host:port part of a Raft server address.
func dialAddress(a raft.ServerAddress) raft.ServerAddress {
	if i := strings.IndexByte(string(a), ';'); i >= 0 {
		return a[:i]
	}
	return a
}

// AddVoter makes node id a voter of the quorum (KIP-853 AddRaftVoter).
// The node must run a controller that has not bootstrapped a quorum of
// its own (a controller started with controller.quorum.bootstrap.servers
// naming this quorum, or a voter removed earlier).
//
// As Kafka 4.4's AddVoterHandler, only a node that is caught up becomes a
// voter, and one that is not is refused at once rather than waited for:
// adding a voter that cannot answer yet would leave the quorum waiting on
// it. Kafka's joining controller fetches the log as an observer from its
// start, so its leader only checks that it has caught up (caughtUp) and
// answers REQUEST_TIMED_OUT "... since it is lagging behind" otherwise. A
// samsa controller receives the log once it is a Raft member: a member
// already (a non-voter at the same address: a removed voter, or a node an
// earlier AddVoter left lagging) is checked at once; any other node is
// made a non-voter first and given Options.RequestTimeout (Kafka's
// controller.quorum.request.timeout.ms, the time its handler gives the
// new voter) to catch up. One that answered in that time but lags stays a
// non-voter, receiving the log, so that add-controller succeeds again once
// it caught up (Kafka's observer likewise keeps fetching); one that never
// answered is taken out again. A member at another address (a removed
// voter coming back with its directory id) is removed and added afresh.
//
// Only the active controller adds voters (controller.ErrNotController
// elsewhere). ErrChangePending: another change runs, or this leader is
// new (beginChange). ErrDuplicateVoter: id already votes; ErrNotCaughtUp:
// it lags or did not answer, or the change was not committed before ctx
// ended; ErrInvalidVoter: m has the zero directory id.
func (q *Quorum) AddVoter(ctx context.Context, id int32, m Member) error {
	if m.DirectoryID == ([16]byte{}) {
		return fmt.Errorf("%w: adding node %d", ErrInvalidVoter, id)
	}
	done, err := q.beginChange()
	if err != nil {
		return err
	}
	defer done()
	conf, err := q.configuration()
	if err != nil {
		return err
	}
	var present bool
	addr := m.serverAddress()
	timeout := time.Until(deadlineOr(ctx, time.Now().Add(30*time.Second)))
	for _, s := range conf.Servers {
		if s.ID != serverID(id) {
			continue
		}
		if s.Suffrage == raft.Voter {
			var voters []string
			for _, v := range conf.Servers {
				if v.Suffrage == raft.Voter {
					voters = append(voters, replicaKey(idOf(v.ID), parseMember(v.Address).DirectoryID))
				}
			}
			return &refusal{ErrDuplicateVoter, fmt.Sprintf("The voter id for %s is already part of the set of voters [%s].", replicaKey(id, m.DirectoryID), strings.Join(voters, ", "))}
		}
		present = s.Address == addr
		if !present {
			// A member whose address changes is removed and added
			// afresh: hashicorp/raft v1.7.2 races (updateLastAppended
			// reads the peer unlocked) when it updates the address of
			// a member it replicates to.
			if err := q.raft.RemoveServer(serverID(id), 0, timeout).Error(); err != nil {
				return q.changeError(id, err)
			}
		}
	}
	if present {
		p, ok := q.progress.get(serverID(id))
		if !caughtUp(p, ok, q.raft.CurrentTerm(), time.Now()) {
			return lagging(id, m.DirectoryID)
		}
	} else {
		q.progress.forget(serverID(id))
		if err := q.raft.AddNonvoter(serverID(id), addr, 0, timeout).Error(); err != nil {
			return q.changeError(id, err)
		}
		wctx, cancel := context.WithTimeout(ctx, q.opts.RequestTimeout)
		err := q.waitCaughtUp(wctx, serverID(id))
		cancel()
		if err != nil {
			if _, answered := q.progress.get(serverID(id)); answered {
				q.logger.Info("quorum: a new voter lags; it stays a non-voter and receives the log", "node", id)
				return lagging(id, m.DirectoryID)
			}
			if rerr := q.raft.RemoveServer(serverID(id), 0, 5*time.Second).Error(); rerr != nil {
				q.logger.Warn("quorum: cannot take back a new voter that did not answer", "node", id, "err", rerr)
			}
			return &refusal{ErrNotCaughtUp, fmt.Sprintf("Aborted add voter operation for %s since it did not answer at %s", replicaKey(id, m.DirectoryID), m.Addr)}
		}
	}
	if err := q.raft.AddVoter(serverID(id), addr, 0, timeout).Error(); err != nil {
		return q.changeError(id, err)
	}
	q.logger.Info("quorum: added a voter", "node", id, "addr", m.Addr, "listener", m.Listener)
	return nil
}

// idOf is the node id of a Raft server id (-1 when it is none).
func idOf(s raft.ServerID) int32 {
	id, err := strconv.ParseInt(string(s), 10, 32)
	if err != nil {
		return -1
	}
	return int32(id)
}

// RemoveVoter takes node id out of the voters (KIP-853 RemoveRaftVoter).
// directoryID must be the one the quorum knows for it (DescribeQuorum's,
// zero for voters of controller.quorum.voters), else ErrVoterNotFound, as
// is removing the last voter; the zero id naming no such voter is
// ErrInvalidVoter (Kafka refuses the zero id as INVALID_REQUEST; its static
// quorums cannot change at all). As in Kafka, the removed node keeps
// receiving the log, as a non-voting member (an observer): a combined
// node goes on serving as a broker, and AddVoter makes it a voter again.
// Removing the active controller itself makes it step down once the
// change is committed.
func (q *Quorum) RemoveVoter(ctx context.Context, id int32, directoryID [16]byte) error {
	done, err := q.beginChange()
	if err != nil {
		return err
	}
	defer done()
	conf, err := q.configuration()
	if err != nil {
		return err
	}
	voters, found := 0, false
	for _, s := range conf.Servers {
		if s.Suffrage != raft.Voter {
			continue
		}
		voters++
		if s.ID == serverID(id) && parseMember(s.Address).DirectoryID == directoryID {
			found = true
		}
	}
	if directoryID == ([16]byte{}) && !found {
		return fmt.Errorf("%w: removing node %d", ErrInvalidVoter, id)
	}
	if !found {
		return fmt.Errorf("%w: no voter %d with directory id %s", ErrVoterNotFound, id, base64.RawURLEncoding.EncodeToString(directoryID[:]))
	}
	if voters == 1 {
		return fmt.Errorf("%w: node %d is the last voter", ErrVoterNotFound, id)
	}
	timeout := time.Until(deadlineOr(ctx, time.Now().Add(30*time.Second)))
	if err := q.raft.DemoteVoter(serverID(id), 0, timeout).Error(); err != nil {
		if id != q.opts.NodeID || !errors.Is(err, raft.ErrLeadershipLost) {
			return q.changeError(id, err)
		}
		// The active controller removed itself: raft steps down once the
		// change commits and may then fail the change's future with
		// ErrLeadershipLost. It committed if the next leader's log, which
		// this node follows, has it.
		if werr := q.waitDemoted(ctx); werr != nil {
			return q.changeError(id, err)
		}
	}
	q.logger.Info("quorum: removed a voter; it stays an observer", "node", id)
	return nil
}

// waitDemoted polls (every 20 ms) until another node leads and this
// node's configuration, which follows that leader's log, shows it as a
// non-voter, or ctx ends.
func (q *Quorum) waitDemoted(ctx context.Context) error {
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for {
		if leader := q.LeaderID(); leader >= 0 && leader != q.opts.NodeID {
			if _, votes, err := q.Members(); err == nil && !votes[q.opts.NodeID] {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-q.stop:
			return raft.ErrRaftShutdown
		case <-t.C:
		}
	}
}

// Members returns the Raft configuration as node ids with their Member
// and whether they vote, as this node knows it.
func (q *Quorum) Members() (map[int32]Member, map[int32]bool, error) {
	conf, err := q.configuration()
	if err != nil {
		return nil, nil, err
	}
	members, votes := map[int32]Member{}, map[int32]bool{}
	for _, s := range conf.Servers {
		id, err := strconv.ParseInt(string(s.ID), 10, 32)
		if err != nil {
			continue
		}
		members[int32(id)] = parseMember(s.Address)
		votes[int32(id)] = s.Suffrage == raft.Voter
	}
	return members, votes, nil
}

func (q *Quorum) configuration() (raft.Configuration, error) {
	f := q.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		return raft.Configuration{}, fmt.Errorf("quorum: configuration: %w", err)
	}
	return f.Configuration(), nil
}

// changeError maps a failed configuration change.
func (q *Quorum) changeError(id int32, err error) error {
	if errors.Is(err, raft.ErrNotLeader) || errors.Is(err, raft.ErrLeadershipLost) ||
		errors.Is(err, raft.ErrLeadershipTransferInProgress) || errors.Is(err, raft.ErrRaftShutdown) {
		return fmt.Errorf("%w: %w", controller.ErrNotController, err)
	}
	if errors.Is(err, raft.ErrEnqueueTimeout) {
		return fmt.Errorf("%w: node %d: %w", ErrNotCaughtUp, id, err)
	}
	return fmt.Errorf("quorum: changing the membership of node %d: %w", id, err)
}

// waitCaughtUp polls (every 20 ms; raft has no notification for a
// follower's progress) until member id is caughtUp, or ctx ends
// (ErrNotCaughtUp).
func (q *Quorum) waitCaughtUp(ctx context.Context, id raft.ServerID) error {
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for {
		if p, ok := q.progress.get(id); caughtUp(p, ok, q.raft.CurrentTerm(), time.Now()) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w: node %s: %w", ErrNotCaughtUp, id, ctx.Err())
		case <-q.stop:
			return fmt.Errorf("%w: %w", controller.ErrNotController, raft.ErrRaftShutdown)
		case <-t.C:
		}
	}
}

func deadlineOr(ctx context.Context, def time.Time) time.Time {
	if d, ok := ctx.Deadline(); ok {
		return d
	}
	return def
}
