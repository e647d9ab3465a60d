package handlers

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/controller"
)

// TestAlterPartitionLeaderRecoveryState: AlterPartition v3 carries the
// leader's recovery state to the controller: RECOVERING for a partition
// that is RECOVERED is INVALID_REQUEST; RECOVERED is answered with the
// partition's state.
func TestAlterPartitionLeaderRecoveryState(t *testing.T) {
	e := newAdminEnv(t)
	id := e.createTopic(t, "r", 1, nil)
	alter := func(state int8) kmsg.AlterPartitionResponseTopicPartition {
		img := e.d.Controller.Image()
		p := img.Topics["r"].Partitions[0]
		req := kmsg.NewPtrAlterPartitionRequest()
		req.BrokerID, req.BrokerEpoch = 1, img.Brokers[1].Epoch
		rt := kmsg.NewAlterPartitionRequestTopic()
		rt.TopicID = id
		rp := kmsg.NewAlterPartitionRequestTopicPartition()
		rp.Partition, rp.LeaderEpoch, rp.PartitionEpoch, rp.LeaderRecoveryState = 0, p.LeaderEpoch, p.PartitionEpoch, state
		e1 := kmsg.NewAlterPartitionRequestTopicPartitionNewEpochISR()
		e1.BrokerID, e1.BrokerEpoch = 1, img.Brokers[1].Epoch
		rp.NewEpochISR = append(rp.NewEpochISR, e1)
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp := e.call(t, req, 3).(*kmsg.AlterPartitionResponse)
		if resp.ErrorCode != 0 || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			t.Fatalf("AlterPartition: %+v", resp)
		}
		return resp.Topics[0].Partitions[0]
	}
	if got := alter(controller.LeaderRecovering); got.ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("RECOVERED to RECOVERING: %+v", got)
	}
	if got := alter(controller.LeaderRecovered); got.ErrorCode != 0 || got.LeaderRecoveryState != controller.LeaderRecovered || !slices.Equal(got.ISR, []int32{1}) {
		t.Fatalf("RECOVERED: %+v", got)
	}
}

// TestHeartbeatCordonedLogDirs: BrokerHeartbeat v2 cordoned_log_dirs
// sets the broker's cordoned directories; null leaves them, an empty list
// clears them.
func TestHeartbeatCordonedLogDirs(t *testing.T) {
	e := newAdminEnv(t)
	beat := func(dirs [][16]byte) {
		img := e.d.Controller.Image()
		hb := kmsg.NewPtrBrokerHeartbeatRequest()
		hb.BrokerID, hb.BrokerEpoch, hb.CurrentMetadataOffset = 1, img.Brokers[1].Epoch, img.Offset
		hb.CordonedLogDirs = dirs
		if resp := e.call(t, hb, 2).(*kmsg.BrokerHeartbeatResponse); resp.ErrorCode != 0 {
			t.Fatalf("heartbeat: %+v", resp)
		}
	}
	a := [16]byte{0xda, 'a'}
	beat([][16]byte{a})
	if got := e.d.Controller.Image().CordonedLogDirs(1); !slices.Equal(got, []controller.Uuid{a}) {
		t.Fatalf("cordoned %v, want [a]", got)
	}
	beat(nil)
	if got := e.d.Controller.Image().CordonedLogDirs(1); len(got) != 1 {
		t.Fatalf("a null list changed the cordoned dirs to %v", got)
	}
	beat([][16]byte{})
	if got := e.d.Controller.Image().CordonedLogDirs(1); len(got) != 0 {
		t.Fatalf("an empty list left %v cordoned", got)
	}
}
