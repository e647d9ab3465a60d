package broker

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestLeaderFromQuorum: a broker-only node that knows only bootstrap
// servers reads the active controller and its controller listener from a
// DescribeQuorum v2 answer, and gives up (falls back to the bootstrap
// server) on an error, no leader or no endpoint.
func TestLeaderFromQuorum(t *testing.T) {
	answer := func(partErr int16, leader int32, nodes ...kmsg.DescribeQuorumResponseNode) *kmsg.DescribeQuorumResponse {
		resp := kmsg.NewPtrDescribeQuorumResponse()
		p := kmsg.NewDescribeQuorumResponseTopicPartition()
		p.ErrorCode, p.LeaderID = partErr, leader
		resp.Topics = []kmsg.DescribeQuorumResponseTopic{{Topic: "__cluster_metadata", Partitions: []kmsg.DescribeQuorumResponseTopicPartition{p}}}
		resp.Nodes = nodes
		return resp
	}
	node := func(id int32, ls ...kmsg.DescribeQuorumResponseNodeListener) kmsg.DescribeQuorumResponseNode {
		return kmsg.DescribeQuorumResponseNode{NodeID: id, Listeners: ls}
	}
	l := func(name, host string, port uint16) kmsg.DescribeQuorumResponseNodeListener {
		return kmsg.DescribeQuorumResponseNodeListener{Name: name, Host: host, Port: port}
	}
	for _, tc := range []struct {
		name     string
		resp     *kmsg.DescribeQuorumResponse
		listener string
		id       int32
		addr     string
		ok       bool
	}{
		{"leader's named listener", answer(0, 2, node(1, l("CONTROLLER", "h1", 9093)), node(2, l("OTHER", "h2", 1), l("CONTROLLER", "h2", 9093))), "CONTROLLER", 2, "h2:9093", true},
		{"first listener when none is named so", answer(0, 3, node(3, l("C2", "::1", 9094))), "CONTROLLER", 3, "[::1]:9094", true},
		{"not leader", answer(6, 2, node(2, l("CONTROLLER", "h2", 9093))), "CONTROLLER", -1, "", false},
		{"no leader yet", answer(0, -1, node(2, l("CONTROLLER", "h2", 9093))), "CONTROLLER", -1, "", false},
		{"leader without endpoint", answer(0, 2, node(1, l("CONTROLLER", "h1", 9093))), "CONTROLLER", -1, "", false},
		{"bad endpoint", answer(0, 2, node(2, l("CONTROLLER", "", 9093))), "CONTROLLER", -1, "", false},
		{"no partition", kmsg.NewPtrDescribeQuorumResponse(), "CONTROLLER", -1, "", false},
	} {
		id, addr, ok := leaderFromQuorum(tc.resp, tc.listener)
		if id != tc.id || addr != tc.addr || ok != tc.ok {
			t.Errorf("%s: %d %q %v, want %d %q %v", tc.name, id, addr, ok, tc.id, tc.addr, tc.ok)
		}
	}
}
