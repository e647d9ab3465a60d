package controller

import (
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

func TestCreateTopicsRules(t *testing.T) {
	badConfig := func(m map[string]string) (int16, string) {
		if _, ok := m["bad"]; ok {
			return kerr.InvalidConfig.Code, "bad config"
		}
		return 0, ""
	}
	tests := []struct {
		name    string
		req     CreateTopic
		code    int16
		msgPart string
		parts   int32
		rf      int16
	}{
		{"ok", CreateTopic{Name: "new", NumPartitions: 3, ReplicationFactor: 2}, 0, "", 3, 2},
		{"defaults", CreateTopic{Name: "new", NumPartitions: -1, ReplicationFactor: -1}, 0, "", 2, 1},
		{"empty name", CreateTopic{Name: "", NumPartitions: 1, ReplicationFactor: 1}, kerr.InvalidTopicException.Code, "empty", 0, 0},
		{"dot", CreateTopic{Name: ".", NumPartitions: 1, ReplicationFactor: 1}, kerr.InvalidTopicException.Code, "", 0, 0},
		{"dotdot", CreateTopic{Name: "..", NumPartitions: 1, ReplicationFactor: 1}, kerr.InvalidTopicException.Code, "", 0, 0},
		{"249 chars", CreateTopic{Name: strings.Repeat("a", 249), NumPartitions: 1, ReplicationFactor: 1}, 0, "", 1, 1},
		{"250 chars", CreateTopic{Name: strings.Repeat("a", 250), NumPartitions: 1, ReplicationFactor: 1}, kerr.InvalidTopicException.Code, "249", 0, 0},
		{"bad char", CreateTopic{Name: "a/b", NumPartitions: 1, ReplicationFactor: 1}, kerr.InvalidTopicException.Code, "illegal", 0, 0},
		{"space", CreateTopic{Name: "a b", NumPartitions: 1, ReplicationFactor: 1}, kerr.InvalidTopicException.Code, "", 0, 0},
		{"exists", CreateTopic{Name: "exists", NumPartitions: 1, ReplicationFactor: 1}, kerr.TopicAlreadyExists.Code, "already exists", 0, 0},
		{"collides", CreateTopic{Name: "foo_bar", NumPartitions: 1, ReplicationFactor: 1}, kerr.InvalidTopicException.Code, "collides", 0, 0},
		{"collides other way", CreateTopic{Name: "a.b_c", NumPartitions: 1, ReplicationFactor: 1}, kerr.InvalidTopicException.Code, "a_b.c", 0, 0},
		{"internal", CreateTopic{Name: ConsumerOffsetsTopic, NumPartitions: 1, ReplicationFactor: 1}, kerr.InvalidRequest.Code, "", 0, 0},
		{"zero partitions", CreateTopic{Name: "new", NumPartitions: 0, ReplicationFactor: 1}, kerr.InvalidPartitions.Code, "", 0, 0},
		{"-2 partitions", CreateTopic{Name: "new", NumPartitions: -2, ReplicationFactor: 1}, kerr.InvalidPartitions.Code, "", 0, 0},
		{"zero rf", CreateTopic{Name: "new", NumPartitions: 1, ReplicationFactor: 0}, kerr.InvalidReplicationFactor.Code, "", 0, 0},
		{"-2 rf", CreateTopic{Name: "new", NumPartitions: 1, ReplicationFactor: -2}, kerr.InvalidReplicationFactor.Code, "", 0, 0},
		{"rf too big", CreateTopic{Name: "new", NumPartitions: 1, ReplicationFactor: 4}, kerr.InvalidReplicationFactor.Code,
			"Unable to replicate the partition 4 time(s): The target replication factor of 4 cannot be reached because only 3 broker(s) are registered or some brokers have all their log directories cordoned.", 0, 0},
		{"assignment", CreateTopic{Name: "new", NumPartitions: -1, ReplicationFactor: -1, Assignment: map[int32][]int32{0: {3, 1}, 1: {2, 3}}}, 0, "", 2, 2},
		{"assignment with partitions", CreateTopic{Name: "new", NumPartitions: 2, ReplicationFactor: -1, Assignment: map[int32][]int32{0: {1}}}, kerr.InvalidRequest.Code, "", 0, 0},
		{"assignment with rf", CreateTopic{Name: "new", NumPartitions: -1, ReplicationFactor: 1, Assignment: map[int32][]int32{0: {1}}}, kerr.InvalidRequest.Code, "", 0, 0},
		{"assignment unknown broker", CreateTopic{Name: "new", NumPartitions: -1, ReplicationFactor: -1, Assignment: map[int32][]int32{0: {1, 9}}}, kerr.InvalidReplicaAssignment.Code, "9", 0, 0},
		{"assignment duplicate", CreateTopic{Name: "new", NumPartitions: -1, ReplicationFactor: -1, Assignment: map[int32][]int32{0: {1, 1}}}, kerr.InvalidReplicaAssignment.Code, "", 0, 0},
		{"assignment ragged", CreateTopic{Name: "new", NumPartitions: -1, ReplicationFactor: -1, Assignment: map[int32][]int32{0: {1, 2}, 1: {1}}}, kerr.InvalidReplicaAssignment.Code, "", 0, 0},
		{"assignment gap", CreateTopic{Name: "new", NumPartitions: -1, ReplicationFactor: -1, Assignment: map[int32][]int32{0: {1}, 2: {1}}}, kerr.InvalidReplicaAssignment.Code, "", 0, 0},
		{"assignment empty replicas", CreateTopic{Name: "new", NumPartitions: -1, ReplicationFactor: -1, Assignment: map[int32][]int32{0: {}}}, kerr.InvalidReplicaAssignment.Code, "", 0, 0},
		{"bad config", CreateTopic{Name: "new", NumPartitions: 1, ReplicationFactor: 1, Configs: map[string]string{"bad": "x"}}, kerr.InvalidConfig.Code, "bad config", 0, 0},
		{"good config", CreateTopic{Name: "new", NumPartitions: 1, ReplicationFactor: 1, Configs: map[string]string{"retention.ms": "1000"}}, 0, "", 1, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newTestController(t, 3, func(o *Options) {
				o.ValidateTopicConfig = badConfig
				o.DefaultPartitions = 2
			})
			for _, name := range []string{"exists", "foo.bar", "a_b.c"} {
				if r := c.CreateTopics([]CreateTopic{{Name: name, NumPartitions: 1, ReplicationFactor: 1}}, false); r[0].ErrorCode != 0 {
					t.Fatalf("setup %s: %+v", name, r[0])
				}
			}
			before := c.Image()
			for _, validateOnly := range []bool{true, false} {
				res := c.CreateTopics([]CreateTopic{tt.req}, validateOnly)
				if len(res) != 1 {
					t.Fatalf("got %d results", len(res))
				}
				r := res[0]
				if r.ErrorCode != tt.code || !strings.Contains(r.ErrorMessage, tt.msgPart) {
					t.Fatalf("validateOnly=%v: got code %d %q, want %d containing %q", validateOnly, r.ErrorCode, r.ErrorMessage, tt.code, tt.msgPart)
				}
				if r.Name != tt.req.Name {
					t.Errorf("name %q", r.Name)
				}
				if tt.code != 0 {
					if r.NumPartitions != -1 || r.ReplicationFactor != -1 {
						t.Errorf("error result has partitions %d rf %d", r.NumPartitions, r.ReplicationFactor)
					}
					if c.Image() != before {
						t.Errorf("failed create changed the image")
					}
					continue
				}
				if r.NumPartitions != tt.parts || r.ReplicationFactor != tt.rf || r.ID.IsZero() {
					t.Fatalf("got %+v", r)
				}
				if validateOnly {
					if c.Image() != before {
						t.Fatalf("validateOnly changed the image")
					}
					continue
				}
				top := c.Image().Topics[tt.req.Name]
				if top == nil || top.ID != r.ID || c.Image().TopicsByID[r.ID] != top {
					t.Fatalf("topic not in image: %+v", top)
				}
				if len(top.Partitions) != int(tt.parts) {
					t.Fatalf("partitions %d", len(top.Partitions))
				}
				for i, p := range top.Partitions {
					if p.Partition != int32(i) || len(p.Replicas) != int(tt.rf) || p.Leader != p.Replicas[0] || p.LeaderEpoch != 0 || len(p.ISR) != len(p.Replicas) {
						t.Errorf("partition %+v", p)
					}
					if tt.req.Assignment != nil && !equalInt32s(p.Replicas, tt.req.Assignment[int32(i)]) {
						t.Errorf("partition %d replicas %v, want %v", i, p.Replicas, tt.req.Assignment[int32(i)])
					}
				}
				for k, v := range tt.req.Configs {
					if top.Configs[k] != v {
						t.Errorf("config %s = %q", k, top.Configs[k])
					}
				}
			}
		})
	}
}

func equalInt32s(a, b []int32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestCreateTopicsSameRequest(t *testing.T) {
	c := newTestController(t, 1)
	res := c.CreateTopics([]CreateTopic{
		{Name: "dup", NumPartitions: 1, ReplicationFactor: 1},
		{Name: "a.b", NumPartitions: 1, ReplicationFactor: 1},
		{Name: "dup", NumPartitions: 1, ReplicationFactor: 1},
		{Name: "a_b", NumPartitions: 1, ReplicationFactor: 1},
		{Name: "ok", NumPartitions: 2, ReplicationFactor: 1},
	}, false)
	want := []int16{kerr.InvalidRequest.Code, 0, kerr.InvalidRequest.Code, kerr.InvalidTopicException.Code, 0}
	for i, r := range res {
		if r.ErrorCode != want[i] {
			t.Errorf("%d %s: code %d (%s), want %d", i, r.Name, r.ErrorCode, r.ErrorMessage, want[i])
		}
	}
	img := c.Image()
	if len(img.Topics) != 2 || img.Topics["a.b"] == nil || img.Topics["ok"] == nil {
		t.Fatalf("topics %v", img.Topics)
	}
	// One broker registration + one Append for both topics: 1 + (1+1) + (1+2) records.
	if img.Offset != 5 {
		t.Errorf("offset %d", img.Offset)
	}
}

func TestPlacementSpreadsLeaders(t *testing.T) {
	got := placeReplicas([]int32{1, 2, 3}, func(int32) string { return "" }, 0, 6, 2, 1)
	want := [][]int32{{2, 3}, {3, 1}, {1, 2}, {2, 3}, {3, 1}, {1, 2}}
	for i := range want {
		if !equalInt32s(got[i], want[i]) {
			t.Fatalf("placement %v, want %v", got, want)
		}
	}
}

func TestRackAwarePlacement(t *testing.T) {
	c := newTestController(t, 0)
	for _, b := range []Broker{{ID: 1, Rack: ptr("a")}, {ID: 2, Rack: ptr("a")}, {ID: 3, Rack: ptr("b")}, {ID: 4, Rack: ptr("b")}, {ID: 5, Rack: ptr("c")}, {ID: 6, Rack: ptr("c")}} {
		b.Host, b.Port = "h", 1
		if err := c.RegisterBroker(b); err != nil {
			t.Fatal(err)
		}
	}
	if got := rackAlternated(c.Image(), c.Image().UnfencedBrokers()); !equalInt32s(got, []int32{1, 3, 5, 2, 4, 6}) {
		t.Fatalf("order %v", got)
	}
	r := c.CreateTopics([]CreateTopic{{Name: "t", NumPartitions: 12, ReplicationFactor: 3}}, false)[0]
	if r.ErrorCode != 0 {
		t.Fatalf("%+v", r)
	}
	img := c.Image()
	leaders := map[int32]int{}
	for _, p := range img.Topics["t"].Partitions {
		racks := map[string]bool{}
		for _, id := range p.Replicas {
			racks[*img.Brokers[id].Rack] = true
		}
		if len(racks) != 3 {
			t.Errorf("partition %d replicas %v span racks %v", p.Partition, p.Replicas, racks)
		}
		leaders[p.Leader]++
	}
	for id, n := range leaders {
		if n != 2 {
			t.Errorf("broker %d leads %d partitions, want 2", id, n)
		}
	}
}

// TestRackAwarePlacementUnevenRacks: racks of uneven size (a: 1, 3; b:
// 2). Every partition of replication factor 2 spans both racks, as with
// Kafka's rack-striped placement (walking the rack-alternated list 1, 2,
// 3 round-robin alone would give partition [3 1] in rack a only), and
// leaders still rotate over the three brokers.
func TestRackAwarePlacementUnevenRacks(t *testing.T) {
	c := newTestController(t, 0)
	for _, b := range []Broker{{ID: 1, Rack: ptr("a")}, {ID: 2, Rack: ptr("b")}, {ID: 3, Rack: ptr("a")}} {
		b.Host, b.Port = "h", 1
		if err := c.RegisterBroker(b); err != nil {
			t.Fatal(err)
		}
	}
	r := c.CreateTopics([]CreateTopic{{Name: "t", NumPartitions: 6, ReplicationFactor: 2}}, false)[0]
	if r.ErrorCode != 0 {
		t.Fatalf("%+v", r)
	}
	img := c.Image()
	leaders := map[int32]int{}
	for _, p := range img.Topics["t"].Partitions {
		if len(p.Replicas) != 2 || *img.Brokers[p.Replicas[0]].Rack == *img.Brokers[p.Replicas[1]].Rack {
			t.Errorf("partition %d replicas %v in one rack", p.Partition, p.Replicas)
		}
		leaders[p.Leader]++
	}
	if len(leaders) != 3 {
		t.Errorf("leaders %v, want all three brokers", leaders)
	}
}

func TestCreateTopicsFencedBroker(t *testing.T) {
	c := newTestController(t, 3)
	if err := c.FenceBroker(2, true); err != nil {
		t.Fatal(err)
	}
	// As Kafka's StripedReplicaPlacer: the replication factor counts
	// every registered broker, fenced ones too, which get replicas (last,
	// outside the ISR) only when the unfenced ones are too few.
	r := c.CreateTopics([]CreateTopic{{Name: "t3", NumPartitions: 2, ReplicationFactor: 3}}, false)[0]
	if r.ErrorCode != 0 {
		t.Fatalf("%+v", r)
	}
	for _, p := range c.Image().Topics["t3"].Partitions {
		if len(p.Replicas) != 3 || p.Replicas[2] != 2 || p.Leader == 2 || len(p.ISR) != 2 || slices.Contains(p.ISR, 2) {
			t.Fatalf("RF=3 with broker 2 fenced: %+v", p)
		}
	}
	r = c.CreateTopics([]CreateTopic{{Name: "t4", NumPartitions: 1, ReplicationFactor: 4}}, false)[0]
	if r.ErrorCode != kerr.InvalidReplicationFactor.Code || !strings.Contains(r.ErrorMessage, "only 3 broker(s)") {
		t.Fatalf("%+v", r)
	}
	r = c.CreateTopics([]CreateTopic{{Name: "t", NumPartitions: 4, ReplicationFactor: 2}}, false)[0]
	if r.ErrorCode != 0 {
		t.Fatalf("%+v", r)
	}
	for _, p := range c.Image().Topics["t"].Partitions {
		for _, id := range p.Replicas {
			if id == 2 {
				t.Fatalf("fenced broker got a replica: %+v", p)
			}
		}
	}
	// A manual assignment may name a fenced broker; it stays out of the ISR.
	r = c.CreateTopics([]CreateTopic{{Name: "m", NumPartitions: -1, ReplicationFactor: -1, Assignment: map[int32][]int32{0: {2, 1}}}}, false)[0]
	if r.ErrorCode != 0 {
		t.Fatalf("%+v", r)
	}
	p := c.Image().Topics["m"].Partitions[0]
	if p.Leader != 1 || !equalInt32s(p.ISR, []int32{1}) {
		t.Fatalf("%+v", p)
	}
	r = c.CreateTopics([]CreateTopic{{Name: "f", NumPartitions: -1, ReplicationFactor: -1, Assignment: map[int32][]int32{0: {2}}}}, false)[0]
	if r.ErrorCode != kerr.InvalidReplicaAssignment.Code {
		t.Fatalf("%+v", r)
	}
	for _, id := range []int32{1, 3} {
		if err := c.FenceBroker(id, true); err != nil {
			t.Fatal(err)
		}
	}
	r = c.CreateTopics([]CreateTopic{{Name: "none", NumPartitions: 1, ReplicationFactor: 1}}, false)[0]
	if r.ErrorCode != kerr.InvalidReplicationFactor.Code || r.ErrorMessage != "All brokers are currently fenced, or have all their log directories cordoned." {
		t.Fatalf("every broker fenced: %+v", r)
	}
}

func TestCreateInternalTopic(t *testing.T) {
	c := newTestController(t, 1)
	id, err := c.CreateInternalTopic(ConsumerOffsetsTopic, 50, 1, map[string]string{"cleanup.policy": "compact"})
	if err != nil {
		t.Fatal(err)
	}
	top := c.Image().Topics[ConsumerOffsetsTopic]
	if top.ID != id || len(top.Partitions) != 50 || top.Configs["cleanup.policy"] != "compact" {
		t.Fatalf("%+v", top)
	}
	again, err := c.CreateInternalTopic(ConsumerOffsetsTopic, 50, 1, nil)
	if err != nil || again != id {
		t.Fatalf("second create: %v %v", again, err)
	}
	_, err = c.CreateInternalTopic(TransactionStateTopic, 50, 3, nil)
	if !errors.Is(err, kerr.InvalidReplicationFactor) {
		t.Fatalf("err %v", err)
	}
}

func TestDeleteTopics(t *testing.T) {
	c := newTestController(t, 1)
	res := c.CreateTopics([]CreateTopic{{Name: "a", NumPartitions: 1, ReplicationFactor: 1}, {Name: "b", NumPartitions: 1, ReplicationFactor: 1}, {Name: "c", NumPartitions: 1, ReplicationFactor: 1}}, false)
	idB := res[1].ID
	out := c.DeleteTopics([]string{"a", "nope", "d", "d"}, []Uuid{idB, {1}, {}})
	want := []struct {
		name string
		code int16
	}{
		{"a", 0}, {"nope", kerr.UnknownTopicOrPartition.Code}, {"d", kerr.InvalidRequest.Code}, {"d", kerr.InvalidRequest.Code},
		{"b", 0}, {"", kerr.UnknownTopicID.Code}, {"", kerr.InvalidRequest.Code},
	}
	if len(out) != len(want) {
		t.Fatalf("%+v", out)
	}
	for i, w := range want {
		if out[i].Name != w.name || out[i].ErrorCode != w.code {
			t.Errorf("%d: %+v, want %+v", i, out[i], w)
		}
	}
	if out[0].ID != res[0].ID {
		t.Errorf("delete by name did not report id")
	}
	img := c.Image()
	if len(img.Topics) != 1 || img.Topics["c"] == nil || len(img.TopicsByID) != 1 {
		t.Fatalf("topics %v", img.Topics)
	}
	// Same topic by name and id at once is removed once.
	idC := res[2].ID
	out = c.DeleteTopics([]string{"c"}, []Uuid{idC})
	if out[0].ErrorCode != 0 || out[1].ErrorCode != 0 || len(c.Image().Topics) != 0 {
		t.Fatalf("%+v", out)
	}
	// A recreated topic gets a new id.
	r := c.CreateTopics([]CreateTopic{{Name: "a", NumPartitions: 1, ReplicationFactor: 1}}, false)[0]
	if r.ErrorCode != 0 || r.ID == res[0].ID {
		t.Fatalf("%+v", r)
	}
}

func TestCreatePartitions(t *testing.T) {
	c := newTestController(t, 3)
	c.CreateTopics([]CreateTopic{{Name: "t", NumPartitions: 2, ReplicationFactor: 2}}, false)
	tests := []struct {
		name       string
		topic      string
		count      int32
		assignment [][]int32
		code       int16
	}{
		{"unknown", "nope", 3, nil, kerr.UnknownTopicOrPartition.Code},
		{"fewer", "t", 1, nil, kerr.InvalidPartitions.Code},
		{"same", "t", 2, nil, kerr.InvalidPartitions.Code},
		{"assignment count", "t", 4, [][]int32{{1, 2}}, kerr.InvalidReplicaAssignment.Code},
		{"assignment rf", "t", 3, [][]int32{{1}}, kerr.InvalidReplicaAssignment.Code},
		{"assignment unknown broker", "t", 3, [][]int32{{1, 7}}, kerr.InvalidReplicaAssignment.Code},
		{"assignment duplicate", "t", 3, [][]int32{{1, 1}}, kerr.InvalidReplicaAssignment.Code},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if code, msg := c.CreatePartitions(tt.topic, tt.count, tt.assignment, false); code != tt.code {
				t.Fatalf("code %d %q, want %d", code, msg, tt.code)
			}
		})
	}
	before := c.Image()
	if code, _ := c.CreatePartitions("t", 4, nil, true); code != 0 || c.Image() != before {
		t.Fatalf("validateOnly: code %d", code)
	}
	if code, msg := c.CreatePartitions("t", 4, [][]int32{{3, 1}, {2, 3}}, false); code != 0 {
		t.Fatalf("code %d %s", code, msg)
	}
	if code, msg := c.CreatePartitions("t", 6, nil, false); code != 0 {
		t.Fatalf("code %d %s", code, msg)
	}
	ps := c.Image().Topics["t"].Partitions
	if len(ps) != 6 || !equalInt32s(ps[2].Replicas, []int32{3, 1}) || !equalInt32s(ps[3].Replicas, []int32{2, 3}) || len(ps[5].Replicas) != 2 {
		t.Fatalf("%+v", ps)
	}
	// The old image is untouched.
	if len(before.Topics["t"].Partitions) != 2 {
		t.Fatalf("old image mutated")
	}
}

func TestApplyConfigOps(t *testing.T) {
	tests := []struct {
		name     string
		current  map[string]string
		ops      []ConfigOp
		want     map[string]string
		code     int16
		defaults func(string) (string, bool)
	}{
		{"append to default", nil, []ConfigOp{{Name: "cleanup.policy", Value: ptr("compact"), Op: OpAppend}}, map[string]string{"cleanup.policy": "delete,compact"}, 0,
			func(n string) (string, bool) { return "delete", n == "cleanup.policy" }},
		{"subtract from default", nil, []ConfigOp{{Name: "p", Value: ptr("a"), Op: OpSubtract}}, map[string]string{"p": "b"}, 0,
			func(string) (string, bool) { return "a,b", true }},
		{"override beats default", map[string]string{"p": "x"}, []ConfigOp{{Name: "p", Value: ptr("y"), Op: OpAppend}}, map[string]string{"p": "x,y"}, 0,
			func(string) (string, bool) { return "a,b", true }},
		{"set", nil, []ConfigOp{{Name: "a", Value: ptr("1")}}, map[string]string{"a": "1"}, 0, nil},
		{"set nil", nil, []ConfigOp{{Name: "a"}}, nil, kerr.InvalidRequest.Code, nil},
		{"delete", map[string]string{"a": "1", "b": "2"}, []ConfigOp{{Name: "a", Op: OpDelete}}, map[string]string{"b": "2"}, 0, nil},
		{"delete missing", nil, []ConfigOp{{Name: "a", Op: OpDelete}}, map[string]string{}, 0, nil},
		{"append", map[string]string{"p": "delete"}, []ConfigOp{{Name: "p", Value: ptr("compact,delete"), Op: OpAppend}}, map[string]string{"p": "delete,compact"}, 0, nil},
		{"append empty", nil, []ConfigOp{{Name: "p", Value: ptr("x"), Op: OpAppend}}, map[string]string{"p": "x"}, 0, nil},
		{"subtract", map[string]string{"p": "a,b,c"}, []ConfigOp{{Name: "p", Value: ptr("b,z"), Op: OpSubtract}}, map[string]string{"p": "a,c"}, 0, nil},
		{"subtract all", map[string]string{"p": "a"}, []ConfigOp{{Name: "p", Value: ptr("a"), Op: OpSubtract}}, map[string]string{}, 0, nil},
		{"duplicate", nil, []ConfigOp{{Name: "a", Value: ptr("1")}, {Name: "a", Op: OpDelete}}, nil, kerr.InvalidRequest.Code, nil},
		{"bad op", nil, []ConfigOp{{Name: "a", Value: ptr("1"), Op: 9}}, nil, kerr.InvalidRequest.Code, nil},
		{"empty name", nil, []ConfigOp{{Name: "", Value: ptr("1")}}, nil, kerr.InvalidRequest.Code, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, code, msg := applyConfigOps(tt.current, tt.ops, tt.defaults)
			if code != tt.code {
				t.Fatalf("code %d %q", code, msg)
			}
			if code == 0 && !maps.Equal(got, tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestAlterConfigs(t *testing.T) {
	validate := func(m map[string]string) (int16, string) {
		if m["retention.ms"] == "-5" {
			return kerr.InvalidConfig.Code, "retention.ms must be >= -1"
		}
		return 0, ""
	}
	c := newTestController(t, 1, func(o *Options) { o.ValidateTopicConfig = validate })
	c.CreateTopics([]CreateTopic{{Name: "t", NumPartitions: 1, ReplicationFactor: 1, Configs: map[string]string{"a": "1"}}}, false)
	if code, _ := c.AlterTopicConfigs("nope", []ConfigOp{{Name: "a", Value: ptr("1")}}, false); code != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("code %d", code)
	}
	if code, _ := c.AlterTopicConfigs("t", []ConfigOp{{Name: "retention.ms", Value: ptr("-5")}}, false); code != kerr.InvalidConfig.Code {
		t.Fatalf("code %d", code)
	}
	if code, _ := c.AlterTopicConfigs("t", []ConfigOp{{Name: "retention.ms", Value: ptr("10")}}, true); code != 0 {
		t.Fatalf("code %d", code)
	}
	if got := c.Image().Topics["t"].Configs; !maps.Equal(got, map[string]string{"a": "1"}) {
		t.Fatalf("validateOnly changed configs: %v", got)
	}
	old := c.Image()
	if code, _ := c.AlterTopicConfigs("t", []ConfigOp{{Name: "retention.ms", Value: ptr("10")}, {Name: "a", Op: OpDelete}}, false); code != 0 {
		t.Fatalf("code %d", code)
	}
	if got := c.Image().Topics["t"].Configs; !maps.Equal(got, map[string]string{"retention.ms": "10"}) {
		t.Fatalf("configs %v", got)
	}
	if !maps.Equal(old.Topics["t"].Configs, map[string]string{"a": "1"}) {
		t.Fatalf("old image mutated: %v", old.Topics["t"].Configs)
	}
	if code, _ := c.SetTopicConfigs("t", map[string]string{"x": "y"}, false); code != 0 {
		t.Fatalf("code %d", code)
	}
	if got := c.Image().Topics["t"].Configs; !maps.Equal(got, map[string]string{"x": "y"}) {
		t.Fatalf("configs %v", got)
	}
	// Unchanged configs append nothing.
	off := c.Image().Offset
	if code, _ := c.SetTopicConfigs("t", map[string]string{"x": "y"}, false); code != 0 || c.Image().Offset != off {
		t.Fatalf("code %d offset %d→%d", code, off, c.Image().Offset)
	}

	// Broker configs.
	if code, _ := c.AlterBrokerConfigs("x", []ConfigOp{{Name: "a", Value: ptr("1")}}, false, nil); code != kerr.InvalidRequest.Code {
		t.Fatalf("code %d", code)
	}
	if code, _ := c.AlterBrokerConfigs("", []ConfigOp{{Name: "log.retention.ms", Value: ptr("1")}}, false, nil); code != 0 {
		t.Fatalf("code %d", code)
	}
	if code, _ := c.AlterBrokerConfigs("1", []ConfigOp{{Name: "b", Value: ptr("2")}}, false, func(map[string]string) (int16, string) { return kerr.InvalidConfig.Code, "no" }); code != kerr.InvalidConfig.Code {
		t.Fatalf("code %d", code)
	}
	if code, _ := c.AlterBrokerConfigs("1", []ConfigOp{{Name: "b", Value: ptr("2")}}, false, nil); code != 0 {
		t.Fatalf("code %d", code)
	}
	bc := c.Image().BrokerConfigs
	if bc[""]["log.retention.ms"] != "1" || bc["1"]["b"] != "2" {
		t.Fatalf("%v", bc)
	}
	if code, _ := c.AlterBrokerConfigs("1", []ConfigOp{{Name: "b", Op: OpDelete}}, false, nil); code != 0 {
		t.Fatalf("code %d", code)
	}
	if _, ok := c.Image().BrokerConfigs["1"]; ok {
		t.Fatalf("empty broker config map kept: %v", c.Image().BrokerConfigs)
	}
}
