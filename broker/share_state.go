package broker

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/broker/handlers"
	"github.com/samsa-broker/samsa/controller"
	"github.com/samsa-broker/samsa/coordinator"
	"github.com/samsa-broker/samsa/coordinator/share"
	"github.com/samsa-broker/samsa/coordinator/sharecoord"
	"github.com/samsa-broker/samsa/storage"
)

// startShareState builds the share coordinator (the coordinator
// reconciler loads the __share_group_state partitions this node leads)
// and the Persister the rest of the broker stores share-partition state
// with (deps.SharePersister).
func (n *Node) startShareState(deps *handlers.Deps) error {
	sc := n.cfg.ShareCoordinatorSettings()
	writeTimeout := time.Duration(sc.WriteTimeoutMs) * time.Millisecond
	var err error
	n.shareCoord, err = sharecoord.New(sharecoord.Options{
		NumPartitions: sc.StateTopicNumPartitions,
		Log: func(p int32) (coordinator.Log, bool) {
			rp, ok := n.replicas.Partition(storage.TopicPartition{Topic: share.StateTopic, Partition: p})
			if !ok {
				return nil, false
			}
			return rp.CoordinatorLog(writeTimeout), true
		},
		Partitions: func() int32 {
			if t := n.ctrl.Image().Topics[share.StateTopic]; t != nil {
				return int32(len(t.Partitions))
			}
			return 0
		},
		PartitionExists: func(id [16]byte, partition int32) bool {
			t := n.ctrl.Image().TopicsByID[controller.Uuid(id)]
			return t != nil && partition >= 0 && int(partition) < len(t.Partitions)
		},
		Now:    time.Now,
		Logger: n.logger.With("component", "share-coordinator"),
	})
	if err != nil {
		return err
	}
	persister, err := sharecoord.NewPersister(sharecoord.RouterOptions{
		Local:       n.shareCoord,
		NodeID:      n.cfg.NodeID,
		Leaders:     n.shareStateLeaders,
		CreateTopic: n.createShareStateTopic,
		Send:        n.peers.send,
		Logger:      n.logger.With("component", "share-persister"),
	})
	if err != nil {
		return err
	}
	deps.ShareCoordinator = n.shareCoord
	deps.SharePersister = persister
	return nil
}

// shareStateLeaders returns the leader of every __share_group_state
// partition in the current image (-1: none, or fenced), nil while the
// topic does not exist (sharecoord.RouterOptions.Leaders).
func (n *Node) shareStateLeaders() []int32 {
	img := n.ctrl.Image()
	t := img.Topics[share.StateTopic]
	if t == nil || len(t.Partitions) == 0 {
		return nil
	}
	out := make([]int32, len(t.Partitions))
	for i, p := range t.Partitions {
		out[i] = -1
		if b, ok := img.Brokers[p.Leader]; ok && !b.Fenced {
			out[i] = p.Leader
		}
	}
	return out
}

// createShareStateTopic creates __share_group_state when it does not
// exist and enough brokers are unfenced (sharecoord.RouterOptions.CreateTopic):
// on the active controller directly, elsewhere with CreateTopics to it,
// as Kafka creates the topic on its first use. Its replication factor is
// capped as the other internal topics' (internalTopicRF), and so is its
// min.insync.replicas.
func (n *Node) createShareStateTopic(ctx context.Context) error {
	if n.ctrl.Image().Topics[share.StateTopic] != nil {
		return nil
	}
	sc := n.cfg.ShareCoordinatorSettings()
	rf, ok := n.internalTopicRF(sc.StateTopicReplicationFactor)
	if !ok {
		return fmt.Errorf("broker: %s needs %d unfenced brokers", share.StateTopic, rf)
	}
	configs := map[string]string{"cleanup.policy": "compact", "compression.type": "producer",
		"segment.bytes":       fmt.Sprint(sc.StateTopicSegmentBytes),
		"min.insync.replicas": fmt.Sprint(min(sc.StateTopicMinISR, rf))}
	return n.withController(ctx, func() error {
		_, err := n.ctrl.CreateInternalTopic(share.StateTopic, sc.StateTopicNumPartitions, rf, configs)
		return err
	}, func(ctx context.Context) error {
		req := kmsg.NewPtrCreateTopicsRequest()
		req.TimeoutMillis = 30000
		t := kmsg.NewCreateTopicsRequestTopic()
		t.Topic, t.NumPartitions, t.ReplicationFactor = share.StateTopic, sc.StateTopicNumPartitions, rf
		for k, v := range configs {
			c := kmsg.NewCreateTopicsRequestTopicConfig()
			c.Name, c.Value = k, &v
			t.Configs = append(t.Configs, c)
		}
		req.Topics = append(req.Topics, t)
		resp, err := n.toController(ctx, req)
		if err != nil || resp == nil {
			return err
		}
		for _, t := range resp.(*kmsg.CreateTopicsResponse).Topics {
			if t.ErrorCode != 0 && t.ErrorCode != kerr.TopicAlreadyExists.Code {
				return kafkaErr(t.ErrorCode)
			}
		}
		return nil
	})
}
