package handlers

import (
	"errors"
	"net"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/controller/quorum"
)

// metadataTopic is the name Kafka gives the metadata log; DescribeQuorum
// names it (partition 0), and samsa's Raft log stands in for it.
const metadataTopic = "__cluster_metadata"

// DescribeQuorum, key 55, versions 0-2 (KIP-595, KIP-836, KIP-853): the
// metadata quorum as its leader sees it, for kafka-metadata-quorum and
// Admin.describeMetadataQuorum.
//
//   - A request that does not name exactly partition 0 of
//     __cluster_metadata answers UNKNOWN_TOPIC_OR_PARTITION on every
//     partition it names, as Kafka's hasValidTopicPartition check.
//   - The entry is forwarded (Entry.Forward) to the active controller from
//     any other node, as Kafka brokers forward it; a node that still ends
//     up answering without leading the quorum says NOT_LEADER_OR_FOLLOWER
//     on the partition.
//   - The leader answers its id, epoch (the Raft term), high watermark
//     (the commit index), the voters and the observers (broker-only nodes
//     following the log), each with its log end offset (Raft's last index)
//     as it last answered the leader, and from v1 the last fetch and last
//     caught-up times (-1 when unknown; the leader itself is "now", as in
//     Kafka). v2 adds each replica's directory id and the voters'
//     controller listener endpoints (Nodes), from the quorum's Raft
//     configuration: voters added with AddRaftVoter carry the directory
//     id and listener they were added with; voters of
//     controller.quorum.voters the zero directory id (as Kafka's static
//     quorums) and the first of controller.listener.names.
func handleDescribeQuorum(d *Deps, r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.DescribeQuorumRequest)
	resp := req.ResponseKind().(*kmsg.DescribeQuorumResponse)
	resp.Default()
	// v2+: Kafka 4.4 leaves the top-level message at its default, "", and
	// a partition's is "" on success, else its error's message.
	resp.ErrorMessage = ptrTo("")
	valid := len(req.Topics) == 1 && req.Topics[0].Topic == metadataTopic &&
		len(req.Topics[0].Partitions) == 1 && req.Topics[0].Partitions[0].Partition == 0
	if !valid {
		for _, rt := range req.Topics {
			st := kmsg.NewDescribeQuorumResponseTopic()
			st.Topic = rt.Topic
			for _, rp := range rt.Partitions {
				sp := kmsg.NewDescribeQuorumResponseTopicPartition()
				sp.Partition = rp.Partition
				sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
				sp.ErrorMessage = adminErrorMessage(sp.ErrorCode, "")
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp, nil
	}
	st := kmsg.NewDescribeQuorumResponseTopic()
	st.Topic = metadataTopic
	sp := kmsg.NewDescribeQuorumResponseTopicPartition()
	var status quorum.Status
	err := quorum.ErrNotLeader
	if d.QuorumStatus != nil {
		status, err = d.QuorumStatus()
	}
	switch {
	case errors.Is(err, quorum.ErrNotLeader):
		sp.ErrorCode = kerr.NotLeaderForPartition.Code
		sp.ErrorMessage = adminErrorMessage(sp.ErrorCode, "")
	case err != nil:
		sp.ErrorCode = kerr.UnknownServerError.Code
		msg := err.Error()
		sp.ErrorMessage = &msg
	default:
		sp.ErrorMessage = ptrTo("")
		sp.LeaderID = status.LeaderID
		sp.LeaderEpoch = int32(status.LeaderEpoch)
		sp.HighWatermark = status.HighWatermark
		sp.CurrentVoters = replicaStates(status.Voters)
		sp.Observers = replicaStates(status.Observers)
		resp.Nodes = quorumNodes(d, status.Voters)
	}
	st.Partitions = append(st.Partitions, sp)
	resp.Topics = append(resp.Topics, st)
	return resp, nil
}

func replicaStates(in []quorum.ReplicaStatus) []kmsg.DescribeQuorumResponseTopicPartitionReplicaState {
	out := make([]kmsg.DescribeQuorumResponseTopicPartitionReplicaState, 0, len(in))
	millis := func(t time.Time) int64 {
		if t.IsZero() {
			return -1
		}
		return t.UnixMilli()
	}
	for _, r := range in {
		s := kmsg.NewDescribeQuorumResponseTopicPartitionReplicaState()
		s.ReplicaID = r.ID
		s.LogEndOffset = r.LogEndOffset
		s.LastFetchTimestamp = millis(r.LastFetch)
		s.LastCaughtUpTimestamp = millis(r.LastCaughtUp)
		s.ReplicaDirectoryID = r.Member.DirectoryID
		out = append(out, s)
	}
	return out
}

// controllerListenerName is this node's controller listener, the first of
// controller.listener.names ("" without one).
func controllerListenerName(d *Deps) string {
	if d.Config != nil && len(d.Config.ControllerListenerNames) > 0 {
		return d.Config.ControllerListenerNames[0]
	}
	return ""
}

// quorumNodes lists the voters' controller listeners (v2 Nodes).
func quorumNodes(d *Deps, voters []quorum.ReplicaStatus) []kmsg.DescribeQuorumResponseNode {
	def := controllerListenerName(d)
	var out []kmsg.DescribeQuorumResponseNode
	for _, v := range voters {
		host, port, err := net.SplitHostPort(v.Member.Addr)
		p, perr := strconv.ParseUint(port, 10, 16)
		name := v.Member.Listener
		if name == "" {
			name = def
		}
		if err != nil || perr != nil || name == "" {
			continue
		}
		n := kmsg.NewDescribeQuorumResponseNode()
		n.NodeID = v.ID
		l := kmsg.NewDescribeQuorumResponseNodeListener()
		l.Name, l.Host, l.Port = name, host, uint16(p)
		n.Listeners = append(n.Listeners, l)
		out = append(out, n)
	}
	return out
}
