package quorum

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/raft"
)

// ErrLeaderEndpoint: UpdateVoter was asked to change the endpoint of the
// active controller itself. Its Raft address cannot change while it leads
// (see UpdateVoter); Kafka's voters send UpdateRaftVoter to another node,
// the leader, so a real controller never asks this.
var ErrLeaderEndpoint = errors.New("quorum: the active controller's own endpoint cannot change while it leads")

// UpdateVoter records voter id's controller listener and directory id as
// m (KIP-853 UpdateRaftVoter: a voter tells the leader its endpoints and
// supported kraft.version at start). The voter is found by id and
// directory id; a voter with the zero directory id (one of
// controller.quorum.voters) matches any directory id, as Kafka matches
// the voters of a static quorum, and is given m's. ErrVoterNotFound: no
// such voter; ErrInvalidVoter: m has the zero directory id.
//
// When m encodes to the Raft address the voter already has (the same
// host:port, listener name and directory id: the common case of a voter
// restarting unchanged, whatever its feature range), nothing changes and
// no configuration entry is written.
//
// Any other change is a new Raft address for a live member, which
// hashicorp/raft v1.7.2 cannot apply in place without a data race (its
// leader overwrites the replication goroutine's peer while that goroutine
// reads it in updateLastAppended). So the voter is removed from the
// configuration, added back at its new address as a non-voter, and made a
// voter once it answered the leader there with the commit index: each
// step is one single-server change, which Raft applies safely, and the
// replication goroutine of the old address is stopped before the new
// one starts. While it runs the quorum has one voter fewer (three voters
// tolerate no failure for that moment). The active controller cannot
// remove itself without stepping down, so a change of its own address is
// ErrLeaderEndpoint. ErrNotCaughtUp: the voter did not answer at its new
// address before ctx ended (it is then left a non-voter; AddVoter makes it
// a voter again). A change cut short by a leader change leaves the voter
// out of the voters alike (absent, or a non-voter at its new address):
// the new leader does not finish it, UpdateVoter then answers
// ErrVoterNotFound, and AddVoter (add-controller) repairs it. Kafka's
// UpdateRaftVoter is one VotersRecord and has no such window.
func (q *Quorum) UpdateVoter(ctx context.Context, id int32, m Member) error {
	if m.DirectoryID == ([16]byte{}) {
		return fmt.Errorf("%w: updating node %d", ErrInvalidVoter, id)
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
	var current raft.ServerAddress
	found := false
	for _, s := range conf.Servers {
		if s.ID != serverID(id) || s.Suffrage != raft.Voter {
			continue
		}
		if dir := parseMember(s.Address).DirectoryID; dir == ([16]byte{}) || dir == m.DirectoryID {
			current, found = s.Address, true
		}
	}
	if !found {
		return fmt.Errorf("%w: no voter %d with that directory id", ErrVoterNotFound, id)
	}
	addr := m.serverAddress()
	if addr == current {
		return nil
	}
	if id == q.opts.NodeID {
		return fmt.Errorf("%w: node %d from %s to %s", ErrLeaderEndpoint, id, current, addr)
	}
	timeout := time.Until(deadlineOr(ctx, time.Now().Add(30*time.Second)))
	if err := q.raft.RemoveServer(serverID(id), 0, timeout).Error(); err != nil {
		return q.changeError(id, err)
	}
	q.progress.forget(serverID(id))
	if err := q.raft.AddNonvoter(serverID(id), addr, 0, timeout).Error(); err != nil {
		return q.changeError(id, err)
	}
	if err := q.waitCaughtUp(ctx, serverID(id)); err != nil {
		q.logger.Warn("quorum: a voter whose endpoint changed did not answer at its new address; it stays a non-voter", "node", id, "addr", m.Addr, "err", err)
		return err
	}
	if err := q.raft.AddVoter(serverID(id), addr, 0, timeout).Error(); err != nil {
		return q.changeError(id, err)
	}
	q.logger.Info("quorum: updated a voter's endpoint", "node", id, "from", string(current), "to", string(addr))
	return nil
}

// forget drops what the peer id last answered, so that waitCaughtUp
// waits for an answer from its new address.
func (t *progressTracker) forget(id raft.ServerID) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.peers, id)
}

// LeaderAndEpoch returns the quorum's leader as this node knows it (-1
// when unknown), the Raft term as Kafka's leader epoch, the leader's
// member entry (its controller listener), and whether this node is the
// active controller.
func (q *Quorum) LeaderAndEpoch() (leader int32, epoch int64, m Member, leading bool) {
	addr, _ := q.raft.LeaderWithID()
	leader = q.LeaderID()
	if addr != "" {
		m = parseMember(addr)
	}
	return leader, int64(q.raft.CurrentTerm()), m, q.Leading()
}
