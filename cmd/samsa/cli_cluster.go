package main

import (
	"context"
	"fmt"
	"net"
	"strconv"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func newAdmin(cl *kgo.Client) *kadm.Client { return kadm.NewClient(cl) }

type brokerJSON struct {
	ID         int32   `json:"id"`
	Host       string  `json:"host"`
	Port       int32   `json:"port"`
	Rack       *string `json:"rack"`
	Controller bool    `json:"controller"`
}

// runCluster is `samsa cluster`: cluster id, controller and brokers.
func runCluster(c *cli, args []string) error {
	fs, co := c.flagSet("cluster", "[flags]")
	if err := parse(fs, co, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("unexpected arguments %q", fs.Args())
	}
	adm, cl, err := co.admin()
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := c.withTimeout(co)
	defer cancel()
	md, err := adm.BrokerMetadata(ctx)
	if err != nil {
		return err
	}
	brokers := []brokerJSON{}
	for _, b := range md.Brokers {
		brokers = append(brokers, brokerJSON{ID: b.NodeID, Host: b.Host, Port: b.Port, Rack: b.Rack, Controller: b.NodeID == md.Controller})
	}
	q, qerr := describeQuorum(ctx, cl)
	if co.format == "json" {
		out := map[string]any{"cluster_id": md.Cluster, "controller": md.Controller, "brokers": brokers}
		if qerr == nil {
			out["quorum"] = q
		} else {
			out["quorum_error"] = qerr.Error()
		}
		return writeJSON(c.stdout, out)
	}
	fmt.Fprintf(c.stdout, "Cluster ID: %s\nController: %d\n\n", md.Cluster, md.Controller)
	t := newTable(c.stdout, "ID", "HOST", "PORT", "RACK", "CONTROLLER")
	for _, b := range brokers {
		rack, ctrl := "-", ""
		if b.Rack != nil {
			rack = *b.Rack
		}
		if b.Controller {
			ctrl = "yes"
		}
		t.row(b.ID, b.Host, b.Port, rack, ctrl)
	}
	if err := t.flush(); err != nil {
		return err
	}
	if qerr != nil {
		fmt.Fprintf(c.stdout, "\nQuorum: %v\n", qerr)
		return nil
	}
	fmt.Fprintf(c.stdout, "\nMetadata quorum: leader %d, epoch %d, high watermark %d\n", q.Leader, q.Epoch, q.HighWatermark)
	qt := newTable(c.stdout, "NODE", "ROLE", "LOG-END", "LAG")
	for _, r := range q.Replicas {
		qt.row(r.ID, r.Role, r.LogEndOffset, q.HighWatermark-r.LogEndOffset)
	}
	return qt.flush()
}

// quorumJSON is the metadata quorum as DescribeQuorum reports it.
type quorumJSON struct {
	Leader        int32               `json:"leader"`
	Epoch         int32               `json:"epoch"`
	HighWatermark int64               `json:"high_watermark"`
	Replicas      []quorumReplicaJSON `json:"replicas"`
}

type quorumReplicaJSON struct {
	ID           int32  `json:"id"`
	Role         string `json:"role"` // leader, voter or observer
	LogEndOffset int64  `json:"log_end_offset"`
}

// describeQuorum asks for the metadata quorum (DescribeQuorum, key 55), as
// kafka-metadata-quorum describe --status/--replication does.
func describeQuorum(ctx context.Context, cl *kgo.Client) (quorumJSON, error) {
	req := kmsg.NewPtrDescribeQuorumRequest()
	t := kmsg.NewDescribeQuorumRequestTopic()
	t.Topic = "__cluster_metadata"
	t.Partitions = append(t.Partitions, kmsg.NewDescribeQuorumRequestTopicPartition())
	req.Topics = append(req.Topics, t)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return quorumJSON{}, err
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return quorumJSON{}, err
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return quorumJSON{}, fmt.Errorf("DescribeQuorum: no metadata partition in the answer")
	}
	p := resp.Topics[0].Partitions[0]
	if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
		return quorumJSON{}, err
	}
	q := quorumJSON{Leader: p.LeaderID, Epoch: p.LeaderEpoch, HighWatermark: p.HighWatermark, Replicas: []quorumReplicaJSON{}}
	for _, v := range p.CurrentVoters {
		role := "voter"
		if v.ReplicaID == p.LeaderID {
			role = "leader"
		}
		q.Replicas = append(q.Replicas, quorumReplicaJSON{ID: v.ReplicaID, Role: role, LogEndOffset: v.LogEndOffset})
	}
	for _, o := range p.Observers {
		q.Replicas = append(q.Replicas, quorumReplicaJSON{ID: o.ReplicaID, Role: "observer", LogEndOffset: o.LogEndOffset})
	}
	return q, nil
}

// runHealth is `samsa health`: exit 0 when the first bootstrap broker
// answers Metadata and lists itself, for docker-compose healthchecks.
// "Itself" is --node-id, else KAFKA_NODE_ID / KAFKA_BROKER_ID from the
// environment (a container's healthcheck runs with the broker's
// environment), else a broker advertised at the bootstrap address, else
// any broker: a fenced or unregistered broker is left out of its own
// Metadata answer.
func runHealth(c *cli, args []string) error {
	fs, co := c.flagSet("health", "[flags]")
	nodeID := fs.Int32("node-id", -1, "the node id the broker must list (default: KAFKA_NODE_ID or KAFKA_BROKER_ID from the environment)")
	quiet := fs.BoolP("quiet", "q", false, "print nothing; only the exit code tells")
	co.timeout = 5e9
	fs.Lookup("timeout").DefValue = "5s"
	if err := parse(fs, co, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("unexpected arguments %q", fs.Args())
	}
	id := *nodeID
	if !fs.Changed("node-id") {
		for _, env := range []string{"KAFKA_NODE_ID", "KAFKA_BROKER_ID"} {
			if v := c.getenv(env); v != "" {
				if n, err := strconv.ParseInt(v, 10, 32); err == nil && n >= 0 {
					id = int32(n)
					break
				}
			}
		}
	}
	cl, err := co.client(kgo.RequestRetries(0))
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := c.withTimeout(co)
	defer cancel()
	seeds := cl.SeedBrokers()
	seed := ""
	if len(seeds) > 0 {
		seed = co.bootstrapList()[0]
	}
	report := func(healthy bool, msg string, brokers []int32) error {
		if co.format == "json" {
			if err := writeJSON(c.stdout, map[string]any{"healthy": healthy, "broker": seed, "node_id": id, "brokers": nonNil(brokers), "message": msg}); err != nil {
				return err
			}
		} else if !*quiet {
			state := "healthy"
			if !healthy {
				state = "unhealthy"
			}
			fmt.Fprintf(c.stdout, "%s: %s\n", state, msg)
		}
		if !healthy {
			return errSilent
		}
		return nil
	}
	if len(seeds) == 0 {
		return report(false, "no bootstrap broker", nil)
	}
	req := kmsg.NewPtrMetadataRequest()
	req.Topics = []kmsg.MetadataRequestTopic{} // no topics, brokers only
	resp, err := seeds[0].Request(ctx, req)
	if err != nil {
		return report(false, fmt.Sprintf("%s: %v", seed, err), nil)
	}
	md := resp.(*kmsg.MetadataResponse)
	var ids []int32
	self := int32(-1)
	for _, b := range md.Brokers {
		ids = append(ids, b.NodeID)
		if id >= 0 && b.NodeID == id {
			self = b.NodeID
		}
		if id < 0 && self < 0 && net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port))) == seed {
			self = b.NodeID
		}
	}
	switch {
	case self >= 0:
		return report(true, fmt.Sprintf("%s answers Metadata and lists broker %d", seed, self), ids)
	case id < 0 && len(ids) > 0:
		return report(true, fmt.Sprintf("%s answers Metadata with brokers %s", seed, int32List(ids)), ids)
	case id >= 0:
		return report(false, fmt.Sprintf("%s answers Metadata without broker %d (fenced or not registered)", seed, id), ids)
	}
	return report(false, fmt.Sprintf("%s answers Metadata without any broker", seed), ids)
}
