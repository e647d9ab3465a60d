package handlers

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/storage"
)

// TestLogDirOfflineRequests: AssignReplicasToDirs and a v1 BrokerHeartbeat
// listing the directory offline take the broker's replica there out of
// service (leaderless here: it was the only replica) and Metadata lists
// it offline, while its replica in another directory keeps leading; a
// stale broker epoch is refused. Once the storage directory is taken
// offline, DescribeLogDirs and Produce answer KAFKA_STORAGE_ERROR.
func TestLogDirOfflineRequests(t *testing.T) {
	e := newAdminEnv(t)
	id := e.createTopic(t, "a", 2, nil)
	for p := range int32(2) {
		if _, err := e.d.Logs.CreateLog(storage.TopicPartition{Topic: "a", Partition: p}, id, storage.DefaultLogConfig()); err != nil {
			t.Fatal(err)
		}
	}
	epoch := e.d.Controller.Image().Brokers[1].Epoch
	failed, healthy := [16]byte{0xf}, [16]byte{0xe}
	assign := func(dir [16]byte, brokerEpoch int64, p int32) *kmsg.AssignReplicasToDirsResponse {
		req := kmsg.NewPtrAssignReplicasToDirsRequest()
		req.BrokerID, req.BrokerEpoch = 1, brokerEpoch
		rd := kmsg.NewAssignReplicasToDirsRequestDirectory()
		rd.ID = dir
		rt := kmsg.NewAssignReplicasToDirsRequestDirectoryTopic()
		rt.TopicID = id
		rp := kmsg.NewAssignReplicasToDirsRequestDirectoryTopicPartition()
		rp.Partition = p
		rt.Partitions = append(rt.Partitions, rp)
		rd.Topics = append(rd.Topics, rt)
		req.Directories = append(req.Directories, rd)
		return e.call(t, req, 0).(*kmsg.AssignReplicasToDirsResponse)
	}
	if resp := assign(failed, epoch+7, 0); resp.ErrorCode != kerr.StaleBrokerEpoch.Code || resp.Directories[0].Topics[0].Partitions[0].ErrorCode != kerr.StaleBrokerEpoch.Code {
		t.Fatalf("stale epoch: %+v", resp)
	}
	for i, dir := range [][16]byte{failed, healthy} {
		if resp := assign(dir, epoch, int32(i)); resp.ErrorCode != 0 || len(resp.Directories) != 1 || resp.Directories[0].ID != dir ||
			resp.Directories[0].Topics[0].Partitions[0].Partition != int32(i) {
			t.Fatalf("assign a-%d: %+v", i, resp)
		}
	}
	hb := kmsg.NewPtrBrokerHeartbeatRequest()
	hb.BrokerID, hb.BrokerEpoch, hb.CurrentMetadataOffset = 1, epoch, e.d.Controller.Image().Offset
	hb.OfflineLogDirs = [][16]byte{failed}
	if resp := e.call(t, hb, 1).(*kmsg.BrokerHeartbeatResponse); resp.ErrorCode != 0 || resp.IsFenced {
		t.Fatalf("heartbeat: %+v", resp)
	}
	parts := e.d.Controller.Image().Topics["a"].Partitions
	if parts[0].Leader != -1 || parts[1].Leader != 1 {
		t.Fatalf("leaders %d, %d after the directory of a-0 went offline, want -1, 1", parts[0].Leader, parts[1].Leader)
	}
	md := kmsg.NewPtrMetadataRequest()
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr("a")
	md.Topics = append(md.Topics, mt)
	mresp := e.call(t, md, 12).(*kmsg.MetadataResponse)
	for _, p := range mresp.Topics[0].Partitions {
		want := []int32{}
		if p.Partition == 0 {
			want = []int32{1}
		}
		if !slices.Equal(p.OfflineReplicas, want) {
			t.Errorf("Metadata a-%d offline replicas %v, want %v", p.Partition, p.OfflineReplicas, want)
		}
	}

	e.d.Logs.TakeDirOffline(e.d.Config.LogDirs[0])
	e.d.Replicas.StopOffline([]storage.TopicPartition{{Topic: "a", Partition: 0}, {Topic: "a", Partition: 1}})
	dl := e.call(t, kmsg.NewPtrDescribeLogDirsRequest(), 4).(*kmsg.DescribeLogDirsResponse)
	if len(dl.Dirs) != 1 || dl.Dirs[0].ErrorCode != kerr.KafkaStorageError.Code {
		t.Fatalf("DescribeLogDirs of the offline directory: %+v", dl)
	}
	ref := e.d.lookupPartition(e.d.Controller.Image(), e.d.Controller.Image().Topics["a"], 1)
	if ref.code != kerr.KafkaStorageError.Code {
		t.Fatalf("lookup of a partition in the offline directory: code %d, want KAFKA_STORAGE_ERROR", ref.code)
	}
}
