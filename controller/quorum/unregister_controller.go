package quorum

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/raft"

	"github.com/samsa-broker/samsa/controller"
)

// Errors of UnregisterController; the handler answers them with Kafka's
// codes.
var (
	// ErrControllerNotRegistered: no registered controller has that id
	// (CONTROLLER_ID_NOT_REGISTERED).
	ErrControllerNotRegistered = errors.New("quorum: controller not registered")
	// ErrUnregisterActive: the active controller was asked to unregister
	// itself (INVALID_REQUEST, "Controller cannot unregister itself while
	// it is active.").
	ErrUnregisterActive = errors.New("quorum: the active controller cannot unregister itself")
)

// UnregisterController removes the registration of controller id
// (Kafka's UnregisterController, key 94; kafka-cluster unregister-controller,
// kafka-metadata-quorum remove-controller --unregister).
//
// Kafka keeps controller registrations in its metadata apart from the
// voter set, and lists them in DescribeCluster on a controller listener.
// samsa's registered controllers are members of the Raft configuration
// (Member.Registered): the voters, and the controllers added with
// AddVoter and removed since, which keep receiving the log as non-voting
// members. As in Kafka, asking the active controller to unregister itself
// is ErrUnregisterActive (checked first), and an id that is not
// registered ErrControllerNotRegistered. A removed controller is marked
// unregistered (its Raft address gets ";unregistered=1", so every node
// agrees): it goes on receiving the log, as a combined node's broker
// needs, and is no longer listed; AddVoter registers it again. A voter
// stays registered: its registration is its vote, which RemoveVoter ends
// (Kafka removes a voter's registration, and a running controller writes
// it again at once). Only the active controller changes the configuration
// (controller.ErrNotController elsewhere).
func (q *Quorum) UnregisterController(ctx context.Context, id int32) error {
	if !q.Leading() {
		return controller.ErrNotController
	}
	if id == q.opts.NodeID {
		return fmt.Errorf("%w: node %d", ErrUnregisterActive, id)
	}
	conf, err := q.configuration()
	if err != nil {
		return err
	}
	for _, s := range conf.Servers {
		if s.ID != serverID(id) {
			continue
		}
		m, voter := parseMember(s.Address), s.Suffrage == raft.Voter
		if !m.Registered(voter) {
			break
		}
		if voter {
			q.logger.Info("quorum: unregister of a voter: it stays registered while it votes", "node", id)
			return nil
		}
		// A member whose address changes is removed and added afresh
		// (see AddVoter: hashicorp/raft v1.7.2 races when it updates the
		// address of a member it replicates to).
		m.Unregistered = true
		timeout := time.Until(deadlineOr(ctx, time.Now().Add(30*time.Second)))
		if err := q.raft.RemoveServer(serverID(id), 0, timeout).Error(); err != nil {
			return q.changeError(id, err)
		}
		if err := q.raft.AddNonvoter(serverID(id), m.serverAddress(), 0, timeout).Error(); err != nil {
			q.logger.Error("quorum: unregistered controller left the configuration; it gets the log again once re-added (AddRaftVoter) or restarted as an observer", "node", id, "err", err)
			return q.changeError(id, err)
		}
		q.logger.Info("quorum: unregistered a removed controller; it keeps receiving the log", "node", id)
		return nil
	}
	return fmt.Errorf("%w: node %d", ErrControllerNotRegistered, id)
}
