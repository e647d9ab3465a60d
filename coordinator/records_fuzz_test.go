package coordinator

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/wire"
)

// FuzzLoadRecords feeds arbitrary bytes to the partition loader, as a
// corrupted __consumer_offsets segment would: it must return an error or
// a state, never panic.
func FuzzLoadRecords(f *testing.F) {
	now := time.UnixMilli(1_700_000_000_000)
	g := NewGroup(&GroupConfig{}, "g", now)
	g.protocolType, g.protocol, g.generation, g.leader = "consumer", "range", 3, "m"
	g.members = []*member{{id: "m", protocols: []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte("x")}}, assignment: []byte("a")}}
	seed, err := encodeBatch(now, []wire.Record{
		{Key: offsetCommitKey("g", topicPartition{"t", 1}), Value: offsetCommitValue(offsetEntry{offset: 5, commitTime: now})},
		{Key: groupMetadataKey("g"), Value: g.metadataValue().AppendTo(nil)},
		{Key: offsetCommitKey("g", topicPartition{"t", 1})},
	})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(seed)
	f.Add(seed[:len(seed)-3])
	f.Fuzz(func(t *testing.T, data []byte) {
		ls := newLoadState()
		_, _ = ls.applyBatches(data, 0)
		for id, v := range ls.groups {
			restoreGroup(&GroupConfig{}, id, v, now)
		}
	})
}

// TestRecordRoundTrip checks that what the coordinator writes loads back.
func TestRecordRoundTrip(t *testing.T) {
	now := time.UnixMilli(1_700_000_000_000)
	cfg := &GroupConfig{}
	g := NewGroup(cfg, "g", now)
	inst := "i"
	g.protocolType, g.protocol, g.generation, g.leader = "consumer", "range", 3, "m"
	g.members = []*member{{id: "m", instanceID: &inst, clientID: "c", clientHost: "/h", sessionTimeout: 10 * time.Second,
		rebalanceTimeout: 20 * time.Second, protocols: []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte("x")}}, assignment: []byte("a")}}
	batch, err := encodeBatch(now, []wire.Record{
		{Key: offsetCommitKey("g", topicPartition{"t", 1}), Value: offsetCommitValue(offsetEntry{offset: 5, leaderEpoch: 2, metadata: "md", commitTime: now})},
		{Key: offsetCommitKey("g", topicPartition{"t", 2}), Value: offsetCommitValue(offsetEntry{offset: 6, commitTime: now})},
		{Key: offsetCommitKey("g", topicPartition{"t", 2})},
		{Key: groupMetadataKey("g"), Value: g.metadataValue().AppendTo(nil)},
	})
	if err != nil {
		t.Fatal(err)
	}
	ls := newLoadState()
	next, err := ls.applyBatches(batch, 0)
	if err != nil || next != 4 {
		t.Fatalf("applyBatches: next %d err %v", next, err)
	}
	offs := ls.offsets["g"]
	if len(offs) != 1 || offs[topicPartition{"t", 1}] != (offsetEntry{offset: 5, leaderEpoch: 2, metadata: "md", commitTime: now}) {
		t.Fatalf("offsets %+v", offs)
	}
	r := restoreGroup(cfg, "g", ls.groups["g"], now)
	m := r.members[0]
	if r.state != Stable || r.generation != 3 || r.leader != "m" || r.static["i"] != "m" || m.clientHost != "/h" ||
		m.sessionTimeout != 10*time.Second || m.rebalanceTimeout != 20*time.Second || string(m.assignment) != "a" || string(m.metadataFor("range")) != "x" {
		t.Fatalf("restored %+v member %+v", r, m)
	}
}
