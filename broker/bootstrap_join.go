package broker

import (
	"context"
	"math"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// bootstrapControllerID stands for the unknown node id of a controller
// reached through controller.quorum.bootstrap.servers: the controller
// channel needs an id that is not -1 (no leader) and never this node's.
const bootstrapControllerID = math.MaxInt32

// bootstrapDiscoveryTimeout bounds one DescribeQuorum to a bootstrap
// server.
const bootstrapDiscoveryTimeout = 3 * time.Second

// bootstrapController returns the active controller for a broker-only
// node configured with controller.quorum.bootstrap.servers alone (no
// controller.quorum.voters), as Kafka 4.x brokers allow (KIP-853), until
// the active controller has added this node to the quorum as an observer
// (when it registers): the node then knows neither the voters nor the
// leader. It asks the next bootstrap server (in turn) for the quorum
// with DescribeQuorum v2, which any controller answers for the active one:
// the leader's id and, in Nodes, its controller listener endpoints
// (discoverLeader). Kafka's brokers learn the leader the same way from a
// bootstrap server, whose Fetch answer names it and its endpoint. When the
// server does not say (no answer, no leader yet, an endpoint it does not
// list), the registration goes to the server itself: a controller that is
// not the active one answers NOT_CONTROLLER, and the retry asks the next.
// Once added, the node follows the metadata log and knows the leader and
// the voters from Raft (leaderOf), also after the bootstrap servers left
// the quorum.
func (n *Node) bootstrapController() (int32, string) {
	servers := n.cfg.QuorumBootstrapServers
	if len(servers) == 0 {
		return -1, ""
	}
	server := servers[int(n.voterTurn.Add(1))%len(servers)]
	ctx, cancel := context.WithTimeout(context.Background(), bootstrapDiscoveryTimeout)
	defer cancel()
	if id, addr, ok := n.discoverLeader(ctx, server); ok {
		n.discovered.Store(addr)
		return id, addr
	}
	return bootstrapControllerID, server
}

// discoveredController returns the controller listener address of the
// active controller last learned from the bootstrap servers, "" for none.
func (n *Node) discoveredController() string {
	addr, _ := n.discovered.Load().(string)
	return addr
}

// discoverLeader asks the controller at server for the metadata quorum
// (DescribeQuorum v2 on its controller listener) and returns the active
// controller's id and controller listener address.
func (n *Node) discoverLeader(ctx context.Context, server string) (int32, string, bool) {
	ch := &controllerChannel{nodeID: n.cfg.NodeID, leader: func() (int32, string) { return bootstrapControllerID, server }, dial: n.channel.dial}
	defer ch.Close()
	req := kmsg.NewPtrDescribeQuorumRequest()
	rt := kmsg.NewDescribeQuorumRequestTopic()
	rt.Topic = "__cluster_metadata"
	rt.Partitions = []kmsg.DescribeQuorumRequestTopicPartition{kmsg.NewDescribeQuorumRequestTopicPartition()}
	req.Topics = append(req.Topics, rt)
	resp, err := ch.Request(ctx, req, 2)
	if err != nil {
		return -1, "", false
	}
	var listener string
	if len(n.cfg.ControllerListenerNames) > 0 {
		listener = n.cfg.ControllerListenerNames[0]
	}
	return leaderFromQuorum(resp.(*kmsg.DescribeQuorumResponse), listener)
}

// leaderFromQuorum reads the active controller from a DescribeQuorum v2
// answer: its id and the endpoint of its listener called listener (the
// first listed when none is called so).
func leaderFromQuorum(resp *kmsg.DescribeQuorumResponse, listener string) (int32, string, bool) {
	if resp.ErrorCode != 0 || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return -1, "", false
	}
	p := resp.Topics[0].Partitions[0]
	if p.ErrorCode != 0 || p.LeaderID < 0 {
		return -1, "", false
	}
	for _, node := range resp.Nodes {
		if node.NodeID != p.LeaderID || len(node.Listeners) == 0 {
			continue
		}
		l := node.Listeners[0]
		for _, cand := range node.Listeners {
			if strings.EqualFold(cand.Name, listener) {
				l = cand
				break
			}
		}
		if l.Host == "" || l.Port == 0 {
			return -1, "", false
		}
		return p.LeaderID, net.JoinHostPort(l.Host, strconv.Itoa(int(l.Port))), true
	}
	return -1, "", false
}
