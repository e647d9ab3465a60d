package controller

import (
	"reflect"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// newJBODTopic returns a controller with brokers 1..3, topic "t" with
// p0 and p1 on replicas 1,2,3 (leader 1) and p2 on 2,1,3 (leader 2), and
// topic "s" with one partition on broker 1 alone. Broker 1 keeps t-0, t-2
// and s-0 in log directory dirA and t-1 in dirB.
func newJBODTopic(t *testing.T) (c *Controller, tid, sid Uuid) {
	t.Helper()
	c = newTestController(t, 3)
	rs := c.CreateTopics([]CreateTopic{
		{Name: "t", NumPartitions: -1, ReplicationFactor: -1, Assignment: map[int32][]int32{0: {1, 2, 3}, 1: {1, 2, 3}, 2: {2, 1, 3}}},
		{Name: "s", NumPartitions: -1, ReplicationFactor: -1, Assignment: map[int32][]int32{0: {1}}},
	}, false)
	for _, r := range rs {
		if r.ErrorCode != 0 {
			t.Fatalf("%+v", r)
		}
	}
	return c, rs[0].ID, rs[1].ID
}

func assignJBOD(t *testing.T, c *Controller, tid, sid Uuid) {
	t.Helper()
	assign(t, c, tid, dirA, 0, 2)
	assign(t, c, sid, dirA, 0)
	assign(t, c, tid, dirB, 1)
}

var (
	dirA = Uuid{0xa}
	dirB = Uuid{0xb}
)

func assign(t *testing.T, c *Controller, id Uuid, dir Uuid, parts ...int32) {
	t.Helper()
	epoch := c.Image().Brokers[1].Epoch
	if code, err := c.AssignReplicasToDirs(1, epoch, dir, []TopicIDPartitions{{TopicID: id, Partitions: parts}}); code != 0 || err != nil {
		t.Fatalf("AssignReplicasToDirs = %d, %v", code, err)
	}
}

type wantPartition struct {
	leader  int32
	isr     []int32
	offline []int32
}

func checkPartitions(t *testing.T, img *Image, topic string, want []wantPartition) {
	t.Helper()
	tp := img.Topics[topic]
	for i, w := range want {
		p := tp.Partitions[i]
		if p.Leader != w.leader || !slices.Equal(p.ISR, w.isr) {
			t.Errorf("%s-%d: leader %d isr %v, want leader %d isr %v", topic, i, p.Leader, p.ISR, w.leader, w.isr)
		}
		if got := img.OfflineReplicas(tp, p); !slices.Equal(got, w.offline) {
			t.Errorf("%s-%d: offline replicas %v, want %v", topic, i, got, w.offline)
		}
	}
}

// TestOfflineLogDir: a broker reports one of its two log directories
// offline. Its replicas there leave the ISR and lose the leadership
// (to the next ISR member, or to none when it was the only one); its
// replica in the healthy directory keeps leading; the offline replicas
// are listed as such, cannot rejoin the ISR, and are not made leaders
// again by leader balancing. A repeated report changes nothing.
func TestOfflineLogDir(t *testing.T) {
	c, id, sid := newJBODTopic(t)
	assignJBOD(t, c, id, sid)
	healthy := []wantPartition{{1, []int32{1, 2, 3}, []int32{}}, {1, []int32{1, 2, 3}, []int32{}}, {2, []int32{2, 1, 3}, []int32{}}}
	checkPartitions(t, c.Image(), "t", healthy)
	checkPartitions(t, c.Image(), "s", []wantPartition{{1, []int32{1}, []int32{}}})

	epoch := c.Image().Brokers[1].Epoch
	if code, err := c.ReportOfflineLogDirs(1, epoch, []Uuid{dirA}); code != 0 || err != nil {
		t.Fatalf("ReportOfflineLogDirs = %d, %v", code, err)
	}
	offline := []wantPartition{{2, []int32{2, 3}, []int32{1}}, {1, []int32{1, 2, 3}, []int32{}}, {2, []int32{2, 3}, []int32{1}}}
	offlineS := []wantPartition{{-1, []int32{1}, []int32{1}}}
	checkPartitions(t, c.Image(), "t", offline)
	checkPartitions(t, c.Image(), "s", offlineS)
	if got := c.Image().OfflineLogDirs(1); !slices.Equal(got, []Uuid{dirA}) {
		t.Fatalf("OfflineLogDirs(1) = %v", got)
	}

	at := c.Image().Offset
	if code, err := c.ReportOfflineLogDirs(1, epoch, []Uuid{dirA}); code != 0 || err != nil {
		t.Fatalf("repeated report = %d, %v", code, err)
	}
	if c.Image().Offset != at {
		t.Fatalf("a repeated report wrote records (offset %d -> %d)", at, c.Image().Offset)
	}

	p0 := c.Image().Topics["t"].Partitions[0]
	if _, code, _ := c.AlterPartition(AlterPartition{id, 0, 2, p0.LeaderEpoch, p0.PartitionEpoch, []int32{2, 3, 1}}); code != kerr.IneligibleReplica.Code {
		t.Fatalf("ISR expansion with the offline replica: code %d, want INELIGIBLE_REPLICA", code)
	}
	if moved, err := c.BalanceLeaders(); err != nil || moved != 0 {
		t.Fatalf("BalanceLeaders moved %d (%v), want 0", moved, err)
	}
	checkPartitions(t, c.Image(), "t", offline)
	checkPartitions(t, c.Image(), "s", offlineS)

	// Nor by a preferred election.
	res := c.ElectLeaders(ElectPreferred, []TopicPartition{{"s", 0}})
	if res[0].ErrorCode != kerr.PreferredLeaderNotAvailable.Code {
		t.Fatalf("preferred election of the offline replica: %+v", res[0])
	}
	if code, _ := c.ReportOfflineLogDirs(1, epoch+100, []Uuid{dirB}); code != kerr.StaleBrokerEpoch.Code {
		t.Fatalf("stale epoch: code %d, want STALE_BROKER_EPOCH", code)
	}
	if code, _ := c.AssignReplicasToDirs(9, 0, dirB, nil); code != kerr.BrokerIDNotRegistered.Code {
		t.Fatalf("unknown broker: code %d, want BROKER_ID_NOT_REGISTERED", code)
	}

	// A snapshot keeps what the image knows.
	img := EmptyImage("test-cluster", 1)
	for _, rec := range ImageRecords(c.Image()) {
		var err error
		if img, err = Apply(img, rec); err != nil {
			t.Fatal(err)
		}
	}
	checkPartitions(t, img, "t", offline)
	checkPartitions(t, img, "s", offlineS)

	// Nor by an unclean election: s-0 has no other replica.
	res = c.ElectLeaders(ElectUnclean, []TopicPartition{{"s", 0}})
	if res[0].ErrorCode != kerr.EligibleLeadersNotAvailable.Code {
		t.Fatalf("unclean election of the offline replica: %+v", res[0])
	}
	checkPartitions(t, c.Image(), "s", offlineS)

	// Nor when the broker is fenced and unfenced again in the same
	// incarnation (its session ran out).
	if err := c.FenceBroker(1, true); err != nil {
		t.Fatal(err)
	}
	if err := c.FenceBroker(1, false); err != nil {
		t.Fatal(err)
	}
	checkPartitions(t, c.Image(), "s", offlineS)
	if l := c.Image().Topics["t"].Partitions[1].Leader; l != 2 && l != 3 {
		t.Fatalf("t-1 leader %d after broker 1 was fenced, want 2 or 3", l)
	}

	// A new incarnation registers with every directory online.
	if err := c.RegisterBroker(Broker{ID: 1, Host: "localhost", Port: 9091, Incarnation: "second"}); err != nil {
		t.Fatal(err)
	}
	if c.Image().ReplicaOffline(1, id, 0) || len(c.Image().OfflineLogDirs(1)) != 0 {
		t.Fatal("offline log dirs survived a new registration")
	}
}

// TestOfflineLogDirBeforeAssignment: a heartbeat that lists the offline
// directory before the assignments arrive takes the replicas out of
// service when the assignments do.
func TestOfflineLogDirBeforeAssignment(t *testing.T) {
	c, id, sid := newJBODTopic(t)
	epoch := c.Image().Brokers[1].Epoch
	if code, err := c.ReportOfflineLogDirs(1, epoch, []Uuid{dirA}); code != 0 || err != nil {
		t.Fatalf("ReportOfflineLogDirs = %d, %v", code, err)
	}
	checkPartitions(t, c.Image(), "t", []wantPartition{{1, []int32{1, 2, 3}, []int32{}}})
	assignJBOD(t, c, id, sid)
	checkPartitions(t, c.Image(), "t", []wantPartition{{2, []int32{2, 3}, []int32{1}}, {1, []int32{1, 2, 3}, []int32{}}, {2, []int32{2, 3}, []int32{1}}})
	checkPartitions(t, c.Image(), "s", []wantPartition{{-1, []int32{1}, []int32{1}}})
}

// TestOfflineLogDirUnclean: where unclean election is allowed, a
// partition whose only ISR member went offline gets another unfenced
// replica as leader, with an ISR of it alone.
func TestOfflineLogDirUnclean(t *testing.T) {
	c := newTestController(t, 3, func(o *Options) { o.UncleanLeaderElection = func(*Topic) bool { return true } })
	r := c.CreateTopics([]CreateTopic{{Name: "t", NumPartitions: -1, ReplicationFactor: -1,
		Assignment: map[int32][]int32{0: {1, 2}}}}, false)[0]
	if r.ErrorCode != 0 {
		t.Fatalf("%+v", r)
	}
	// Broker 2 left the ISR of t-0 earlier.
	if _, code, _ := c.AlterPartition(AlterPartition{r.ID, 0, 1, 0, 0, []int32{1}}); code != 0 {
		t.Fatalf("shrink: %d", code)
	}
	assign(t, c, r.ID, dirA, 0)
	epoch := c.Image().Brokers[1].Epoch
	if code, err := c.ReportOfflineLogDirs(1, epoch, []Uuid{dirA}); code != 0 || err != nil {
		t.Fatalf("ReportOfflineLogDirs = %d, %v", code, err)
	}
	checkPartitions(t, c.Image(), "t", []wantPartition{{2, []int32{2}, []int32{1}}})

	// When broker 2, t-0's last ISR member, is fenced, the unclean
	// election it triggers does not pick broker 1's offline replica.
	if err := c.FenceBroker(2, true); err != nil {
		t.Fatal(err)
	}
	checkPartitions(t, c.Image(), "t", []wantPartition{{-1, []int32{2}, []int32{1, 2}}})
	if n, err := c.ElectUnclean(); err != nil || n != 0 {
		t.Fatalf("ElectUnclean elected %d (%v), want 0", n, err)
	}
}

// TestLogDirRecordsRoundTrip: the log directory records and fields
// survive their frame encoding.
func TestLogDirRecordsRoundTrip(t *testing.T) {
	for _, rec := range []Record{
		ReplicaDirsRecord{BrokerID: 3, Epoch: 17, Dir: dirA, Replicas: []TopicIDPartitions{{TopicID: Uuid{7}, Partitions: []int32{0, 5}}}},
		BrokerOfflineDirsRecord{BrokerID: 3, Epoch: 17, Dirs: []Uuid{dirA, dirB}},
		BrokerCordonedDirsRecord{BrokerID: 3, Epoch: 17, Dirs: []Uuid{dirB}},
		RegisterBrokerRecord{BrokerID: 3, Host: "h", Port: 1, Epoch: 17, LogDirs: []Uuid{dirA, dirB}},
		PartitionRecord{TopicID: Uuid{7}, Partition: 0, Replicas: []int32{3, 4}, ISR: []int32{3}, Leader: 3, Directories: []Uuid{dirA, DirUnassigned}},
	} {
		payload, err := encodeRecord(rec)
		if err != nil {
			t.Fatal(err)
		}
		got, err := decodeRecord(payloadVersion(rec), rec.recordType(), payload)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, rec) {
			t.Fatalf("round trip %#v, want %#v", got, rec)
		}
	}
}
