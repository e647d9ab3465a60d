package quorum

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
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

// registered reports whether member id of the Raft configuration is a
// registered controller: a voter; or a non-voting member that is a
// controller removed from the voters (a non-voting member whose address
// is not one of the advertised listeners broker id registered in img,
// which is where a broker-only node receives the log: AddObserver) and
// was not unregistered since. A member added by AddVoter carries its
// listener name, and is a controller whatever img says.
func registered(img *controller.Image, id int32, m Member, voter bool) bool {
	if voter {
		return true
	}
	if m.Unregistered {
		return false
	}
	if m.Listener != "" {
		return true
	}
	b, ok := img.Brokers[id]
	if !ok {
		return true
	}
	if m.Addr == net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port))) {
		return false
	}
	for _, l := range b.Listeners {
		if m.Addr == net.JoinHostPort(l.Host, strconv.Itoa(int(l.Port))) {
			return false
		}
	}
	return true
}

// Controllers returns the registered controllers by node id (see
// UnregisterController) as this node knows them: what DescribeCluster on
// a controller listener lists, as Kafka lists its controller
// registrations.
func (q *Quorum) Controllers() (map[int32]Member, error) {
	members, votes, err := q.Members()
	if err != nil {
		return nil, err
	}
	img := q.machine.Image()
	out := map[int32]Member{}
	for id, m := range members {
		if registered(img, id, m, votes[id]) {
			out[id] = m
		}
	}
	return out, nil
}

// UnregisterController removes the registration of controller id
// (Kafka's UnregisterController, key 94; kafka-cluster unregister-controller,
// kafka-metadata-quorum remove-controller --unregister).
//
// Kafka keeps controller registrations in its metadata apart from the
// voter set, and lists them in DescribeCluster on a controller listener.
// samsa's registered controllers are members of the Raft configuration
// (registered): the voters, and the controllers removed from the voters,
// which keep receiving the log as non-voting members. As in Kafka, asking
// the active controller to unregister itself is ErrUnregisterActive
// (checked first), and an id that is not registered
// ErrControllerNotRegistered (a broker-only node's id included). A
// removed controller is marked unregistered (its Raft address gets
// ";unregistered=1", so every node agrees): it goes on receiving the log,
// as a combined node's broker needs, and is no longer listed; AddVoter
// registers it again. A voter stays registered: its registration is its
// vote, which RemoveVoter ends (Kafka removes a voter's registration, and
// a running controller writes it again at once). Only the active
// controller changes the configuration (controller.ErrNotController
// elsewhere).
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
	img := q.machine.Image()
	for _, s := range conf.Servers {
		if s.ID != serverID(id) {
			continue
		}
		m, voter := parseMember(s.Address), s.Suffrage == raft.Voter
		if !registered(img, id, m, voter) {
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
