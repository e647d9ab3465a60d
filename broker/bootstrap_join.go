package broker

import "math"

// bootstrapControllerID stands for the unknown node id of a controller
// reached through controller.quorum.bootstrap.servers: the controller
// channel needs an id that is not -1 (no leader) and never this node's.
const bootstrapControllerID = math.MaxInt32

// bootstrapController returns the next of controller.quorum.bootstrap.servers
// for a broker-only node configured with them alone (no
// controller.quorum.voters), as Kafka 4.x brokers allow (KIP-853): until
// the active controller has added this node to the quorum as an observer
// (when it registers), the node knows neither the voters nor the leader,
// so it sends its registration to each bootstrap server in turn. A
// controller that is not the active one answers NOT_CONTROLLER, and the
// retry goes to the next. Once added, the node follows the metadata log
// and knows the leader from Raft (leaderOf), as a node configured with
// the voters does. Kafka's brokers find the leader by fetching from a
// bootstrap server, whose answer names it; samsa's Raft observers are
// added by the leader instead, so trying each server is the way in.
func (n *Node) bootstrapController() (int32, string) {
	servers := n.cfg.QuorumBootstrapServers
	if len(servers) == 0 {
		return -1, ""
	}
	return bootstrapControllerID, servers[int(n.voterTurn.Add(1))%len(servers)]
}
